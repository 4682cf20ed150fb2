package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Roles, ACLs and effective permissions: pve-access-control
// src/PVE/API2/Role.pm, ACL.pm and AccessControl.pm (permissions).

// roleNames lists every role, built-in and custom, sorted.
func (s *Server) roleNames() []string {
	names := setOf(slices.Collect(maps.Keys(s.roleTable))...)
	for r := range s.st.Access.Roles {
		names[r] = true
	}
	return slices.Sorted(maps.Keys(names))
}

func (s *Server) roleExists(r string) bool { return s.rolePrivs(r) != nil }

func (s *Server) listRoles(q *request) (any, error) {
	out := []map[string]any{}
	for _, r := range s.roleNames() {
		privs := strings.Join(slices.Sorted(maps.Keys(s.rolePrivs(r))), ",")
		out = append(out, map[string]any{"roleid": r, "privs": privs, "special": b2i(acl.IsBuiltin(r))})
	}
	return out, nil
}

func (s *Server) getRole(q *request) (any, error) {
	privs := s.rolePrivs(q.vars["roleid"])
	if privs == nil {
		return nil, fail(http.StatusInternalServerError, "role '%s' does not exist", q.vars["roleid"])
	}
	out := map[string]any{}
	for p := range privs {
		out[p] = 1
	}
	return out, nil
}

// rolePrivList is add_role_privs: every privilege must exist.
func rolePrivList(list string) ([]string, error) {
	privs := schema.SplitList(list)
	for _, p := range privs {
		if !acl.ValidPrivilege(p) {
			return nil, fmt.Errorf("invalid privilege '%s'", p)
		}
	}
	return privs, nil
}

var pveNamespace = lazyre.New(`(?i)^PVE`)

func (s *Server) createRole(q *request) (any, error) {
	id := q.get("roleid")
	if pveNamespace.MatchString(id) {
		return nil, paramErr1("roleid", "cannot use role ID starting with the (case-insensitive) 'PVE' namespace")
	}
	if s.roleExists(id) {
		return nil, fail(http.StatusInternalServerError, "create role failed: role '%s' already exists", id)
	}
	privs, err := rolePrivList(q.get("privs"))
	if err != nil {
		return nil, fail(http.StatusInternalServerError, "create role failed: %v", err)
	}
	s.storeRole(id, privs)
	return nil, nil
}

// storeRole keeps a role's privileges as user.cfg does: sorted, each
// once, comma-separated.
func (s *Server) storeRole(id string, privs []string) {
	slices.Sort(privs)
	s.st.Access.Roles[id] = strings.Join(slices.Compact(privs), ",")
}

func (s *Server) updateRole(q *request) (any, error) {
	id := q.vars["roleid"]
	if acl.IsBuiltin(id) {
		return nil, fail(http.StatusInternalServerError, "auto-generated role '%s' cannot be modified", id)
	}
	old, ok := s.st.Access.Roles[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "update role failed: role '%s' does not exist", id)
	}
	privs, err := rolePrivList(q.get("privs"))
	if err != nil {
		return nil, fail(http.StatusInternalServerError, "update role failed: %v", err)
	}
	if q.bool("append") {
		privs = append(privs, schema.SplitList(old)...)
	}
	s.storeRole(id, privs)
	return nil, nil
}

func (s *Server) deleteRole(q *request) (any, error) {
	id := q.vars["roleid"]
	if acl.IsBuiltin(id) {
		return nil, fail(http.StatusInternalServerError, "auto-generated role '%s' cannot be deleted", id)
	}
	if _, ok := s.st.Access.Roles[id]; !ok {
		return nil, fail(http.StatusInternalServerError, "delete role failed: role '%s' does not exist", id)
	}
	// delete_role leaves the ACL lines naming it in user.cfg, but
	// parse_user_config drops an ACL entry whose role does not exist
	// ("ignore invalid acl role"): they are gone from every read, and the
	// next write of user.cfg (a new role of that name too) drops them.
	delete(s.st.Access.Roles, id)
	s.dropACL(func(e aclEntry) bool { return e.Role == id })
	return nil, nil
}

// typeRankACL orders an ACL node's entries as iterate_acl_tree lists them.
var typeRankACL = map[string]int{"user": 0, "group": 1, "token": 2}

// listACL lists the ACL entries on paths where the caller may change
// permissions (or all, with Sys.Audit on /access).
func (s *Server) listACL(q *request) (any, error) {
	entries := append([]aclEntry(nil), s.st.Access.ACL...)
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Type != b.Type {
			return typeRankACL[a.Type] < typeRankACL[b.Type]
		}
		if a.UGID != b.UGID {
			return a.UGID < b.UGID
		}
		return a.Role < b.Role
	})
	audit := s.can(q.user, "/access", "Sys.Audit")
	out := []map[string]any{}
	for _, e := range entries {
		if !audit && s.checkPermModify(q.user, e.Path) != nil {
			continue
		}
		out = append(out, map[string]any{"path": e.Path, "type": e.Type, "ugid": e.UGID, "roleid": e.Role,
			"propagate": b2i(e.Propagate)})
	}
	return out, nil
}

// updateACL is ACL.pm update_acl. Without Permissions.Modify on the path
// a caller (one that passed perm-modify with VM.Allocate or the like) may
// only hand out or take back roles whose privileges it holds there itself,
// propagated if the new entry propagates.
func (s *Server) updateACL(q *request) (any, error) {
	// update_acl tests them for truth: an empty list counts as none.
	if !perlTrue(q.get("users")) && !perlTrue(q.get("groups")) && !perlTrue(q.get("tokens")) {
		const msg = "either 'users', 'groups' or 'tokens' is required."
		return nil, paramErr(map[string]string{"users": msg, "groups": msg, "tokens": msg})
	}
	path, ok := acl.NormalizePath(q.get("path"))
	del := q.bool("delete")
	if !ok || !del && !acl.CheckPath(path) {
		return nil, paramErr1("path", "invalid ACL path '%s'", q.get("path"))
	}
	failed := func(format string, args ...any) error {
		return fail(http.StatusInternalServerError, "ACL update failed: "+format, args...)
	}
	mine := s.permissions(q.user, path)
	_, modify := mine["Permissions.Modify"]
	propagate := !q.has("propagate") || q.bool("propagate")
	verb := "add"
	if del {
		verb = "remove"
	}
	type change struct{ typ, id, role string }
	var changes []change
	for _, role := range schema.SplitList(q.get("roles")) {
		privs := s.rolePrivs(role)
		if privs == nil {
			return nil, failed("role '%s' does not exist", role)
		}
		if !modify {
			// raise_param_exc inside lock_user_config: the 400 becomes the
			// text of a 500.
			if msg := roleHandOutRefusal(role, privs, mine, propagate, del, verb); msg != "" {
				return nil, failed("400 Parameter verification failed.\nrole: %s", msg)
			}
		}
		for _, g := range schema.SplitList(q.get("groups")) {
			if _, ok := s.st.Access.Groups[g]; !ok {
				return nil, failed("group '%s' does not exist", g)
			}
			changes = append(changes, change{"group", g, role})
		}
		for _, u := range schema.SplitList(q.get("users")) {
			if _, ok := s.st.Access.Users[u]; !ok {
				return nil, failed("user '%s' does not exist", u)
			}
			changes = append(changes, change{"user", u, role})
		}
		for _, t := range schema.SplitList(q.get("tokens")) {
			uid, name, _ := splitTokenID(t)
			u, ok := s.st.Access.Users[uid]
			if !ok {
				return nil, failed("no such user ('%s')", uid)
			}
			if u.Tokens[name] == nil {
				return nil, failed("no such token '%s' for user '%s'", name, uid)
			}
			changes = append(changes, change{"token", t, role})
		}
	}
	for _, c := range changes {
		s.dropACL(func(e aclEntry) bool { return e.Path == path && e.Type == c.typ && e.UGID == c.id && e.Role == c.role })
		// AccessControl.pm write_user_config never writes an entry of the
		// user root@pam ("it is always 'Administrator'"): accepted, not kept.
		if !del && !(c.typ == "user" && c.id == superuser) {
			s.st.Access.ACL = append(s.st.Access.ACL, aclEntry{Path: path, Type: c.typ, UGID: c.id, Role: c.role, Propagate: propagate})
		}
	}
	return nil, nil
}

// roleHandOutRefusal is why a caller without Permissions.Modify, holding
// mine on the path, may not add or remove (verb) role with privs there
// ("" when it may): it must hold every privilege, propagated when the
// new entry propagates, and never hand out NoAccess (ACL.pm update_acl).
func roleHandOutRefusal(role string, privs, mine map[string]bool, propagate, del bool, verb string) string {
	for _, p := range slices.Sorted(maps.Keys(privs)) {
		prop, held := mine[p]
		if !held {
			return fmt.Sprintf("Cannot %s role '%s' - requires 'Permissions.Modify' or superset of privileges.", verb, role)
		}
		if propagate && !prop && !del {
			return fmt.Sprintf("Cannot %s role '%s' with propagation - requires 'Permissions.Modify' or propagated superset of privileges.", verb, role)
		}
	}
	if role == acl.NoAccess {
		return fmt.Sprintf("Cannot %s role '%s' - requires 'Permissions.Modify'", verb, role)
	}
	return ""
}

// getPermissions is AccessControl.pm's permissions method: the caller's
// own (or an owned token's) effective privileges, another user's with
// Sys.Audit on /access; for one path, or for every path that matters.
func (s *Server) getPermissions(q *request) (any, error) {
	userid := q.get("userid")
	if userid == "" {
		userid = q.user
	}
	owner, _, isToken := splitTokenID(userid)
	if userid != q.user && !(isToken && owner == q.user) {
		if err := s.check(q.user, "/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	flags := func(privs map[string]bool) map[string]any {
		out := map[string]any{}
		for p, prop := range privs {
			out[p] = b2i(prop)
		}
		return out
	}
	if path := q.get("path"); path != "" {
		norm, _ := acl.NormalizePath(path)
		return map[string]any{path: flags(s.permissions(userid, norm))}, nil
	}
	out := map[string]any{}
	for p, privs := range s.effectivePermissions(userid) {
		out[p] = flags(privs)
	}
	return out, nil
}

package pvesim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/acl"
)

// The permission model of pve-access-control: who holds which privilege
// on which ACL path. Requests run as their API token ("user@realm!name");
// root@pam itself would be the superuser, but the simulator authenticates
// tokens only, and a token is never root@pam (a non-privilege-separated
// token of root@pam holds root's privileges, yet PVE's root-only checks
// still refuse it).

// superuser is the one user every check lets through.
const superuser = "root@pam"

// tokenIDRe is AccessControl.pm's $token_full_regex.
// (user_regex and realm_regex of PVE/Auth/Plugin.pm; the token name is a
// realm_regex too).
var tokenIDRe = lazyre.New(`^(([^\s:/]+)@([A-Za-z][A-Za-z0-9._-]+))!([A-Za-z][A-Za-z0-9._-]+)$`)

// splitTokenID splits "user@realm!name" (split_tokenid); ok is false for
// anything else (a user id).
func splitTokenID(id string) (user, name string, ok bool) {
	m := tokenIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", "", false
	}
	return m[1], m[4], true
}

// permFail is raise_perm_exc: a 403 "Permission check failed (what)".
func permFail(what string) error {
	if what == "" {
		return fail(http.StatusForbidden, "Permission check failed")
	}
	return fail(http.StatusForbidden, "Permission check failed (%s)", what)
}

// rolePrivs is a role's privileges, built-in or custom; nil for a role
// that does not exist (an ACL naming a deleted role grants nothing).
func (s *Server) rolePrivs(role string) map[string]bool {
	if p, ok := s.roleTable[role]; ok {
		return p
	}
	list, ok := s.st.Access.Roles[role]
	if !ok {
		return nil
	}
	p := map[string]bool{}
	for _, x := range strings.Split(list, ",") {
		if x != "" {
			p[x] = true
		}
	}
	return p
}

// aclLevels are the paths roles() walks for path: "/", then every prefix.
func aclLevels(path string) []string {
	out := []string{"/"}
	if path == "/" {
		return out
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := range segs {
		out = append(out, "/"+strings.Join(segs[:i+1], "/"))
	}
	return out
}

// roles is AccessControl.pm's roles(): the roles id holds on path, each
// with its propagate flag, walking the ACL tree from the root. At each
// level a token's own entries win, then the user's, then its groups'; a
// deeper level replaces what a shallower one granted, and only propagated
// entries count above the path itself. NoAccess wins over everything.
// Pools are not considered here (permissions does that).
func (s *Server) roles(id, path string) map[string]bool {
	if uid, name, ok := splitTokenID(id); ok {
		u := s.st.Access.Users[uid]
		if u == nil || u.Tokens[name] == nil {
			return nil
		}
		if !u.Tokens[name].Privsep {
			return s.roles(uid, path)
		}
	}
	var groups map[string]bool
	if u := s.st.Access.Users[id]; u != nil {
		groups = setOf(u.Groups...)
	}
	roles := map[string]bool{}
	levels := aclLevels(path)
	for i, p := range levels {
		final := i == len(levels)-1
		pick := func(match func(e aclEntry) bool) map[string]bool {
			var got map[string]bool
			for _, e := range s.st.Access.ACL {
				if e.Path == p && match(e) && (final || e.Propagate) {
					if got == nil {
						got = map[string]bool{}
					}
					got[e.Role] = e.Propagate
				}
			}
			return got
		}
		if got := pick(func(e aclEntry) bool { return e.Type == "token" && e.UGID == id }); got != nil {
			roles = got
			continue
		}
		if got := pick(func(e aclEntry) bool { return e.Type == "user" && e.UGID == id }); got != nil {
			roles = got
			continue
		}
		if got := pick(func(e aclEntry) bool { return e.Type == "group" && groups[e.UGID] }); got != nil {
			roles = got
		}
	}
	if p, ok := roles[acl.NoAccess]; ok {
		return map[string]bool{acl.NoAccess: p}
	}
	return roles
}

// poolRoles are the roles id holds on the pools path is a member of: a
// pool's ACL reaches its VMs (/vms/N) and storages (/storage/ID),
// RPCEnvironment.pm compile_acl_path.
func (s *Server) poolRoles(id, path string) map[string]bool {
	var out map[string]bool
	add := func(pool string) {
		for r := range s.roles(id, "/pool/"+pool) {
			if out == nil {
				out = map[string]bool{}
			}
			out[r] = true
		}
	}
	if rest, ok := strings.CutPrefix(path, "/vms/"); ok {
		if vmid, err := strconv.Atoi(rest); err == nil {
			if p := s.st.vmPool(vmid); p != "" {
				add(p)
			}
		}
	} else if sid, ok := strings.CutPrefix(path, "/storage/"); ok {
		for _, p := range s.st.Pools {
			for _, x := range p.Storages {
				if x == sid {
					add(p.ID)
				}
			}
		}
	}
	return out
}

// permissions is RPCEnvironment.pm's permissions(): the privileges id
// holds on path, each with its propagate flag. root@pam holds every
// privilege; a token without privilege separation holds its user's; a
// privilege-separated one holds what its own ACLs and its user's have in
// common (for root@pam's tokens, its own ACLs alone). Pool ACLs add to a
// member's path, without propagation and never past NoAccess. Callers
// only read the result (root@pam's is shared).
func (s *Server) permissions(id, path string) map[string]bool {
	if id == superuser {
		return s.allPrivs
	}
	if path == "" {
		return map[string]bool{} // no ACL path (normalize_path failed)
	}
	uid, name, isToken := splitTokenID(id)
	var userPrivs map[string]bool
	if isToken {
		u := s.st.Access.Users[uid]
		if u == nil || u.Tokens[name] == nil {
			return map[string]bool{}
		}
		userPrivs = s.permissions(uid, path)
		if !u.Tokens[name].Privsep {
			return userPrivs
		}
	}
	roles := s.roles(id, path)
	if _, denied := roles[acl.NoAccess]; !denied {
		if pr := s.poolRoles(id, path); pr != nil {
			if pr[acl.NoAccess] {
				roles = map[string]bool{acl.NoAccess: false}
			} else {
				for r := range pr {
					if _, ok := roles[r]; !ok {
						roles[r] = false
					}
				}
			}
		}
	}
	privs := map[string]bool{}
	for r, prop := range roles {
		for p := range s.rolePrivs(r) {
			privs[p] = privs[p] || prop
		}
	}
	if isToken && uid != superuser {
		for p, prop := range privs {
			if up, ok := userPrivs[p]; ok {
				privs[p] = prop && up
			} else {
				delete(privs, p)
			}
		}
	}
	return privs
}

// can reports whether id holds every one of privs on path.
func (s *Server) can(id, path string, privs ...string) bool {
	perm := s.permissions(id, path)
	for _, p := range privs {
		if _, ok := perm[p]; !ok {
			return false
		}
	}
	return true
}

// canAny reports whether id holds one of privs on path.
func (s *Server) canAny(id, path string, privs ...string) bool {
	perm := s.permissions(id, path)
	for _, p := range privs {
		if _, ok := perm[p]; ok {
			return true
		}
	}
	return false
}

// check is RPCEnvironment.pm's check: the first missing privilege fails
// with "Permission check failed (/vms/100, VM.Audit)".
func (s *Server) check(id, path string, privs ...string) error {
	perm := s.permissions(id, path)
	for _, p := range privs {
		if _, ok := perm[p]; !ok {
			return permFail(path + ", " + p)
		}
	}
	return nil
}

// checkAny is check_any: one of privs is enough; the message lists them
// all, "a|b".
func (s *Server) checkAny(id, path string, privs ...string) error {
	if s.canAny(id, path, privs...) {
		return nil
	}
	return permFail(path + ", " + strings.Join(privs, "|"))
}

func (s *Server) checkFull(id, path string, anyOf bool, privs ...string) error {
	if anyOf {
		return s.checkAny(id, path, privs...)
	}
	return s.check(id, path, privs...)
}

// checkVMPerm is check_vm_perm: privileges on the guest's pool (when it
// names one) are enough, else they are checked on /vms/N.
func (s *Server) checkVMPerm(id string, vmid int, pool string, anyOf bool, privs ...string) error {
	if pool != "" && s.checkFull(id, "/pool/"+pool, anyOf, privs...) == nil {
		return nil
	}
	return s.checkFull(id, fmt.Sprintf("/vms/%d", vmid), anyOf, privs...)
}

// checkPermModify is check_perm_modify: Permissions.Modify on path, or the
// allocate privilege of the object the path names.
func (s *Server) checkPermModify(id, path string) error {
	if path == "" {
		return s.check(id, "/access", "Permissions.Modify")
	}
	privs := acl.PermModifyPrivs(path)
	return s.checkAny(id, path, privs...)
}

// checkPoolExist is check_pool_exist: a pool that does not exist is a
// permission failure, not a 500.
func (s *Server) checkPoolExist(pool string) error {
	if _, ok := s.st.Pools[pool]; ok {
		return nil
	}
	return permFail(fmt.Sprintf("pool '%s' does not exist", pool))
}

// effectivePermissions is get_effective_permissions: the privileges id
// holds on the top-level paths, every path an ACL names and every pool
// member's path, leaving out paths where it holds none.
func (s *Server) effectivePermissions(id string) map[string]map[string]bool {
	paths := setOf("/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms")
	for _, e := range s.st.Access.ACL {
		for _, p := range aclLevels(e.Path) {
			paths[p] = true // iterate_acl_tree visits every node on the way
		}
	}
	for _, p := range s.st.Pools {
		for _, vmid := range p.VMs {
			paths[fmt.Sprintf("/vms/%d", vmid)] = true
		}
		for _, sid := range p.Storages {
			paths["/storage/"+sid] = true
		}
	}
	out := map[string]map[string]bool{}
	for p := range paths {
		if privs := s.permissions(id, p); len(privs) > 0 {
			out[p] = privs
		}
	}
	return out
}

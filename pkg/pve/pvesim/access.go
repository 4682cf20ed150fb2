package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func (s *Server) accessRoutes() []route {
	return slices.Concat(
		crudRoutes("/access/users", "/{userid}", s.listUsers, s.createUser, s.getUser, s.updateUser, s.deleteUser),
		idRoutes("/access/users/{userid}/token", "/{tokenid}",
			s.listTokens, s.createToken, s.getToken, s.updateToken, s.deleteToken),
		crudRoutes("/access/groups", "/{groupid}", s.listGroups, s.createGroup, s.getGroup, s.updateGroup, s.deleteGroup),
		crudRoutes("/access/roles", "/{roleid}", s.listRoles, s.createRole, s.getRole, s.updateRole, s.deleteRole),
		[]route{
			r("GET /access/acl", s.listACL),
			r("PUT /access/acl", s.updateACL),
			r("GET /access/permissions", s.getPermissions),
		},
	)
}

// access is /etc/pve/user.cfg: users with their tokens, groups, custom roles, ACLs.
// Token secrets are never stored: a created token's value is answered once.
type access struct {
	Users  map[string]*user  `json:"users"`
	Groups map[string]*group `json:"groups"`
	Roles  map[string]string `json:"roles"` // custom role -> privs
	ACL    []aclEntry        `json:"acl"`
}

type user struct {
	ID        string            `json:"userid"`
	Email     string            `json:"email,omitempty"`
	FirstName string            `json:"firstname,omitempty"`
	LastName  string            `json:"lastname,omitempty"`
	Comment   string            `json:"comment,omitempty"`
	Keys      string            `json:"keys,omitempty"`
	Enable    bool              `json:"enable"`
	Expire    int64             `json:"expire,omitempty"`
	Groups    []string          `json:"groups,omitempty"`
	Tokens    map[string]*token `json:"tokens,omitempty"`
}

type token struct {
	Comment    string `json:"comment,omitempty"`
	Expire     int64  `json:"expire,omitempty"`
	Privsep    bool   `json:"privsep"`
	SecretHash string `json:"secret_sha256,omitempty"` // secretHash of its value
}

type group struct {
	ID      string `json:"groupid"`
	Comment string `json:"comment,omitempty"`
}

type aclEntry struct {
	Path      string `json:"path"`
	Type      string `json:"type"` // user | group | token
	UGID      string `json:"ugid"`
	Role      string `json:"roleid"`
	Propagate bool   `json:"propagate"`
}

// seedAccess creates root@pam; New adds the configured tokens.
func seedAccess() *access {
	a := &access{Users: map[string]*user{}, Groups: map[string]*group{}, Roles: map[string]string{}}
	a.Users[superuser] = &user{ID: superuser, Enable: true, Comment: "Built-in Superuser"}
	return a
}

func (s *Server) userOf(id string) (*user, error) {
	u, ok := s.st.Access.Users[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such user ('%s')", id)
	}
	return u, nil
}

func (s *Server) checkGroups(groups []string, prefix string) error {
	for _, g := range groups {
		if _, ok := s.st.Access.Groups[g]; !ok {
			return fail(http.StatusInternalServerError, "%sno such group '%s'", prefix, g)
		}
	}
	return nil
}

// tokenInfo is a token as user.cfg reads back (AccessControl.pm
// parse_user_config, token lines): privsep and expire always (0 for
// none), the comment when there is one.
func tokenInfo(t *token) map[string]any {
	m := map[string]any{"privsep": b2i(t.Privsep), "expire": t.Expire}
	if t.Comment != "" {
		m["comment"] = t.Comment
	}
	return m
}

// keptComment is a text field as user.cfg reads it back
// (AccessControl.pm write_user_config, parse_user_config): written with
// encode_text (spaces stay bare), read back with each field's surrounding
// whitespace trimmed, and kept only when true (`if $comment`), so "0" or
// blanks are not kept at all.
func keptComment(c string) string {
	c = strings.Trim(c, " ")
	if !perlTrue(c) {
		return ""
	}
	return c
}

// perlTrue is Perl truthiness of a string: "" and "0" are false.
// parse_user_config keeps a comment, first or last name or keys only
// when true, so "0" is never kept.
func perlTrue(v string) bool { return v != "" && v != "0" }

func (u *user) fields() map[string]any {
	m := map[string]any{"enable": b2i(u.Enable), "expire": u.Expire}
	for k, v := range map[string]string{"email": u.Email, "firstname": u.FirstName, "lastname": u.LastName,
		"comment": u.Comment, "keys": u.Keys} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// userVisible is the filter of API2/User.pm index: User.Modify or
// Sys.Audit on /access/groups, or on a group the user is in (or the caller
// is the user).
func (s *Server) userVisible(caller string, u *user) bool {
	privs := []string{"User.Modify", "Sys.Audit"}
	if caller == u.ID || s.canAny(caller, "/access/groups", privs...) {
		return true
	}
	for _, g := range u.Groups {
		if s.canAny(caller, "/access/groups/"+g, privs...) {
			return true
		}
	}
	return false
}

// listUsers is API2/User.pm index. Groups and tokens come only with
// full=1 ($extract_user_data returns early otherwise): groups then always
// (empty when none), tokens only for a user that has some (user.cfg has
// no token line for it otherwise). realm-type is the realm's type in
// domains.cfg, absent for a realm that does not exist.
func (s *Server) listUsers(q *request) (any, error) {
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.st.Access.Users)) {
		u := s.st.Access.Users[id]
		if q.has("enabled") && u.Enable != q.bool("enabled") || !s.userVisible(q.user, u) {
			continue
		}
		m := u.fields()
		m["userid"] = u.ID
		_, realm, _ := strings.Cut(u.ID, "@")
		if d, ok := s.realms().Realms[realm]; ok {
			m["realm-type"] = d["type"]
		}
		if q.bool("full") {
			m["groups"] = strings.Join(u.Groups, ",")
			if len(u.Tokens) > 0 {
				toks := []map[string]any{}
				for _, tid := range slices.Sorted(maps.Keys(u.Tokens)) {
					ti := tokenInfo(u.Tokens[tid])
					ti["tokenid"] = tid
					toks = append(toks, ti)
				}
				m["tokens"] = toks
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// getUser is API2/User.pm read_user: groups sorted (they are hash keys),
// tokens null for a user without any ($data->{tokens} undefined).
func (s *Server) getUser(q *request) (any, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, err
	}
	m := u.fields()
	m["groups"] = append([]string{}, u.Groups...)
	var toks map[string]any
	for tid, t := range u.Tokens {
		ensureMap(&toks)
		toks[tid] = tokenInfo(t)
	}
	m["tokens"] = toks
	return m, nil
}

func (s *Server) setUserFields(u *user, q *request) {
	for k, p := range map[string]*string{"email": &u.Email, "firstname": &u.FirstName, "lastname": &u.LastName,
		"comment": &u.Comment, "keys": &u.Keys} {
		if q.has(k) {
			*p = keptComment(q.get(k))
			if k == "email" {
				*p = strings.Trim(q.get(k), " ") // kept even when false
			}
		}
	}
	if q.has("enable") {
		u.Enable = q.bool("enable")
	}
	if q.has("expire") {
		u.Expire = int64(q.int("expire", 0))
	}
}

// createUser is API2/User.pm create_user. The realm is looked up only
// to set a password (AccessControl.pm domain_set_password): a user of a
// realm that does not exist is created when none is given.
func (s *Server) createUser(q *request) (any, error) {
	id := q.get("userid")
	failed := func(format string, args ...any) error {
		return fail(http.StatusInternalServerError, "create user failed: "+format, args...)
	}
	if _, exists := s.st.Access.Users[id]; exists {
		return nil, failed("user '%s' already exists", id)
	}
	if q.has("password") {
		_, realm, _ := strings.Cut(id, "@")
		d, ok := s.realms().Realms[realm]
		if !ok {
			return nil, failed("auth domain '%s' does not exist", realm)
		}
		if t := d["type"]; t != "pam" && t != "pve" {
			// Auth/Plugin.pm store_password; PAM.pm and PVE.pm override it.
			return nil, failed("can't set password on auth type '%s'", t)
		}
	}
	groups := userGroups(q.get("groups"))
	if err := s.checkGroups(groups, "create user failed: "); err != nil {
		return nil, err
	}
	u := &user{ID: id, Enable: true, Groups: groups}
	s.setUserFields(u, q)
	s.st.Access.Users[id] = u
	return nil, nil
}

// userGroups is a group list as user.cfg keeps a user's groups: hash
// keys, read back sorted and each once.
func userGroups(list string) []string {
	groups := schema.SplitList(list)
	slices.Sort(groups)
	return slices.Compact(groups)
}

// updateUser is API2/User.pm update_user; its errors carry "update user
// failed: " (lock_user_config). A user that does not exist is refused
// before, by the userid-group permission check, but for root@pam.
func (s *Server) updateUser(q *request) (any, error) {
	u, ok := s.st.Access.Users[q.vars["userid"]]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "update user failed: no such user ('%s')", q.vars["userid"])
	}
	if q.bool("append") && !q.has("groups") {
		return nil, paramErr1("append", "parameter 'append' requires 'groups'")
	}
	if q.has("groups") {
		groups := userGroups(q.get("groups"))
		if err := s.checkGroups(groups, "update user failed: "); err != nil {
			return nil, err
		}
		if q.bool("append") {
			groups = userGroups(strings.Join(append(groups, u.Groups...), ","))
		}
		u.Groups = groups
	}
	s.setUserFields(u, q)
	return nil, nil
}

// deleteUser is API2/User.pm delete_user. It checks no existence itself
// (the userid-group permission check does, for every caller but
// root@pam). Its tokens go with the user, their ACL entries with them
// (parse_user_config drops an ACL entry of a token that does not exist).
func (s *Server) deleteUser(q *request) (any, error) {
	id := q.vars["userid"]
	if _, ok := s.st.Access.Users[id]; !ok {
		return nil, nil
	}
	delete(s.st.Access.Users, id)
	s.dropACL(func(e aclEntry) bool {
		return e.Type == "user" && e.UGID == id || e.Type == "token" && strings.HasPrefix(e.UGID, id+"!")
	})
	return nil, nil
}

// dropACLTree removes the ACL entries on path and below it: PVE does so
// when the object a path names goes (pve-access-control AccessControl.pm
// delete_pool_acl, remove_vm_access, remove_storage_access drop the
// path's node of the ACL tree).
func (s *Server) dropACLTree(path string) {
	s.dropACL(func(e aclEntry) bool { return e.Path == path || strings.HasPrefix(e.Path, path+"/") })
}

func (s *Server) dropACL(match func(aclEntry) bool) {
	out := s.st.Access.ACL[:0]
	for _, e := range s.st.Access.ACL {
		if !match(e) {
			out = append(out, e)
		}
	}
	s.st.Access.ACL = out
}

func (s *Server) listTokens(q *request) (any, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, tid := range slices.Sorted(maps.Keys(u.Tokens)) {
		m := tokenInfo(u.Tokens[tid])
		m["tokenid"] = tid
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) tokenOf(q *request) (*user, *token, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, nil, err
	}
	t, ok := u.Tokens[q.vars["tokenid"]]
	if !ok {
		return nil, nil, fail(http.StatusInternalServerError, "no such token '%s' for user '%s'", q.vars["tokenid"], u.ID)
	}
	return u, t, nil
}

func (s *Server) getToken(q *request) (any, error) {
	_, t, err := s.tokenOf(q)
	if err != nil {
		return nil, err
	}
	return tokenInfo(t), nil
}

func (s *Server) createToken(q *request) (any, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, err
	}
	tid := q.vars["tokenid"]
	if _, exists := u.Tokens[tid]; exists {
		// pve-access-control API2/User.pm generate_token
		return nil, paramErr1("tokenid", "Token already exists.")
	}
	// Privilege separation is on unless asked off (generate_token).
	t := &token{Expire: int64(q.int("expire", 0)), Privsep: true, Comment: keptComment(q.get("comment"))}
	if q.has("privsep") {
		t.Privsep = q.bool("privsep")
	}
	ensureMap(&u.Tokens)
	value := s.newUUID()
	t.SecretHash = secretHash(value) // the value itself is answered once, never kept
	u.Tokens[tid] = t
	// The answer's info is the hash generate_token built, not user.cfg
	// read back: expire only when it was sent, the comment as sent.
	info := tokenInfo(t)
	if !q.has("expire") {
		delete(info, "expire")
	}
	if c := q.get("comment"); perlTrue(c) {
		info["comment"] = c
	}
	return map[string]any{"full-tokenid": u.ID + "!" + tid, "info": info, "value": value}, nil
}

func (s *Server) updateToken(q *request) (any, error) {
	u, t, err := s.tokenOf(q)
	if err != nil {
		return nil, err
	}
	// update_token_info: only the comment can be deleted; anything else
	// in delete is refused, and nothing is written. The refusal is a
	// raise_param_exc inside lock_user_config: its 400 becomes the text
	// of a 500 "updating token info failed: ...".
	del := schema.SplitList(q.get("delete"))
	for _, k := range del {
		if k != "comment" {
			return nil, fail(http.StatusInternalServerError,
				"updating token info failed: 400 Parameter verification failed.\ndelete: unknown option '%s'", k)
		}
	}
	if q.has("comment") {
		t.Comment = keptComment(q.get("comment"))
	}
	if q.has("expire") {
		t.Expire = int64(q.int("expire", 0))
	}
	if q.has("privsep") {
		t.Privsep = q.bool("privsep")
	}
	if len(del) > 0 {
		t.Comment = ""
	}
	// The answer is the token hash before it is written: a comment as
	// sent, unless empty or deleted.
	m := tokenInfo(t)
	if c := q.get("comment"); c != "" && len(del) == 0 {
		m["comment"] = c
	}
	if q.bool("regenerate") {
		value := s.newUUID()
		t.SecretHash = secretHash(value)
		m["full-tokenid"] = u.ID + "!" + q.vars["tokenid"]
		m["value"] = value
	}
	return m, nil
}

func (s *Server) deleteToken(q *request) (any, error) {
	u, _, err := s.tokenOf(q)
	if err != nil {
		return nil, err
	}
	full := u.ID + "!" + q.vars["tokenid"]
	delete(u.Tokens, q.vars["tokenid"])
	s.dropACL(func(e aclEntry) bool { return e.Type == "token" && e.UGID == full })
	return nil, nil
}

func (s *Server) listGroups(q *request) (any, error) {
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.st.Access.Groups)) {
		// API2/Group.pm index: only groups the caller may see.
		if !s.canAny(q.user, "/access/groups/"+id, "User.Modify", "Sys.Audit", "Group.Allocate") {
			continue
		}
		g := s.st.Access.Groups[id]
		m := map[string]any{"groupid": id, "users": strings.Join(s.groupMembers(id), ",")}
		if g.Comment != "" {
			m["comment"] = g.Comment
		}
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) groupMembers(id string) []string {
	var out []string
	for _, uid := range slices.Sorted(maps.Keys(s.st.Access.Users)) {
		if slices.Contains(s.st.Access.Users[uid].Groups, id) {
			out = append(out, uid)
		}
	}
	return out
}

func (s *Server) getGroup(q *request) (any, error) {
	g, ok := s.st.Access.Groups[q.vars["groupid"]]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "group '%s' does not exist", q.vars["groupid"])
	}
	m := map[string]any{"members": append([]string{}, s.groupMembers(g.ID)...)}
	if g.Comment != "" {
		m["comment"] = g.Comment
	}
	return m, nil
}

func (s *Server) createGroup(q *request) (any, error) {
	id := q.get("groupid")
	if _, exists := s.st.Access.Groups[id]; exists {
		return nil, fail(http.StatusInternalServerError, "create group failed: group '%s' already exists", id)
	}
	s.st.Access.Groups[id] = &group{ID: id, Comment: keptComment(q.get("comment"))}
	return nil, nil
}

func (s *Server) updateGroup(q *request) (any, error) {
	g, ok := s.st.Access.Groups[q.vars["groupid"]]
	if !ok {
		// API2/Group.pm update_group dies inside lock_user_config.
		return nil, fail(http.StatusInternalServerError, "update group failed: group '%s' does not exist", q.vars["groupid"])
	}
	if q.has("comment") {
		g.Comment = keptComment(q.get("comment"))
	}
	return nil, nil
}

func (s *Server) deleteGroup(q *request) (any, error) {
	id := q.vars["groupid"]
	if _, ok := s.st.Access.Groups[id]; !ok {
		// API2/Group.pm delete_group dies inside lock_user_config.
		return nil, fail(http.StatusInternalServerError, "delete group failed: group '%s' does not exist", id)
	}
	delete(s.st.Access.Groups, id)
	for _, u := range s.st.Access.Users {
		u.Groups = removeValue(u.Groups, id)
	}
	s.dropACL(func(e aclEntry) bool { return e.Type == "group" && e.UGID == id })
	return nil, nil
}

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

var realms = setOf("pam", "pve")

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

func tokenInfo(t *token) map[string]any {
	m := map[string]any{"privsep": b2i(t.Privsep)}
	if t.Comment != "" {
		m["comment"] = t.Comment
	}
	if t.Expire != 0 {
		m["expire"] = t.Expire
	}
	return m
}

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
		m["realm-type"] = realm
		if len(u.Groups) > 0 {
			m["groups"] = strings.Join(u.Groups, ",")
		}
		if q.bool("full") {
			toks := []map[string]any{}
			for _, tid := range slices.Sorted(maps.Keys(u.Tokens)) {
				ti := tokenInfo(u.Tokens[tid])
				ti["tokenid"] = tid
				toks = append(toks, ti)
			}
			m["tokens"] = toks
		}
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) getUser(q *request) (any, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, err
	}
	m := u.fields()
	m["groups"] = append([]string{}, u.Groups...)
	toks := map[string]any{}
	for tid, t := range u.Tokens {
		toks[tid] = tokenInfo(t)
	}
	m["tokens"] = toks
	return m, nil
}

func (s *Server) setUserFields(u *user, q *request) {
	for k, p := range map[string]*string{"email": &u.Email, "firstname": &u.FirstName, "lastname": &u.LastName,
		"comment": &u.Comment, "keys": &u.Keys} {
		if q.has(k) {
			*p = q.get(k)
		}
	}
	if q.has("enable") {
		u.Enable = q.bool("enable")
	}
	if q.has("expire") {
		u.Expire = int64(q.int("expire", 0))
	}
}

func (s *Server) createUser(q *request) (any, error) {
	id := q.get("userid")
	_, realm, _ := strings.Cut(id, "@")
	if !realms[realm] {
		return nil, fail(http.StatusInternalServerError, "create user failed: domain '%s' does not exist", realm)
	}
	if _, exists := s.st.Access.Users[id]; exists {
		return nil, fail(http.StatusInternalServerError, "create user failed: user '%s' already exists", id)
	}
	groups := schema.SplitList(q.get("groups"))
	if err := s.checkGroups(groups, "create user failed: "); err != nil {
		return nil, err
	}
	u := &user{ID: id, Enable: true, Groups: groups}
	s.setUserFields(u, q)
	s.st.Access.Users[id] = u
	return nil, nil
}

func (s *Server) updateUser(q *request) (any, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, err
	}
	if q.bool("append") && !q.has("groups") {
		return nil, paramErr1("append", "parameter 'append' requires 'groups'")
	}
	if q.has("groups") {
		groups := schema.SplitList(q.get("groups"))
		if err := s.checkGroups(groups, "update user failed: "); err != nil {
			return nil, err
		}
		if q.bool("append") {
			for _, g := range groups {
				if !slices.Contains(u.Groups, g) {
					u.Groups = append(u.Groups, g)
				}
			}
		} else {
			u.Groups = groups
		}
	}
	s.setUserFields(u, q)
	return nil, nil
}

func (s *Server) deleteUser(q *request) (any, error) {
	u, err := s.userOf(q.vars["userid"])
	if err != nil {
		return nil, err
	}
	delete(s.st.Access.Users, u.ID)
	s.dropACL(func(e aclEntry) bool {
		return e.Type == "user" && e.UGID == u.ID || e.Type == "token" && strings.HasPrefix(e.UGID, u.ID+"!")
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
	t := &token{Comment: q.get("comment"), Expire: int64(q.int("expire", 0)), Privsep: true}
	if q.has("privsep") {
		t.Privsep = q.bool("privsep")
	}
	ensureMap(&u.Tokens)
	value := s.newUUID()
	t.SecretHash = secretHash(value) // the value itself is answered once, never kept
	u.Tokens[tid] = t
	return map[string]any{"full-tokenid": u.ID + "!" + tid, "info": tokenInfo(t), "value": value}, nil
}

func (s *Server) updateToken(q *request) (any, error) {
	u, t, err := s.tokenOf(q)
	if err != nil {
		return nil, err
	}
	// update_token_info: only the comment can be deleted; anything else
	// in delete is refused, and nothing is written.
	del := schema.SplitList(q.get("delete"))
	for _, k := range del {
		if k != "comment" {
			return nil, paramErr1("delete", "unknown option '%s'", k)
		}
	}
	if q.has("comment") {
		t.Comment = q.get("comment")
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
	m := tokenInfo(t)
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
	s.st.Access.Groups[id] = &group{ID: id, Comment: q.get("comment")}
	return nil, nil
}

func (s *Server) updateGroup(q *request) (any, error) {
	g, ok := s.st.Access.Groups[q.vars["groupid"]]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "group '%s' does not exist", q.vars["groupid"])
	}
	if q.has("comment") {
		g.Comment = q.get("comment")
	}
	return nil, nil
}

func (s *Server) deleteGroup(q *request) (any, error) {
	id := q.vars["groupid"]
	if _, ok := s.st.Access.Groups[id]; !ok {
		return nil, fail(http.StatusInternalServerError, "group '%s' does not exist", id)
	}
	delete(s.st.Access.Groups, id)
	for _, u := range s.st.Access.Users {
		u.Groups = removeValue(u.Groups, id)
	}
	s.dropACL(func(e aclEntry) bool { return e.Type == "group" && e.UGID == id })
	return nil, nil
}

package pvesim

import (
	"net/http"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// allowed is RPCEnvironment.pm's check_api2_permissions for the method
// key, run before the parameters are verified (pve-manager
// PVE/HTTPServer.pm rest_handler), with the path variables and parameters
// as they came. The rules and their evaluator are pkg/pve/acl's, which
// the planner derives its permission preflight from too.
func (s *Server) allowed(key string, q *request) error {
	if q.user == superuser {
		return nil
	}
	rule := s.rules[key]
	if rule == nil {
		return permFail("user != root@pam")
	}
	if rule.Open() {
		return nil
	}
	if rule.Check == nil {
		return permFail("")
	}
	t, err := acl.Parse(rule.Check, func(name string) (string, bool) { return q.get(name), q.has(name) })
	if err != nil {
		return err
	}
	_, err = acl.Eval(t, permEnv{s, q}, false)
	return err
}

// permEnv answers a rule's tests for one request.
type permEnv struct {
	s *Server
	q *request
}

func (e permEnv) Perm(path string, anyOf bool, privs []string, noerr bool) error {
	if noerr {
		held := e.s.can(e.q.user, path, privs...)
		if anyOf {
			held = e.s.canAny(e.q.user, path, privs...)
		}
		if !held {
			return permFail("")
		}
		return nil
	}
	return e.s.checkFull(e.q.user, path, anyOf, privs...)
}

func (e permEnv) PermModify(path string) error { return e.s.checkPermModify(e.q.user, path) }

func (e permEnv) Refuse(what string) error { return permFail(what) }

func (e permEnv) UseridGroup(privs []string, groupsParam string, noerr bool) (bool, error) {
	return e.s.checkUseridGroup(e.q, privs, groupsParam, noerr)
}

// UseridParam is the "userid-param" test: "self" (the caller is the user
// the request names) or Realm.AllocateUser on that user's realm.
func (e permEnv) UseridParam(sub string, noerr bool) (bool, error) {
	s, q := e.s, e.q
	userid := q.get("userid")
	_, realm, _ := strings.Cut(userid, "@")
	if sub == "Realm.AllocateUser" {
		path := "/access/realm/" + realm
		if noerr {
			return s.can(q.user, path, "Realm.AllocateUser"), nil
		}
		return true, s.check(q.user, path, "Realm.AllocateUser")
	}
	if _, ok := s.st.Access.Users[userid]; !ok {
		if noerr {
			return false, nil
		}
		return false, fail(http.StatusInternalServerError, "no such user ('%s')", userid)
	}
	if q.user == userid {
		return true, nil
	}
	if noerr {
		return false, nil
	}
	return false, permFail("")
}

// checkUseridGroup is the "userid-group" test: privs on /access/groups, or
// on a group of the user the request names (and, with groups_param, on
// every group the request names).
func (s *Server) checkUseridGroup(q *request, privs []string, gp string, noerr bool) (bool, error) {
	userid := q.get("userid")
	existing := gp != "create"
	if _, ok := s.st.Access.Users[userid]; existing && !ok {
		if noerr {
			return false, nil
		}
		return false, fail(http.StatusInternalServerError, "no such user ('%s')", userid)
	}
	if s.canAny(q.user, "/access/groups", privs...) {
		return true, nil
	}
	groups := map[string]bool{}
	for g := range s.st.Access.Groups {
		if s.canAny(q.user, "/access/groups/"+g, privs...) {
			groups[g] = true
		}
	}
	if gp != "" {
		named := schema.SplitList(q.get("groups"))
		if len(named) == 0 {
			return false, permFail("/access/groups, " + strings.Join(privs, "|"))
		}
		for _, g := range named {
			if !groups[g] {
				return false, permFail("/access/groups/" + g + ", " + strings.Join(privs, "|"))
			}
		}
	}
	if existing {
		member := false
		if u := s.st.Access.Users[userid]; u != nil {
			for _, g := range u.Groups {
				member = member || groups[g]
			}
		}
		if !member {
			if noerr {
				return false, nil
			}
			return false, permFail("")
		}
	}
	return true, nil
}

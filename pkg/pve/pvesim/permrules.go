package pvesim

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// permRule is one method's `permissions` in PVE's API schema (without the
// description): "user": "all" lets every authenticated user call it (the
// handler filters or checks itself), "check" is an expression of
// RPCEnvironment.pm's exec_api2_perm_check. A method without a rule is
// for root@pam only.
type permRule struct {
	User  string `json:"user,omitempty"`
	Check []any  `json:"check,omitempty"`
}

// permRulesGz is every method's rule, keyed "METHOD /path" as the apidoc
// spells it, generated from testdata/pve-api/apidoc-9.1.json by
// TestPermissionRulesAreTheAPIDocs (go test ./pkg/pve/pvesim -run
// TestPermissionRulesAreTheAPIDocs -update). The rules are PVE's own,
// never copied by hand, so a route a surface adds is checked at once.
//
//go:embed permissions.json.gz
var permRulesGz []byte

// loadPermRules decodes the embedded rules.
func loadPermRules() (map[string]*permRule, error) {
	zr, err := gzip.NewReader(bytes.NewReader(permRulesGz))
	if err != nil {
		return nil, fmt.Errorf("pvesim: permission rules: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("pvesim: permission rules: %w", err)
	}
	var rules map[string]*permRule
	if err := json.Unmarshal(b, &rules); err != nil {
		return nil, fmt.Errorf("pvesim: permission rules: %w", err)
	}
	return rules, nil
}

// allowed is RPCEnvironment.pm's check_api2_permissions for the method
// key, run before the parameters are verified (pve-manager
// PVE/HTTPServer.pm rest_handler), with the path variables and parameters
// as they came.
func (s *Server) allowed(key string, q *request) error {
	if q.user == superuser {
		return nil
	}
	rule := s.rules[key]
	if rule == nil {
		return permFail("user != root@pam")
	}
	if rule.User == "all" || rule.User == "world" {
		return nil
	}
	if rule.Check == nil {
		return permFail("")
	}
	_, err := s.evalPerm(rule.Check, q, false)
	return err
}

// evalPerm is exec_api2_perm_check: a failed test answers false when
// noerr, else the error PVE raises.
func (s *Server) evalPerm(check []any, q *request, noerr bool) (bool, error) {
	if len(check) == 0 {
		return false, fmt.Errorf("no permission test specified")
	}
	test, _ := check[0].(string)
	refuse := func(what string) (bool, error) {
		if noerr {
			return false, nil
		}
		return false, permFail(what)
	}
	switch test {
	case "and":
		for _, sub := range check[1:] {
			if _, err := s.evalPerm(asList(sub), q, false); err != nil {
				return false, err
			}
		}
		return true, nil
	case "or":
		for _, sub := range check[1:] {
			if ok, _ := s.evalPerm(asList(sub), q, true); ok {
				return true, nil
			}
		}
		return refuse("")
	case "perm":
		tmpl, _ := check[1].(string)
		privs := asStrings(check[2])
		opts := options(check[3:])
		if rp, ok := opts["require_param"].(string); ok && !q.has(rp) {
			return refuse("")
		}
		path, _ := acl.NormalizePath(templateReplace(tmpl, q))
		anyOf := truthy(opts["any"])
		if noerr {
			if anyOf {
				return s.canAny(q.user, path, privs...), nil
			}
			return s.can(q.user, path, privs...), nil
		}
		return true, s.checkFull(q.user, path, anyOf, privs...)
	case "userid-group":
		return s.checkUseridGroup(q, asStrings(check[1]), options(check[2:]), noerr)
	case "userid-param":
		userid := q.get("userid")
		_, realm, _ := strings.Cut(userid, "@")
		switch sub, _ := check[1].(string); sub {
		case "self":
			if _, ok := s.st.Access.Users[userid]; !ok {
				if noerr {
					return false, nil
				}
				return false, fail(http.StatusInternalServerError, "no such user ('%s')", userid)
			}
			if q.user == userid {
				return true, nil
			}
			return refuse("")
		case "Realm.AllocateUser":
			path := "/access/realm/" + realm
			if noerr {
				return s.can(q.user, path, "Realm.AllocateUser"), nil
			}
			return true, s.check(q.user, path, "Realm.AllocateUser")
		}
		return false, fmt.Errorf("unknown userid-param test %v", check[1])
	case "perm-modify":
		tmpl, _ := check[1].(string)
		path, ok := acl.NormalizePath(templateReplace(tmpl, q))
		if !ok {
			return false, nil
		}
		if err := s.checkPermModify(q.user, path); err != nil {
			if noerr {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown permission test %q", test)
}

// checkUseridGroup is the "userid-group" test: privs on /access/groups, or
// on a group of the user the request names (and, with groups_param, on
// every group the request names).
func (s *Server) checkUseridGroup(q *request, privs []string, opts map[string]any, noerr bool) (bool, error) {
	userid := q.get("userid")
	gp, _ := opts["groups_param"].(string)
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

var templateVar = regexp.MustCompile(`\{([^}]+)\}`)

// templateReplace is PVE::Tools::template_replace: {name} becomes the
// parameter's value, or "-" when it is empty.
func templateReplace(tmpl string, q *request) string {
	return templateVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		if v := q.get(m[1 : len(m)-1]); v != "" && v != "0" {
			return v
		}
		return "-"
	})
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asList(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// options reads the trailing key, value pairs of a test.
func options(kv []any) map[string]any {
	out := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			out[k] = kv[i+1]
		}
	}
	return out
}

func truthy(v any) bool {
	switch x := v.(type) {
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	case bool:
		return x
	}
	return false
}

package acl

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Rule is one API method's `permissions` in PVE's API schema (without the
// description): User "all" (or "world") lets every authenticated user call
// it — the handler filters or checks itself — and Check is an expression
// of RPCEnvironment.pm's exec_api2_perm_check. A method without a rule is
// root@pam's only.
type Rule struct {
	User  string `json:"user,omitempty"`
	Check []any  `json:"check,omitempty"`
}

// Open reports whether every authenticated user may call the method.
func (r *Rule) Open() bool { return r != nil && (r.User == "all" || r.User == "world") }

// rulesGz is every method's rule, keyed "METHOD /path" as the apidoc
// spells it, generated from testdata/pve-api/apidoc-9.1.json by
// TestRulesAreTheAPIDocs (go test ./pkg/pve/acl -run
// TestRulesAreTheAPIDocs -update). The rules are PVE's own, never copied
// by hand: the simulator enforces them and the planner derives its
// permission preflight from them.
//
//go:embed permissions.json.gz
var rulesGz []byte

// rules decodes the embedded rules once; callers only read them.
var rules = sync.OnceValues(func() (map[string]*Rule, error) { return decodeRules(rulesGz) })

func decodeRules(gz []byte) (map[string]*Rule, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("acl: permission rules: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("acl: permission rules: %w", err)
	}
	var out map[string]*Rule
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("acl: permission rules: %w", err)
	}
	return out, nil
}

// Rules returns every method's rule by "METHOD /path/{var}" (the apidoc's
// spelling). The map is shared: read it only.
func Rules() (map[string]*Rule, error) { return rules() }

// RuleOf is the rule of method on the apidoc path template tmpl; known is
// false when the apidoc has no such method, and the rule nil when the
// method has none (root@pam only).
func RuleOf(method, tmpl string) (r *Rule, known bool) {
	all, err := rules()
	if err != nil {
		return nil, false
	}
	r, known = all[method+" "+tmpl]
	return r, known
}

// Test is one node of a rule's check expression, its path template filled
// in from the request's parameters (template_replace).
type Test struct {
	// Op is "and", "or", "perm", "perm-modify", "userid-group" or
	// "userid-param".
	Op string
	// Subs are the operands of "and" and "or".
	Subs []Test
	// Path is the normalized ACL path of "perm" and "perm-modify" (""
	// when normalize_path refuses it).
	Path  string
	Privs []string
	// Any: one of Privs is enough ("perm" with any => 1).
	Any bool
	// Absent: a "perm" whose require_param the request does not carry,
	// which fails whatever is granted.
	Absent bool
	// Sub is the "userid-param" test: "self" or "Realm.AllocateUser".
	Sub string
	// GroupsParam is "userid-group"'s groups_param option ("", "update"
	// or "create").
	GroupsParam string
}

// Param answers a request parameter (path variables included): its value
// and whether the request carries it.
type Param func(name string) (string, bool)

// Parse reads a rule's check expression, filling its path templates from
// param.
func Parse(check []any, param Param) (Test, error) {
	if len(check) == 0 {
		return Test{}, fmt.Errorf("no permission test specified")
	}
	op, _ := check[0].(string)
	t := Test{Op: op}
	switch op {
	case "and", "or":
		for _, sub := range check[1:] {
			st, err := Parse(asList(sub), param)
			if err != nil {
				return Test{}, err
			}
			t.Subs = append(t.Subs, st)
		}
	case "perm":
		if len(check) < 3 {
			return Test{}, fmt.Errorf("perm test without privileges")
		}
		tmpl, _ := check[1].(string)
		t.Path, _ = NormalizePath(templateReplace(tmpl, param))
		t.Privs = asStrings(check[2])
		opts := options(check[3:])
		t.Any = truthy(opts["any"])
		if rp, ok := opts["require_param"].(string); ok {
			_, has := param(rp)
			t.Absent = !has
		}
	case "perm-modify":
		tmpl, _ := check[1].(string)
		t.Path, _ = NormalizePath(templateReplace(tmpl, param))
	case "userid-group":
		t.Privs = asStrings(check[1])
		t.GroupsParam, _ = options(check[2:])["groups_param"].(string)
	case "userid-param":
		t.Sub, _ = check[1].(string)
		if t.Sub != "self" && t.Sub != "Realm.AllocateUser" {
			return Test{}, fmt.Errorf("unknown userid-param test %v", check[1])
		}
	default:
		return Test{}, fmt.Errorf("unknown permission test %q", op)
	}
	return t, nil
}

// Env answers the leaves of a check expression for one caller and request.
type Env interface {
	// Perm is check (or check_any when anyOf) of privs on path: nil when
	// held, else the 403 PVE raises. With noerr the error is only a
	// "no" and may be any non-nil value.
	Perm(path string, anyOf bool, privs []string, noerr bool) error
	// PermModify is check_perm_modify on path.
	PermModify(path string) error
	// UseridGroup is the "userid-group" test.
	UseridGroup(privs []string, groupsParam string, noerr bool) (bool, error)
	// UseridParam is the "userid-param" test.
	UseridParam(sub string, noerr bool) (bool, error)
	// Refuse is the 403 a failed test raises ("" for no detail).
	Refuse(what string) error
}

// Eval is exec_api2_perm_check: whether t holds for env; a failed test
// answers false when noerr, else the error PVE raises.
func Eval(t Test, env Env, noerr bool) (bool, error) {
	refuse := func() (bool, error) {
		if noerr {
			return false, nil
		}
		return false, env.Refuse("")
	}
	switch t.Op {
	case "and":
		for _, sub := range t.Subs {
			if _, err := Eval(sub, env, false); err != nil {
				return false, err
			}
		}
		return true, nil
	case "or":
		for _, sub := range t.Subs {
			if ok, _ := Eval(sub, env, true); ok {
				return true, nil
			}
		}
		return refuse()
	case "perm":
		if t.Absent {
			return refuse()
		}
		err := env.Perm(t.Path, t.Any, t.Privs, noerr)
		if noerr {
			return err == nil, nil
		}
		return true, err
	case "perm-modify":
		if t.Path == "" {
			return false, nil
		}
		if err := env.PermModify(t.Path); err != nil {
			if noerr {
				return false, nil
			}
			return false, err
		}
		return true, nil
	case "userid-group":
		return env.UseridGroup(t.Privs, t.GroupsParam, noerr)
	case "userid-param":
		return env.UseridParam(t.Sub, noerr)
	}
	return false, fmt.Errorf("unknown permission test %q", t.Op)
}

// PermModifyPrivs are the privileges check_perm_modify accepts on path,
// any one of them: Permissions.Modify, or the allocate privilege of the
// object the path names (pve-access-control RPCEnvironment.pm).
func PermModifyPrivs(path string) []string {
	privs := []string{"Permissions.Modify"}
	rest := func(prefix string) bool { return len(path) > len(prefix) && path[:len(prefix)] == prefix }
	switch {
	case rest("/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case rest("/vms/"):
		privs = append(privs, "VM.Allocate")
	case rest("/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return privs
}

var templateVar = lazyre.New(`\{([^}]+)\}`)

// templateReplace is PVE::Tools::template_replace: {name} becomes the
// parameter's value, or "-" when it is empty.
func templateReplace(tmpl string, param Param) string {
	return templateVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		if v, _ := param(m[1 : len(m)-1]); v != "" && v != "0" {
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

package acl

import (
	"errors"
	"strings"
	"testing"
)

// fakeEnv holds privileges as "path priv" and records the leaves asked.
type fakeEnv struct {
	held  map[string]bool
	asked []string
}

func (e *fakeEnv) Perm(path string, anyOf bool, privs []string, _ bool) error {
	e.asked = append(e.asked, path+" "+strings.Join(privs, ","))
	for _, p := range privs {
		ok := e.held[path+" "+p]
		if anyOf && ok {
			return nil
		}
		if !anyOf && !ok {
			return errors.New("403 " + path + ", " + p)
		}
	}
	if anyOf {
		return errors.New("403 " + path)
	}
	return nil
}

func (e *fakeEnv) PermModify(path string) error {
	return e.Perm(path, true, PermModifyPrivs(path), false)
}

func (e *fakeEnv) UseridGroup([]string, string, bool) (bool, error) { return false, e.Refuse("") }
func (e *fakeEnv) UseridParam(string, bool) (bool, error)           { return false, e.Refuse("") }
func (e *fakeEnv) Refuse(what string) error                         { return errors.New("403 " + what) }

// TestEvalRules: PVE's rules of a few methods, parsed with the request's
// parameters and evaluated: and needs every part, or one, templates are
// filled, require_param without its parameter fails.
func TestEvalRules(t *testing.T) {
	tests := []struct {
		key    string
		params map[string]string
		held   []string
		ok     bool
	}{
		{"POST /nodes/{node}/storage/{storage}/download-url", map[string]string{"node": "pve", "storage": "local"},
			[]string{"/storage/local Datastore.AllocateTemplate", "/nodes/pve Sys.AccessNetwork"}, true},
		{"POST /nodes/{node}/storage/{storage}/download-url", map[string]string{"node": "pve", "storage": "local"},
			[]string{"/storage/local Datastore.AllocateTemplate", "/ Sys.Audit"}, false},
		{"POST /nodes/{node}/storage/{storage}/download-url", map[string]string{"node": "pve", "storage": "local"},
			[]string{"/nodes/pve Sys.AccessNetwork"}, false},
		{"POST /nodes/{node}/qemu/{vmid}/clone", map[string]string{"vmid": "9000", "newid": "100"},
			[]string{"/vms/9000 VM.Clone", "/pool/lab VM.Allocate"}, false},
		{"POST /nodes/{node}/qemu/{vmid}/clone", map[string]string{"vmid": "9000", "newid": "100", "pool": "lab"},
			[]string{"/vms/9000 VM.Clone", "/pool/lab VM.Allocate"}, true},
		{"PUT /access/acl", map[string]string{"path": "/storage/x"}, []string{"/storage/x Datastore.Allocate"}, true},
		{"GET /nodes/{node}/storage/{storage}/content", map[string]string{"node": "pve", "storage": "local"},
			[]string{"/storage/local Datastore.AllocateSpace"}, true},
	}
	for _, tc := range tests {
		method, path, _ := strings.Cut(tc.key, " ")
		rule, known := RuleOf(method, path)
		if !known || rule == nil || rule.Check == nil {
			t.Fatalf("%s: no rule", tc.key)
		}
		test, err := Parse(rule.Check, func(name string) (string, bool) { v, ok := tc.params[name]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		env := &fakeEnv{held: map[string]bool{}}
		for _, h := range tc.held {
			env.held[h] = true
		}
		ok, err := Eval(test, env, false)
		if ok != tc.ok || (err == nil) != tc.ok {
			t.Errorf("%s %v holding %v: got %v, %v (asked %v), want %v", tc.key, tc.params, tc.held, ok, err, env.asked, tc.ok)
		}
	}
}

// TestOpenRules: a method open to all has no check to evaluate.
func TestOpenRules(t *testing.T) {
	for _, key := range []string{"GET /pools", "POST /nodes/{node}/qemu", "GET /access/domains"} {
		method, path, _ := strings.Cut(key, " ")
		if r, _ := RuleOf(method, path); !r.Open() {
			t.Errorf("%s: got %+v, want open to all", key, r)
		}
	}
	if r, known := RuleOf("POST", "/nodes/{node}/execute"); !known || r != nil {
		t.Errorf("POST /nodes/{node}/execute: got %+v, %v, want no rule (root@pam only)", r, known)
	}
}

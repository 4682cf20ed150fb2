package pve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAccessCalls(t *testing.T) {
	const made, again = "11111111-2222-3333-4444-555555555555", "99999999-8888-7777-6666-555555555555"
	f := newFakePVE(t, false)
	f.handle("GET /access/users", data([]any{
		map[string]any{"userid": "root@pam", "enable": 1, "expire": 0, "realm-type": "pam"},
		map[string]any{"userid": "ci@pve", "enable": 0, "expire": 1900000000, "groups": "ops,dev", "comment": "CI",
			"tokens": []any{map[string]any{"tokenid": "deploy", "privsep": 1, "comment": "d"}, map[string]any{"tokenid": "x", "privsep": 0, "expire": 5}}},
	}))
	f.handle("POST /access/users/ci@pve/token/deploy", data(map[string]any{"full-tokenid": "ci@pve!deploy", "info": map[string]any{"privsep": 1}, "value": made}))
	f.handle("PUT /access/users/ci@pve/token/deploy", data(map[string]any{"privsep": 1, "full-tokenid": "ci@pve!deploy", "value": again}))
	f.handle("PUT /access/users/ci@pve/token/other", data(map[string]any{"privsep": 0}))
	f.handle("GET /access/acl", data([]any{
		map[string]any{"path": "/pool/lab", "type": "token", "ugid": "ci@pve!deploy", "roleid": "PVEVMAdmin", "propagate": 1},
		map[string]any{"path": "/", "type": "user", "ugid": "ci@pve", "roleid": "PVEAuditor", "propagate": 0},
		map[string]any{"path": "/", "type": "group", "ugid": "ops", "roleid": "PVEAuditor"},
	}))
	var trace bytes.Buffer
	c := f.client(t, WithDebug(&trace))
	ctx := context.Background()

	users, err := c.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ci := users["ci@pve"]
	if ci == nil || len(users) != 2 {
		t.Fatalf("got users %v, want root@pam and ci@pve", users)
	}
	if diff := cmp.Diff(ConfigOf(map[string]string{"userid": "ci@pve", "enable": "0", "expire": "1900000000", "groups": "ops,dev", "comment": "CI"}), ci.Config); diff != "" {
		t.Errorf("ci@pve config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]*Config{"deploy": ConfigOf(map[string]string{"privsep": "1", "comment": "d"}), "x": ConfigOf(map[string]string{"privsep": "0", "expire": "5"})}, ci.Tokens); diff != "" {
		t.Errorf("ci@pve tokens (-want +got):\n%s", diff)
	}
	if q, _ := url.ParseQuery(f.requests()[0].Query); q.Get("full") != "1" {
		t.Errorf("users listed without full=1 (%v): tokens would be missing", q)
	}

	s, err := c.CreateToken(ctx, "ci@pve", "deploy", url.Values{"privsep": {"1"}})
	if err != nil || s.Reveal() != made {
		t.Fatalf("CreateToken: got %v, want the secret (%v)", s.Reveal(), err)
	}
	s, err = c.UpdateToken(ctx, "ci@pve", "deploy", url.Values{"regenerate": {"1"}})
	if err != nil || s.Reveal() != again {
		t.Fatalf("UpdateToken regenerate: got %v, want the new secret (%v)", s.Reveal(), err)
	}
	if s, err := c.UpdateToken(ctx, "ci@pve", "other", url.Values{"comment": {"x"}}); err != nil || !s.IsZero() {
		t.Errorf("UpdateToken: got %v, %v want no secret", s, err)
	}

	entries, err := c.ACL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ACLEntry{
		{Path: "/pool/lab", Type: "token", UGID: "ci@pve!deploy", Role: "PVEVMAdmin", Propagate: true},
		{Path: "/", Type: "user", UGID: "ci@pve", Role: "PVEAuditor", Propagate: false},
		{Path: "/", Type: "group", UGID: "ops", Role: "PVEAuditor", Propagate: true}, // PVE's default
	}, entries); diff != "" {
		t.Errorf("ACL (-want +got):\n%s", diff)
	}
	for _, secret := range []string{made, again} {
		if strings.Contains(trace.String(), secret) {
			t.Errorf("the --debug trace shows a created token's secret")
		}
	}
	if !strings.Contains(trace.String(), `"value":"REDACTED"`) {
		t.Errorf("the trace should show that a value was answered, redacted:\n%s", trace.String())
	}
}

// A Secret never prints its value, whatever formats it.
func TestSecretDoesNotPrint(t *testing.T) {
	const v = "0a1b2c3d-secret-value"
	s := Secret{v}
	type wrapper struct{ S Secret }
	b, err := json.Marshal(wrapper{s})
	if err != nil {
		t.Fatal(err)
	}
	outs := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %s %q %x %+v %#v %d", s, s, s, s, s, s, s), fmt.Sprintf("%v %+v", wrapper{s}, &wrapper{s}),
		fmt.Errorf("wrapped: %w %v", fmt.Errorf("%v", s), s).Error(), string(b), s.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, v) {
			t.Errorf("a Secret printed its value: %q", o)
		}
	}
	if s.Reveal() != v || s.IsZero() || !(Secret{}).IsZero() {
		t.Errorf("Reveal/IsZero do not hold the value")
	}
}

package pvesim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestUserListingAsPVE: API2/User.pm index shows groups and tokens only
// with full=1, realm-type is the realm's type, read_user sorts groups.
func TestUserListingAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/domains", "realm", "corp", "type", "ldap", "server1", "ldap.example.org",
		"base_dn", "dc=example,dc=org", "user_attr", "uid")
	e.ok(nil, "POST", "/access/groups", "groupid", "zeta")
	e.ok(nil, "POST", "/access/groups", "groupid", "alpha")
	e.ok(nil, "POST", "/access/users", "userid", "ann@corp", "groups", "zeta,alpha", "comment", "0")
	e.ok(nil, "POST", "/access/users", "userid", "bob@gone")
	if r := e.call("POST", "/access/users", "userid", "cy@corp", "password", "12345678"); r.Status != 500 ||
		r.Message != "create user failed: can't set password on auth type 'ldap'" {
		t.Errorf("password on an LDAP realm: got %d %q", r.Status, r.Message)
	}
	byID := func(rows []map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, r := range rows {
			out[r["userid"].(string)] = r
		}
		return out
	}
	plain := byID(e.rows("/access/users"))
	want := map[string]any{"userid": "ann@corp", "enable": float64(1), "expire": float64(0), "realm-type": "ldap"}
	if diff := cmp.Diff(want, plain["ann@corp"]); diff != "" {
		t.Errorf("ann@corp without full (-want +got)\n%s", diff)
	}
	if _, ok := plain["bob@gone"]["realm-type"]; ok {
		t.Errorf("bob@gone of a realm that does not exist has a realm-type: %v", plain["bob@gone"])
	}
	full := byID(e.rows("/access/users", "full", "1"))
	if full["ann@corp"]["groups"] != "alpha,zeta" || full["bob@gone"]["groups"] != "" {
		t.Errorf("groups with full=1: got %v and %v", full["ann@corp"], full["bob@gone"])
	}
	if _, ok := full["ann@corp"]["tokens"]; ok {
		t.Errorf("a user without tokens lists tokens: %v", full["ann@corp"])
	}
	u := e.object("/access/users/ann@corp")
	if diff := cmp.Diff([]any{"alpha", "zeta"}, u["groups"]); diff != "" || u["tokens"] != nil {
		t.Errorf("read_user: groups (-want +got)\n%s tokens %v", diff, u["tokens"])
	}

	e.ok(nil, "PUT", "/access/users/ann@corp", "groups", "zeta", "append", "1")
	if g := e.object("/access/users/ann@corp")["groups"]; len(g.([]any)) != 2 {
		t.Errorf("append of a group the user is in: got groups %v", g)
	}
	// update_user and delete_user check no existence themselves: the
	// permission check (userid-group, RPCEnvironment.pm) does, and a token
	// is never root@pam, which would skip it.
	for _, m := range []string{"PUT", "DELETE"} {
		if r := e.call(m, "/access/users/nobody@pve"); r.Status != 500 || r.Message != "no such user ('nobody@pve')" {
			t.Errorf("%s of a user that does not exist: got %d %q", m, r.Status, r.Message)
		}
	}
}

// TestTokenInfoAsPVE: generate_token answers the hash it built (expire
// only when sent); user.cfg reads a token's expire back always.
func TestTokenInfoAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve")
	var created struct {
		Info map[string]any `json:"info"`
	}
	e.ok(&created, "POST", "/access/users/ci@pve/token/ab", "comment", "0")
	if diff := cmp.Diff(map[string]any{"privsep": float64(1)}, created.Info); diff != "" {
		t.Errorf("created info (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"privsep": float64(1), "expire": float64(0)},
		e.object("/access/users/ci@pve/token/ab")); diff != "" {
		t.Errorf("read token (-want +got)\n%s", diff)
	}
	rows := e.rows("/access/users", "full", "1")
	for _, r := range rows {
		if r["userid"] == "ci@pve" {
			want := []any{map[string]any{"tokenid": "ab", "privsep": float64(1), "expire": float64(0)}}
			if diff := cmp.Diff(want, r["tokens"]); diff != "" {
				t.Errorf("listed tokens (-want +got)\n%s", diff)
			}
		}
	}
}

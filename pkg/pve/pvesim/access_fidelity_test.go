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

// TestACLKeptAsPVE: what user.cfg keeps of PUT /access/acl and what a
// role's or group's removal leaves (ACL.pm update_acl, AccessControl.pm
// write_user_config and parse_user_config, Group.pm, Role.pm).
func TestACLKeptAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve")
	e.ok(nil, "POST", "/access/roles", "roleid", "Looker", "privs", "VM.Audit")
	if r := e.call("PUT", "/access/acl", "path", "/", "roles", "Looker", "users", ""); r.Status != 400 ||
		r.Errors["users"] != "either 'users', 'groups' or 'tokens' is required." {
		t.Errorf("an empty users list: got %d %v", r.Status, r.Errors)
	}
	e.ok(nil, "PUT", "/access/acl", "path", "/", "roles", "Looker", "users", "root@pam,ci@pve")
	e.ok(nil, "PUT", "/access/acl", "path", "/vms", "roles", "PVEAuditor", "users", "ci@pve")
	acl := e.rows("/access/acl")
	want := []map[string]any{
		{"path": "/", "type": "user", "ugid": "ci@pve", "roleid": "Looker", "propagate": float64(1)},
		{"path": "/vms", "type": "user", "ugid": "ci@pve", "roleid": "PVEAuditor", "propagate": float64(1)},
	}
	if diff := cmp.Diff(want, acl); diff != "" {
		t.Errorf("acl: root@pam's entry is never written (-want +got)\n%s", diff)
	}
	e.ok(nil, "DELETE", "/access/roles/Looker")
	if diff := cmp.Diff(want[1:], e.rows("/access/acl")); diff != "" {
		t.Errorf("acl after its role went (-want +got)\n%s", diff)
	}
	e.ok(nil, "POST", "/access/roles", "roleid", "Looker", "privs", "VM.Audit")
	if diff := cmp.Diff(want[1:], e.rows("/access/acl")); diff != "" {
		t.Errorf("acl after the role came back (-want +got)\n%s", diff)
	}

	e.ok(nil, "POST", "/access/groups", "groupid", "ops", "comment", "0")
	if g := e.object("/access/groups/ops"); g["comment"] != nil {
		t.Errorf("group comment 0 kept: %v", g)
	}
	for m, msg := range map[string]string{"PUT": "update group failed: group 'nope' does not exist",
		"DELETE": "delete group failed: group 'nope' does not exist"} {
		if r := e.call(m, "/access/groups/nope"); r.Status != 500 || r.Message != msg {
			t.Errorf("%s of a group that does not exist: got %d %q, want %q", m, r.Status, r.Message, msg)
		}
	}
}

// TestRealmSyncDefaultsAsPVE: create and update of an LDAP/AD realm map
// the deprecated full/purge of sync-defaults-options to remove-vanished
// and print the value back (Domains.pm $map_sync_default_options).
func TestRealmSyncDefaultsAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/domains", "realm", "corp", "type", "ldap", "server1", "ldap.example.org",
		"base_dn", "dc=example,dc=org", "user_attr", "uid", "sync-defaults-options", "scope=users,full=1,purge=1")
	if got := e.object("/access/domains/corp")["sync-defaults-options"]; got != "remove-vanished=entry;properties;acl,scope=users" {
		t.Errorf("created: got sync-defaults-options %v", got)
	}
	e.ok(nil, "PUT", "/access/domains/corp", "sync-defaults-options", "scope=both,full=1,remove-vanished=acl,enable-new=yes")
	if got := e.object("/access/domains/corp")["sync-defaults-options"]; got != "enable-new=1,remove-vanished=acl,scope=both" {
		t.Errorf("updated: got sync-defaults-options %v", got)
	}
}

// TestAccessTextTrimmedAsPVE: user.cfg fields are read back trimmed
// (parse_user_config), and kept only when true; the token answers show
// the hash before it was written (generate_token, update_token_info).
func TestAccessTextTrimmedAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve", "comment", " spaced out ", "firstname", "  ")
	u := e.object("/access/users/ci@pve")
	if _, ok := u["firstname"]; ok || u["comment"] != "spaced out" {
		t.Errorf("user read back: %v", u)
	}
	var created struct {
		Info map[string]any `json:"info"`
	}
	e.ok(&created, "POST", "/access/users/ci@pve/token/ab", "comment", " c ")
	if created.Info["comment"] != " c " {
		t.Errorf("created info comment %q, want as sent", created.Info["comment"])
	}
	if got := e.object("/access/users/ci@pve/token/ab")["comment"]; got != "c" {
		t.Errorf("token read back: comment %q, want c", got)
	}
	var updated map[string]any
	e.ok(&updated, "PUT", "/access/users/ci@pve/token/ab", "comment", "0")
	if updated["comment"] != "0" {
		t.Errorf("update answer comment %v, want 0", updated["comment"])
	}
	if got, ok := e.object("/access/users/ci@pve/token/ab")["comment"]; ok {
		t.Errorf("token comment 0 kept: %v", got)
	}
	e.ok(nil, "POST", "/access/groups", "groupid", "ops", "comment", "  ")
	if g := e.object("/access/groups/ops"); g["comment"] != nil {
		t.Errorf("blank group comment kept: %v", g)
	}
}

// TestRealmListCommentAsPVE: Domains.pm index lists a comment only when
// true; read answers it as stored.
func TestRealmListCommentAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/domains", "realm", "corp", "type", "ldap", "server1", "ldap.example.org",
		"base_dn", "dc=example,dc=org", "user_attr", "uid", "comment", "0")
	for _, r := range e.rows("/access/domains") {
		if _, ok := r["comment"]; ok && r["realm"] == "corp" {
			t.Errorf("index lists comment %v", r["comment"])
		}
	}
	if got := e.object("/access/domains/corp")["comment"]; got != "0" {
		t.Errorf("read: comment %v, want 0", got)
	}
}

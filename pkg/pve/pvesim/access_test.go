package pvesim_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

func TestUsersTokensACL(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/groups", "groupid", "ops")
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve", "email", "ci@example.org", "groups", "ops", "comment", "CI")
	if r := e.call("POST", "/access/users", "userid", "ci@pve"); r.Status != 500 {
		t.Errorf("got %d creating a duplicate user, want 500", r.Status)
	}
	// create_user looks the realm up only to set a password
	// (domain_set_password).
	if r := e.call("POST", "/access/users", "userid", "x@nowhere", "password", "12345678"); r.Status != 500 ||
		r.Message != "create user failed: auth domain 'nowhere' does not exist" {
		t.Errorf("got %d %q for an unknown realm with a password, want 500 auth domain", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/access/users", "userid", "x@nowhere")
	e.ok(nil, "DELETE", "/access/users/x@nowhere")

	var created struct {
		Full  string         `json:"full-tokenid"`
		Info  map[string]any `json:"info"`
		Value string         `json:"value"`
	}
	e.ok(&created, "POST", "/access/users/ci@pve/token/deploy", "comment", "deploy", "privsep", "1")
	if created.Full != "ci@pve!deploy" || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(created.Value) ||
		created.Info["privsep"] != float64(1) {
		t.Errorf("got token %+v", created)
	}
	tok := e.object("/access/users/ci@pve/token/deploy")
	if _, leaked := tok["value"]; leaked || tok["comment"] != "deploy" {
		t.Errorf("got token info %v, want comment and no value", tok)
	}
	if r := e.call("POST", "/access/users/ci@pve/token/deploy"); r.Status != 400 || r.Errors["tokenid"] != "Token already exists." {
		t.Errorf("got %d %v creating a duplicate token, want 400 tokenid: Token already exists.", r.Status, r.Errors)
	}

	e.ok(nil, "PUT", "/access/acl", "path", "/vms/100", "roles", "PVEVMAdmin", "tokens", "ci@pve!deploy", "propagate", "0")
	e.ok(nil, "PUT", "/access/acl", "path", "/storage", "roles", "PVEDatastoreUser", "groups", "ops")
	if r := e.call("PUT", "/access/acl", "path", "/", "roles", "NoSuchRole", "users", "ci@pve"); r.Status != 500 {
		t.Errorf("got %d for an unknown role, want 500", r.Status)
	}
	acl := e.rows("/access/acl")
	want := []map[string]any{
		{"path": "/storage", "type": "group", "ugid": "ops", "roleid": "PVEDatastoreUser", "propagate": float64(1)},
		{"path": "/vms/100", "type": "token", "ugid": "ci@pve!deploy", "roleid": "PVEVMAdmin", "propagate": float64(0)},
	}
	if diff := cmp.Diff(want, acl); diff != "" {
		t.Errorf("acl (-want +got)\n%s", diff)
	}
	e.ok(nil, "PUT", "/access/acl", "path", "/vms/100", "roles", "PVEVMAdmin", "tokens", "ci@pve!deploy", "delete", "1")
	e.ok(nil, "PUT", "/access/users/ci@pve", "groups", "", "email", "new@example.org")

	u := e.object("/access/users/ci@pve")
	if u["email"] != "new@example.org" || len(u["groups"].([]any)) != 0 || u["tokens"].(map[string]any)["deploy"] == nil {
		t.Errorf("got user %v", u)
	}
	e.ok(nil, "DELETE", "/access/users/ci@pve")
	e.ok(nil, "DELETE", "/access/groups/ops")
	acl = nil
	e.ok(&acl, "GET", "/access/acl")
	if len(acl) != 0 {
		t.Errorf("got acl %v after deleting its subjects, want none", acl)
	}
	users := e.rows("/access/users", "full", "1")
	if len(users) != 1 || users[0]["userid"] != "root@pam" || len(users[0]["tokens"].([]any)) != 1 {
		t.Errorf("got users %v, want root@pam with the simulator token", users)
	}
}

// TestAccessCleanupAsPVE: what PVE removes by itself with a user, a
// token, a pool, a guest or a storage, and what a token update refuses.
func TestAccessCleanupAsPVE(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve")
	e.ok(nil, "POST", "/access/users/ci@pve/token/deploy", "comment", "c", "expire", "4102444800")
	e.ok(nil, "POST", "/pools", "poolid", "lab")
	e.ok(nil, "POST", "/storage", "storage", "nfs1", "type", "nfs", "server", "10.0.0.1", "export", "/x", "content", "images")
	e.run("POST", "/nodes/pve/qemu", "vmid", "150", "memory", "512")
	for _, p := range []string{"/pool/lab", "/vms/150", "/storage/nfs1", "/"} {
		e.grant(p, "PVEAuditor", "tokens", "ci@pve!deploy")
		e.grant(p, "PVEAuditor", "users", "ci@pve")
	}
	acls := func() []string {
		acl := e.rows("/access/acl")
		var out []string
		for _, a := range acl {
			out = append(out, a["path"].(string)+" "+a["ugid"].(string))
		}
		return out
	}

	// update_token_info deletes only the comment; expire is set to 0.
	// The refusal is raised inside lock_user_config: a 500 with its text.
	if r := e.call("PUT", "/access/users/ci@pve/token/deploy", "delete", "expire"); r.Status != 500 ||
		!strings.Contains(r.Message, "updating token info failed: 400 Parameter verification failed.") ||
		!strings.Contains(r.Message, "delete: unknown option 'expire'") {
		t.Errorf("delete=expire: got %d %q, want 500 updating token info failed", r.Status, r.Message)
	}
	e.ok(nil, "PUT", "/access/users/ci@pve/token/deploy", "delete", "comment", "expire", "0")
	tok := e.object("/access/users/ci@pve/token/deploy")
	// user.cfg reads a token's expire back always, 0 for none.
	if diff := cmp.Diff(map[string]any{"privsep": float64(1), "expire": float64(0)}, tok); diff != "" {
		t.Errorf("token after the update (-want +got)\n%s", diff)
	}

	e.ok(nil, "DELETE", "/pools/lab")
	e.run("DELETE", "/nodes/pve/qemu/150")
	e.ok(nil, "DELETE", "/storage/nfs1")
	if diff := cmp.Diff([]string{"/ ci@pve", "/ ci@pve!deploy"}, acls()); diff != "" {
		t.Errorf("ACLs after their pool, guest and storage went (-want +got)\n%s", diff)
	}
	e.ok(nil, "DELETE", "/access/users/ci@pve/token/deploy")
	if diff := cmp.Diff([]string{"/ ci@pve"}, acls()); diff != "" {
		t.Errorf("ACLs after the token went (-want +got)\n%s", diff)
	}
	e.ok(nil, "DELETE", "/access/users/ci@pve")
	if got := acls(); len(got) != 0 {
		t.Errorf("ACLs after the user went: %v, want none", got)
	}
}

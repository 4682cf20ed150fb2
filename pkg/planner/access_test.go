package planner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

const accessSpec = `kind: Pool
name: lab
---
kind: User
name: ci@pve
spec:
  comment: CI deployer
  email: ci@example.org
  groups: [ops]
  enable: true
---
kind: APIToken
name: deploy
spec:
  userid: ci@pve
  privsep: true
  secretFile: secrets/deploy.token
---
kind: APIToken
name: shown
spec:
  userid: ci@pve
  comment: printed once
---
kind: ACL
name: deploy-lab
spec:
  path: /pool/lab
  tokens: ci@pve!deploy
  roles: PVEVMAdmin
`

// wantSays checks that err says each of wants.
func wantSays(t *testing.T, err error, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant it to say %q", err, want)
		}
	}
}

// authenticates reports whether PVE takes id with secret (its own
// permissions are always readable).
func authenticates(t *testing.T, sim *simClients, id, secret string) bool {
	t.Helper()
	cl, err := pve.NewClient(sim.conn.URL, pve.WithToken(id, secret))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Permissions(context.Background())
	return err == nil
}

func changesOf(p *engine.Plan) map[string]*engine.Change {
	out := map[string]*engine.Change{}
	for _, c := range p.Changes {
		out[c.Address] = c
	}
	return out
}

func wantClean(t *testing.T, p *engine.Plan, when string) {
	t.Helper()
	for _, c := range p.Changes {
		if c.Action != engine.NoOp {
			t.Errorf("%s: got %s %s %v %v, want noop", when, c.Action, c.Address, c.Diff, c.Reasons)
		}
	}
}

func TestSimAccessLifecycle(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	for _, g := range []string{"ops", "dev"} {
		if err := sim.cl.Do(ctx, http.MethodPost, "/access/groups", url.Values{"groupid": {g}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	set := loadSpecIn(t, dir, accessSpec)
	secretFile := filepath.Join(dir, "secrets", "deploy.token")

	// 1. Everything is created in dependency order; the token's secret
	// goes to its file, the other token's to the one-time output.
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "first plan", p, []string{
		"create Pool/lab",
		"create User/ci@pve",
		"create APIToken/deploy <- User/ci@pve",
		"create ACL/deploy-lab <- APIToken/deploy,Pool/lab,User/ci@pve",
		"create APIToken/shown <- User/ci@pve",
	})
	planJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	_, h := applyHooked(t, sim, p)
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatalf("secretFile: %v", err)
	}
	if fi, _ := os.Stat(secretFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("secretFile mode: got %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(secretFile)); fi.Mode().Perm() != 0o700 {
		t.Errorf("secretFile's directory mode: got %v, want 0700", fi.Mode().Perm())
	}
	if !authenticates(t, sim, "ci@pve!deploy", string(secret)) {
		t.Errorf("the secret in secretFile does not authenticate the token")
	}
	if len(h.outputs) != 1 || h.outputs[0].addr != "APIToken/shown" || !h.outputs[0].sensitive {
		t.Fatalf("outputs: got %+v, want one sensitive output of APIToken/shown", h.outputs)
	}
	shown := h.outputs[0].value
	if !authenticates(t, sim, "ci@pve!shown", shown) {
		t.Errorf("the secret handed to Output does not authenticate the token")
	}
	for _, s := range []string{string(secret), shown} {
		if strings.Contains(string(planJSON)+strings.Join(h.messages, "\n"), s) {
			t.Errorf("a token secret is in the plan or a message")
		}
	}
	users, err := sim.cl.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pve.ConfigOf(map[string]string{"userid": "ci@pve", "comment": "CI deployer", "email": "ci@example.org", "enable": "1", "expire": "0", "groups": "ops", "realm-type": "pve"}),
		users["ci@pve"].Config); diff != "" {
		t.Errorf("user in PVE (-want +got):\n%s", diff)
	}

	// 2. The second plan is clean.
	wantClean(t, planFor(t, sim, set, engine.Options{}), "second plan")

	// 3. Changes in place: the user's settings and full set of groups, a
	// token's comment and privsep, the grant's propagate flag.
	edited := strings.NewReplacer(
		"  email: ci@example.org\n", "  email: null\n  expire: 4102444800\n",
		"groups: [ops]", "groups: [dev]",
		"  privsep: true\n", "  privsep: false\n  comment: deploys\n",
		"  comment: printed once\n", "  comment: null\n",
		"  roles: PVEVMAdmin\n", "  roles: PVEVMAdmin\n  propagate: false\n",
	).Replace(accessSpec)
	set = loadSpecIn(t, dir, edited)
	p = planFor(t, sim, set, engine.Options{})
	got := map[string][]engine.FieldDiff{}
	for addr, c := range changesOf(p) {
		if c.Action != engine.NoOp {
			if c.Action != engine.Update {
				t.Errorf("%s: got %s, want an update in place", addr, c.Action)
			}
			got[addr] = c.Diff
		}
	}
	if diff := cmp.Diff(map[string][]engine.FieldDiff{
		"User/ci@pve": {
			{Path: "email", Before: "ci@example.org", After: nil},
			{Path: "expire", Before: "0", After: "4102444800"},
			{Path: "groups", Before: "ops", After: "dev"},
		},
		"APIToken/deploy": {{Path: "comment", Before: nil, After: "deploys"}, {Path: "privsep", Before: "1", After: "0"}},
		"APIToken/shown":  {{Path: "comment", Before: "printed once", After: nil}},
		"ACL/deploy-lab":  {{Path: "propagate", Before: "1", After: "0"}},
	}, got); diff != "" {
		t.Errorf("edited plan (-want +got):\n%s", diff)
	}
	_, h = applyHooked(t, sim, p)
	if len(h.outputs) != 0 {
		t.Errorf("an update in place handed out %d secrets", len(h.outputs))
	}
	wantClean(t, planFor(t, sim, set, engine.Options{}), "plan after the edits")
	if s, _ := os.ReadFile(secretFile); string(s) != string(secret) {
		t.Errorf("an update in place changed the secret")
	}

	// 4. A lost secretFile: the token gets a new secret, written there;
	// the old one stops working.
	if err := os.Remove(secretFile); err != nil {
		t.Fatal(err)
	}
	p = planFor(t, sim, set, engine.Options{})
	c := changesOf(p)["APIToken/deploy"]
	if c.Action != engine.Update || c.Params["regenerate"] != "1" || !strings.Contains(strings.Join(c.Reasons, " "), "STOPS WORKING") {
		t.Fatalf("lost secretFile: got %s %v %v, want a loud regenerate", c.Action, c.Params, c.Reasons)
	}
	applyPlan(t, sim, p)
	renewed, err := os.ReadFile(secretFile)
	if err != nil || string(renewed) == string(secret) {
		t.Fatalf("secretFile after regenerate: %v (same secret: %v)", err, string(renewed) == string(secret))
	}
	if authenticates(t, sim, "ci@pve!deploy", string(secret)) || !authenticates(t, sim, "ci@pve!deploy", string(renewed)) {
		t.Errorf("after regenerate the old secret must fail and the new one work")
	}
	wantClean(t, planFor(t, sim, set, engine.Options{}), "plan after regenerate")

	// 5. Another role for the same grant: a new grant, and the plan says
	// the old one stays.
	set = loadSpecIn(t, dir, strings.Replace(edited, "roles: PVEVMAdmin", "roles: PVEVMUser", 1))
	c = changesOf(planFor(t, sim, set, engine.Options{}))["ACL/deploy-lab"]
	if c.Action != engine.Create || !strings.Contains(strings.Join(c.Reasons, " "), "token ci@pve!deploy also holds PVEVMAdmin on /pool/lab, which no ACL of these specs grants") {
		t.Errorf("role change: got %s %v, want a create that names the old role", c.Action, c.Reasons)
	}

	// 6. Destroy: the grant, the tokens (and secretFile), the user, the pool.
	set = loadSpecIn(t, dir, edited)
	p = planFor(t, sim, set, engine.Options{Destroy: true})
	if diff := cmp.Diff([]string{
		"delete ACL/deploy-lab",
		"delete APIToken/deploy <- ACL/deploy-lab",
		"delete APIToken/shown",
		"delete Pool/lab <- ACL/deploy-lab",
		"delete User/ci@pve <- ACL/deploy-lab,APIToken/deploy,APIToken/shown",
	}, summary(p)); diff != "" {
		t.Errorf("destroy plan (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	if _, err := os.Stat(secretFile); !os.IsNotExist(err) {
		t.Errorf("secretFile after destroy: %v, want it removed", err)
	}
	if users, _ := sim.cl.Users(ctx); len(users) != 1 || users["root@pam"] == nil {
		t.Errorf("users after destroy: %v, want root@pam only", users)
	}
	if acl, _ := sim.cl.ACL(ctx); len(acl) != 0 {
		t.Errorf("ACL after destroy: %v, want none", acl)
	}
	wantClean(t, planFor(t, sim, set, engine.Options{Destroy: true}), "second destroy")
}

// TestSimAccessPreflight: an under-privileged token is told, before any
// plan, what reading users, tokens and grants needs; with the right to
// read them but not to change them, what the changes need.
func TestSimAccessPreflight(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ops@pve", "plan")
	set := loadSpec(t, strings.Replace(accessSpec, "secretFile: secrets/deploy.token", "comment: x", 1))
	ctx := context.Background()
	plan := func() error {
		_, err := tryPlan(t, tok, set, engine.Options{})
		return err
	}
	err := plan()
	wantSays(t, err,
		"User/ci@pve: the API token ops@pve!plan lacks User.Modify or Sys.Audit on /access/groups, needed to see the user",
		"APIToken/deploy: the API token ops@pve!plan lacks User.Modify or Sys.Audit on /access/groups, needed to see the token",
		"ACL/deploy-lab: the API token ops@pve!plan lacks Permissions.Modify or Pool.Allocate on /pool/lab (or Sys.Audit on /access), needed to see the grant",
	)

	// Auditing is enough to read, not to change.
	grantBoth(t, admin, "ops@pve", id, "/", "PVEAuditor")
	err = plan()
	wantSays(t, err,
		"User/ci@pve: the API token ops@pve!plan lacks Realm.AllocateUser on /access/realm/pve, needed to create a user of realm pve",
		"User/ci@pve: the API token ops@pve!plan lacks User.Modify on /access/groups, needed to create the user",
		"APIToken/deploy: the API token ops@pve!plan lacks User.Modify on /access/groups, needed to create the API token",
		"ACL/deploy-lab: the API token ops@pve!plan lacks Permissions.Modify or Pool.Allocate on /pool/lab, needed to create role PVEVMAdmin on /pool/lab to token ci@pve!deploy",
	)

	// With the rights, it plans and applies, and plans clean afterwards.
	// A deeper ACL replaces what a user or token inherits (PVE's roles),
	// so the rights are one role on /: without Permissions.Modify, the
	// token may grant PVEVMAdmin because it holds all of its privileges.
	privs := []string{"Sys.Audit", "User.Modify", "Realm.AllocateUser", "Pool.Audit", "Pool.Allocate"}
	for p := range acl.BuiltinRoles()["PVEVMAdmin"] {
		privs = append(privs, p)
	}
	if err := admin.cl.Do(ctx, http.MethodPost, "/access/roles", url.Values{"roleid": {"Deployer"}, "privs": {strings.Join(privs, ",")}}, nil); err != nil {
		t.Fatal(err)
	}
	grantBoth(t, admin, "ops@pve", id, "/", "Deployer")
	if err := admin.cl.Do(ctx, http.MethodPost, "/access/groups", url.Values{"groupid": {"ops"}}, nil); err != nil {
		t.Fatal(err)
	}
	p := planFor(t, tok, set, engine.Options{})
	applyPlan(t, tok, p)
	wantClean(t, planFor(t, tok, set, engine.Options{}), "plan after apply")
}

func TestPermNeedsOfAGrant(t *testing.T) {
	r := &spec.Resource{Kind: "ACL", Name: "g", Params: spec.ParamsOf(map[string]string{"path": "/vms/100", "users": "a@pve", "roles": "PVEVMUser"})}
	var got []string
	for _, n := range engine.CallNeeds((aclKind{}).ChangeCalls(&engine.Change{Action: engine.Create, Resource: r}, nil)) {
		s := n.Path + " " + engine.PrivList(n)
		for _, a := range n.Alt {
			s += " | " + a.Path + " " + engine.PrivList(a)
		}
		got = append(got, s)
	}
	want := []string{
		"/vms/100 Permissions.Modify or VM.Allocate",
		"/vms/100 Permissions.Modify | /vms/100 VM.Audit and VM.Backup and VM.Config.CDROM and VM.Config.Cloudinit and VM.Console and VM.GuestAgent.Audit and VM.GuestAgent.FileRead and VM.GuestAgent.FileSystemMgmt and VM.GuestAgent.FileWrite and VM.PowerMgmt",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("needs of granting PVEVMUser (-want +got):\n%s", diff)
	}
}

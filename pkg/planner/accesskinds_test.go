package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

const accessKindsSpec = `kind: Role
name: operators
spec:
  privs: VM.PowerMgmt,VM.Audit
---
kind: Group
name: ops
spec:
  comment: Operators
---
kind: ACL
name: ops-grant
spec:
  path: /vms
  groups: ops
  roles: operators
---
kind: Realm
name: corp
spec:
  type: ldap
  server1: 127.0.0.5
  base_dn: dc=corp,dc=example
  user_attr: uid
  bind_dn: cn=pve,dc=corp,dc=example
  password: ${LDAP_BIND_PW}
  comment: Corporate directory
---
kind: RealmSyncJob
name: corp-nightly
spec:
  realm: corp
  schedule: daily
  scope: both
  enable-new: true
---
kind: ClusterOptions
name: cluster
spec:
  keyboard: de
  migration: {type: secure}
  next-id: {lower: 1000, upper: 9999}
  description: Lab cluster
---
kind: MetricServer
name: influx
spec:
  type: influxdb
  server: 127.0.0.7
  port: 8089
  token: ${INFLUX_TOKEN}
`

// TestSimAccessKindsLifecycle: one apply makes a role, a group, an ACL
// granting the role to the group (after both), an LDAP realm with its
// bind password, a sync job of it, the cluster's options and a metric
// server; the next plan is clean; a hand edit is found and restored;
// destroy removes them all but the options.
func TestSimAccessKindsLifecycle(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, accessKindsSpec)
	applyCounted(t, sim, set, "first plan", engine.Create, 6)
	if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
		t.Fatalf("second plan: got %q want clean: %+v", summary(p), p.Changes)
	}
	get := getter(t, sim.cl)
	if c := get("/access/domains/corp"); c.Get("server1") != "127.0.0.5" || c.Get("password") != "" {
		t.Errorf("realm: got %v", c)
	}
	if c := get("/cluster/metrics/server/influx"); c.Get("port") != "8089" || c.Get("token") != "" {
		t.Errorf("metric server: got %v", c)
	}
	opts := get("/cluster/options")
	if !strings.Contains(opts.Get("description"), "[pvectl-options: description,keyboard,migration,next-id]") || opts.Get("keyboard") != "de" {
		t.Errorf("cluster options: got %v", opts)
	}

	// Hand edits: the plan shows them, apply restores them.
	for _, call := range []struct{ path, key, val string }{
		{"/access/roles/operators", "privs", "VM.Audit"},
		{"/access/groups/ops", "comment", "changed"},
		{"/access/domains/corp", "server1", "127.0.0.6"},
		{"/cluster/jobs/realm-sync/corp-nightly", "schedule", "weekly"},
		{"/cluster/options", "keyboard", "fr"},
		{"/cluster/metrics/server/influx", "port", "9999"},
	} {
		params := map[string][]string{call.key: {call.val}}
		if strings.Contains(call.path, "metrics") {
			params["server"] = []string{"127.0.0.7"}
		}
		if err := sim.cl.Do(ctx, "PUT", call.path, params, nil); err != nil {
			t.Fatalf("PUT %s: %v", call.path, err)
		}
	}
	applyCounted(t, sim, set, "plan after hand edits", engine.Update, 6)
	wantConverged(t, t.Fatalf, sim, set, "plan after restore")

	// A key the spec drops is deleted: pvectl wrote it.
	dropped := loadSpec(t, strings.Replace(accessKindsSpec, "  keyboard: de\n", "", 1))
	p := planFor(t, sim, dropped, engine.Options{})
	applyPlan(t, sim, p)
	if opts := get("/cluster/options"); opts.Get("keyboard") != "" {
		t.Errorf("dropped keyboard: still %q", opts.Get("keyboard"))
	}

	d := planFor(t, sim, set, engine.Options{Destroy: true})
	applyPlan(t, sim, d)
	for _, list := range []struct{ path, idKey, id string }{
		{"/access/roles", "roleid", "operators"}, {"/access/groups", "groupid", "ops"},
		{"/access/domains", "realm", "corp"}, {"/cluster/jobs/realm-sync", "id", "corp-nightly"},
		{"/cluster/metrics/server", "id", "influx"},
	} {
		var rows []*pve.Config
		if err := sim.cl.Do(ctx, "GET", list.path, nil, &rows); err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if row.Get(list.idKey) == list.id {
				t.Errorf("destroy left %s %s", list.path, list.id)
			}
		}
	}
}

func countAction(p *engine.Plan, a engine.Action) int {
	return countWhere(p.Changes, func(c *engine.Change) bool { return c.Action == a })
}

// getter is a GET of a path of cl's API that must work.
func getter(t *testing.T, cl *pve.Client) func(path string) *pve.Config {
	return func(path string) *pve.Config {
		t.Helper()
		var cfg *pve.Config
		if err := cl.Do(context.Background(), "GET", path, nil, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
}

// TestSimAccessKindsPermissions: a token that may read everything but
// change nothing is refused at plan time, each kind naming the privilege
// its calls need where PVE checks it; granted exactly those, the apply
// goes through the simulator's own permission checks.
func TestSimAccessKindsPermissions(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ci@pve", "access")
	grantBoth(t, admin, "ci@pve", id, "/", "PVEAuditor")
	set := loadSpec(t, accessKindsSpec)
	ctx := context.Background()
	_, err := tryPlan(t, tok, set, engine.Options{})
	wantSays(t, err,
		"Role/operators: the API token ci@pve!access lacks Sys.Modify on /access",
		"Group/ops: the API token ci@pve!access lacks Group.Allocate on /access/groups",
		"Realm/corp: the API token ci@pve!access lacks Realm.Allocate on /access/realm",
		"RealmSyncJob/corp-nightly: the API token ci@pve!access lacks Realm.AllocateUser on /access/realm/corp",
		"ClusterOptions/cluster: the API token ci@pve!access lacks Sys.Modify on /",
		"MetricServer/influx: the API token ci@pve!access lacks Sys.Modify on /",
	)
	if err := admin.cl.Do(ctx, "POST", "/access/roles", map[string][]string{"roleid": {"AccessAdmin"},
		"privs": {"Sys.Modify,Sys.Audit,Group.Allocate,Realm.Allocate,Realm.AllocateUser,User.Modify,Permissions.Modify"}}, nil); err != nil {
		t.Fatal(err)
	}
	grantBoth(t, admin, "ci@pve", id, "/", "AccessAdmin")
	p := planFor(t, tok, set, engine.Options{})
	applyPlan(t, tok, p)
	wantConverged(t, t.Errorf, tok, set, "plan after apply as the token")
}

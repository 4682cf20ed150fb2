package planner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/spec"
)

// The needs the planner derives from a kind's declared calls are exactly
// what the simulator checks when apply makes them: a token holding only
// those privileges (each on its path alone, not propagated) plans the
// change, applies it and then plans clean; when any one of the change's
// needs is taken away between plan and apply, the simulator refuses a
// call with 403 and the change fails.

// exactCase is one change of one kind: before is made by the admin
// first, then the plan to after (or its destroy) is applied by the token.
type exactCase struct {
	name, before, after string
	destroy             bool
	// setup is made by the admin before before.
	setup string
}

// planNeeds are the plan's change needs and the read needs of its
// resources (what apply's verification and the next plan read).
func planNeeds(t *testing.T, set *spec.Set, p *Plan) (reads, changes []permNeed) {
	t.Helper()
	for _, r := range set.Resources {
		k, err := kindOf(r.Kind)
		if err != nil {
			t.Fatal(err)
		}
		if needs, ok := readNeeds(k, r); ok {
			reads = append(reads, needs...)
		}
	}
	seen := map[string]bool{}
	for _, c := range p.Changes {
		for _, n := range c.Needs {
			if key := needKey(n.internal()); !seen[key] { // two changes may share one
				seen[key] = true
				changes = append(changes, n.internal())
			}
		}
	}
	return reads, changes
}

// grantExactly gives user and its token each need's privileges (all of
// them, or the first for any-of) on the need's own path, without
// propagation, through custom roles.
func grantExactly(t *testing.T, admin *simClients, user, token string, needs []permNeed) {
	t.Helper()
	ctx := context.Background()
	for i, n := range needs {
		if n.rootOnly {
			t.Fatalf("a root-only need cannot be granted: %s", n.why)
		}
		privs := n.privs
		if n.anyOf {
			privs = privs[:1]
		}
		role := fmt.Sprintf("exact%d", i)
		if err := admin.cl.Do(ctx, http.MethodPost, "/access/roles", url.Values{"roleid": {role}, "privs": {strings.Join(privs, ",")}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := admin.cl.Do(ctx, http.MethodPut, "/access/acl", url.Values{"path": {n.path}, "roles": {role},
			"users": {user}, "tokens": {token}, "propagate": {"0"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// runExact plans tc as a token holding exactly the derived needs (the
// admin plans first to learn them), takes the change need drop away
// again (-1: none), and applies; it returns the apply's failures.
func runExact(t *testing.T, tc exactCase, drop int) (changes []permNeed, failed error) {
	t.Helper()
	admin := newSim(t)
	if tc.setup != "" {
		applyPlan(t, admin, planFor(t, admin, loadSpec(t, tc.setup), Options{}))
	}
	if tc.before != "" {
		applyPlan(t, admin, planFor(t, admin, loadSpec(t, tc.before), Options{}))
	}
	set := loadSpec(t, tc.after)
	reads, changes := planNeeds(t, set, planFor(t, admin, set, Options{Destroy: tc.destroy}))
	tok, id := asToken(t, admin, "exact@pve", "apply")
	grantExactly(t, admin, "exact@pve", id, append(append([]permNeed{}, reads...), changes...))
	p := planFor(t, tok, set, Options{Destroy: tc.destroy})
	if !p.HasChanges() {
		t.Fatalf("%s: the token's plan changes nothing", tc.name)
	}
	if drop >= 0 {
		n := changes[drop]
		if err := admin.cl.Do(context.Background(), http.MethodPut, "/access/acl", url.Values{"path": {n.path},
			"roles": {fmt.Sprintf("exact%d", len(reads)+drop)}, "users": {"exact@pve"}, "tokens": {id}, "delete": {"1"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Apply(context.Background(), tok, p, ApplyOptions{Hooks: &recHooks{}})
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for a, e := range res.Failed {
		errs = append(errs, fmt.Errorf("%s: %w", a, e))
	}
	if drop < 0 && len(errs) == 0 && !tc.destroy {
		if after := planFor(t, tok, set, Options{}); after.HasChanges() {
			errs = append(errs, fmt.Errorf("the token's plan after apply: %s", summary(after)))
		}
	}
	return changes, errors.Join(errs...)
}

func checkExact(t *testing.T, cases []exactCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := runExact(t, tc, -1)
			if err != nil {
				t.Fatalf("with exactly the derived needs %v: %v", changes, err)
			}
			for i, n := range changes {
				if _, err := runExact(t, tc, i); err == nil || !strings.Contains(err.Error(), "403") {
					t.Errorf("without %s on %s (%s): got %v, want a 403", privList(n), n.path, n.why, err)
				}
			}
		})
	}
}

// TestSimDerivedNeedsExactClusterKinds covers the cluster-wide and node
// kinds whose calls are declared.
func TestSimDerivedNeedsExactClusterKinds(t *testing.T) {
	nfs := "kind: Storage\nname: nfs-images\nspec:\n  type: nfs\n  server: 127.0.0.9\n  export: /srv/images\n  content: iso\n"
	group := "kind: SecurityGroup\nname: web\nspec:\n  comment: web\n  rules:\n    - {type: in, action: ACCEPT, macro: HTTPS}\n"
	pool := "kind: Pool\nname: team\nspec:\n  comment: the team\n"
	checkExact(t, []exactCase{
		{name: "Pool create", after: pool},
		{name: "Pool update", before: pool, after: "kind: Pool\nname: team\nspec:\n  comment: renamed\n"},
		{name: "Pool delete", before: pool, after: pool, destroy: true},
		{name: "ClusterOptions update", after: "kind: ClusterOptions\nname: cluster\nspec:\n  keyboard: de\n"},
		{name: "NodeDns update", after: "kind: NodeDns\nname: pve\nspec:\n  search: example.org\n"},
		{name: "Storage create", after: nfs},
		{name: "Storage update", before: nfs, after: strings.Replace(nfs, "iso", "iso,images", 1)},
		{name: "Storage delete", before: nfs, after: nfs, destroy: true},
		{name: "SecurityGroup create", after: group},
		{name: "SecurityGroup update", before: group, after: strings.Replace(group, "HTTPS", "SSH", 1)},
		{name: "SecurityGroup delete", before: group, after: group, destroy: true},
	})
}

// TestSimDerivedNeedsExactNodeKinds covers interfaces with their commit
// and the files a storage keeps.
func TestSimDerivedNeedsExactNodeKinds(t *testing.T) {
	bridge := "kind: LinuxBridge\nname: vmbr7\nspec:\n  comments: lab\n---\nkind: NetworkApply\nname: pve\n"
	img := "kind: DownloadedImage\nname: img\nspec:\n  node: pve\n  storage: local\n  content: iso\n  filename: amb.iso\n  url: https://127.0.0.1/amb.iso\n"
	drive := "kind: ConfigDriveISO\nname: seed-amb\nspec:\n  storage: local\n  hostname: amb\n"
	checkExact(t, []exactCase{
		{name: "LinuxBridge create", after: bridge},
		{name: "LinuxBridge update", before: bridge, after: strings.Replace(bridge, "lab", "lab 2", 1)},
		{name: "LinuxBridge delete", before: bridge, after: bridge, destroy: true},
		{name: "DownloadedImage create", after: img},
		{name: "DownloadedImage delete", before: img, after: img, destroy: true},
		{name: "ConfigDriveISO create", after: drive},
		{name: "ConfigDriveISO update", before: drive, after: strings.Replace(drive, "amb\n", "amb2\n", 1)},
		{name: "ConfigDriveISO delete", before: drive, after: drive, destroy: true},
	})
}

// TestSimDerivedNeedsExactConfigKinds covers the kinds of section configs
// (user.cfg, jobs.cfg, ha, status.cfg).
func TestSimDerivedNeedsExactConfigKinds(t *testing.T) {
	group := "kind: Group\nname: ops\nspec:\n  comment: operators\n"
	role := "kind: Role\nname: Operator\nspec:\n  privs: [VM.Audit, VM.Console]\n"
	metric := "kind: MetricServer\nname: graph\nspec:\n  type: graphite\n  server: 127.0.0.7\n  port: 2003\n"
	vm := "kind: QemuVM\nname: app\nspec:\n  vmid: 100\n  memory: 512\n"
	ha := "kind: HAResource\nname: app\nspec:\n  guest: 100\n  state: stopped\n  comment: app\n"
	backup := "kind: BackupJob\nname: nightly\nspec:\n  schedule: \"21:00\"\n  all: true\n  storage: local\n"
	checkExact(t, []exactCase{
		{name: "Group create", after: group},
		{name: "Group update", before: group, after: strings.Replace(group, "operators", "ops", 1)},
		{name: "Group delete", before: group, after: group, destroy: true},
		{name: "Role create", after: role},
		{name: "Role update", before: role, after: strings.Replace(role, "VM.Console", "VM.PowerMgmt", 1)},
		{name: "Role delete", before: role, after: role, destroy: true},
		{name: "MetricServer create", after: metric},
		{name: "MetricServer update", before: metric, after: strings.Replace(metric, "2003", "2004", 1)},
		{name: "MetricServer delete", before: metric, after: metric, destroy: true},
		{name: "HAResource create", before: vm, after: ha},
		{name: "HAResource update", setup: vm, before: ha, after: strings.Replace(ha, "comment: app", "comment: app 2", 1)},
		{name: "HAResource delete", setup: vm, before: ha, after: ha, destroy: true},
		{name: "BackupJob create", after: backup},
		{name: "BackupJob update", before: backup, after: strings.Replace(backup, "21:00", "22:00", 1)},
		{name: "BackupJob delete", before: backup, after: backup, destroy: true},
	})
}

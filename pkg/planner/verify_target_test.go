package planner

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Tests for problems a new-user review found: plans tied to their cluster,
// targets not blocked by unrelated resources, the node of a create shown,
// task warnings surfaced, staged network changes nobody commits.

// newSimWith starts pvesim with opts (token and fast tasks filled in).
func newSimWith(t *testing.T, opts pvesim.Options) *simClients {
	t.Helper()
	opts.TokenID, opts.TokenSecret, opts.TaskDuration, opts.Seed = simToken, simSecret, time.Millisecond, 1
	s := simtest.Start(t, simtest.Options{Sim: opts})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
}

func TestSimVerifyRefusesOtherCluster(t *testing.T) {
	a, b := newSim(t), newSim(t)
	ctx := context.Background()
	p := planFor(t, a, loadSpec(t, "kind: Pool\nname: team\n"), engine.Options{})
	if diff := cmp.Diff(map[string]string{"": a.cl.BaseURL()}, p.Endpoints); diff != "" {
		t.Errorf("endpoints: got %v (-want +got):\n%s", p.Endpoints, diff)
	}
	saved := savedPlan(t, p)
	if diff := cmp.Diff(p.Endpoints, saved.Endpoints); diff != "" {
		t.Errorf("endpoints after a file round trip (-want +got):\n%s", diff)
	}
	if err := engine.Verify(ctx, a, saved); err != nil {
		t.Errorf("Verify against the planned cluster: got %v want nil", err)
	}
	// B has no pool "team" either, so only the endpoint tells them apart.
	err := engine.Verify(ctx, b, saved)
	want := "default connection: plan was made against " + a.cl.BaseURL() + ", the connection now points at " + b.cl.BaseURL() + ": run plan again"
	if err == nil || err.Error() != want {
		t.Errorf("Verify against another cluster: got %v want %q", err, want)
	}
}

// namedClients serves clients by connection name.
type namedClients map[string]*pve.Client

func (n namedClients) Client(name string) (*pve.Client, error) {
	if cl := n[name]; cl != nil {
		return cl, nil
	}
	return nil, errors.New("unknown connection " + name)
}
func (n namedClients) Connection(string) *spec.Connection { return nil }

func TestVerifyEndpoints(t *testing.T) {
	newClient := func(url string) *pve.Client {
		cl, err := pve.NewClient(url)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	one, two := newClient("http://127.0.0.1:8006"), newClient("http://127.0.0.1:8007")
	clients := namedClients{"": one, "lab": two}
	pool := func(conn string, a engine.Action) *engine.Change {
		return &engine.Change{Address: "Pool/" + conn, Action: a, Resource: &spec.Resource{Kind: spec.KindPool, Name: conn, Connection: conn}}
	}
	tests := []struct {
		name      string
		endpoints map[string]string
		changes   []*engine.Change
		wantErr   string
	}{
		{name: "same endpoints", endpoints: map[string]string{"": one.BaseURL(), "lab": two.BaseURL()},
			changes: []*engine.Change{pool("", engine.Create), pool("lab", engine.Create)}},
		{name: "plan without endpoints is not checked", changes: []*engine.Change{pool("", engine.Create)}},
		{name: "named connection moved", endpoints: map[string]string{"": one.BaseURL(), "lab": one.BaseURL()},
			changes: []*engine.Change{pool("", engine.Create), pool("lab", engine.Create)},
			wantErr: "connection lab: plan was made against http://127.0.0.1:8006/api2/json, the connection now points at http://127.0.0.1:8007/api2/json: run plan again"},
		{name: "used connection not recorded", endpoints: map[string]string{"": one.BaseURL()},
			changes: []*engine.Change{pool("", engine.Create), pool("lab", engine.Create)},
			wantErr: "connection lab: the plan does not record which cluster it was made against: run plan again"},
		{name: "noop connections need no record", endpoints: map[string]string{"": one.BaseURL()},
			changes: []*engine.Change{pool("", engine.Create), pool("lab", engine.NoOp)}},
		{name: "connection gone", endpoints: map[string]string{"old": one.BaseURL()},
			wantErr: "connection old: unknown connection old"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := engine.VerifyEndpoints(clients, &engine.Plan{FormatVersion: engine.FormatVersion, Endpoints: tc.endpoints, Changes: tc.changes})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("got %q want %q", got, tc.wantErr)
			}
		})
	}
}

// shrinkingB is twoBridges with VM b asking to shrink its disk, a
// plan-time error.
func shrinkingB() (*spec.Set, map[string]*engine.LiveObj) {
	set, live := twoBridges()
	for _, r := range set.Resources {
		if r.Address() == "QemuVM/b" {
			r.Params.Set("scsi0", "local-lvm:8")
		}
	}
	live["QemuVM/b"].Config.Set("scsi0", "local-lvm:vm-102-disk-0,size=32G")
	return set, live
}

func TestBuildTargetIgnoresUnrelatedErrors(t *testing.T) {
	unreadable := errors.New("QemuVM/b: name b matches VMs 102 and 103: set vmid")
	tests := []struct {
		name    string
		opts    engine.Options
		obsErrs map[string]error // observe errors (the resource's live state is then missing)
		want    []string
		errHas  string
	}{
		{name: "no target reports the error", errHas: "QemuVM/b: scsi0: PVE cannot shrink a disk"},
		{name: "target elsewhere plans", opts: engine.Options{Targets: []string{"QemuVM/a"}},
			want: []string{"noop LinuxBridge/vmbr1", "noop LinuxBridge/vmbr2", "noop NetworkApply/pve <- LinuxBridge/vmbr1,LinuxBridge/vmbr2", "noop QemuVM/a <- LinuxBridge/vmbr1,NetworkApply/pve"}},
		{name: "target the broken one", opts: engine.Options{Targets: []string{"QemuVM/b"}}, errHas: "PVE cannot shrink a disk"},
		{name: "a dependency of the target is broken", opts: engine.Options{Targets: []string{"QemuVM/a"}},
			obsErrs: map[string]error{"LinuxBridge/vmbr1": errors.New("LinuxBridge/vmbr1: node \"x\" is not in the cluster")},
			errHas:  "LinuxBridge/vmbr1: node"},
		{name: "observe error elsewhere", opts: engine.Options{Targets: []string{"LinuxBridge/vmbr1"}},
			obsErrs: map[string]error{"QemuVM/b": unreadable},
			want:    []string{"noop LinuxBridge/vmbr1", "noop NetworkApply/pve <- LinuxBridge/vmbr1"}},
		{name: "destroy target elsewhere", opts: engine.Options{Destroy: true, Targets: []string{"QemuVM/a"}},
			obsErrs: map[string]error{"QemuVM/b": unreadable},
			want:    []string{"delete QemuVM/a"}},
		{name: "destroy target whose dependent is broken", opts: engine.Options{Destroy: true, Targets: []string{"LinuxBridge/vmbr2"}},
			obsErrs: map[string]error{"QemuVM/b": unreadable},
			errHas:  unreadable.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, live := shrinkingB()
			for a := range tc.obsErrs {
				delete(live, a)
			}
			p, err := engine.Build(context.Background(), set, &engine.Observed{Objs: live, Errs: tc.obsErrs}, tc.opts)
			if !succeeded(t, err, tc.errHas) {
				return
			}
			if diff := cmp.Diff(tc.want, summary(p)); diff != "" {
				t.Errorf("got %q (-want +got):\n%s", summary(p), diff)
			}
		})
	}
}

func TestBuildConnectionErrorSaidOnce(t *testing.T) {
	set, live := twoBridges()
	connErr := errors.New("default connection: read cluster resources: 401 authentication failure")
	errs := map[string]error{}
	for a := range live {
		errs[a] = connErr
	}
	_, err := engine.Build(context.Background(), set, &engine.Observed{Objs: map[string]*engine.LiveObj{}, Errs: errs}, engine.Options{})
	if err == nil || err.Error() != connErr.Error() {
		t.Errorf("got %v want %q once", err, connErr)
	}
}

func TestSimTargetNotBlockedByAmbiguousVM(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	for _, id := range []string{"120", "121"} {
		if err := sim.cl.CreateQemu(ctx, "pve", map[string][]string{"vmid": {id}, "name": {"web"}}); err != nil {
			t.Fatal(err)
		}
	}
	set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n---\nkind: QemuVM\nname: worker-1\nspec:\n  memory: 512\n")
	p := planFor(t, sim, set, engine.Options{Targets: []string{"QemuVM/worker-1"}})
	if diff := cmp.Diff([]string{"create QemuVM/worker-1"}, summary(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if _, err := tryPlan(t, sim, set, engine.Options{}); err == nil || !strings.Contains(err.Error(), "QemuVM/web: name web matches VMs 120 and 121") {
		t.Errorf("Build without target: got %v want the ambiguity of QemuVM/web", err)
	}
}

func TestSimCreateDiffShowsNode(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []string // the cluster's
		connNode []string // the connection's
		doc      string
		want     map[string]any // address → the diff's node (nil: no node field)
	}{
		{name: "from the connection", nodes: []string{"pve", "pve2"}, connNode: []string{"pve2"},
			doc:  "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n---\nkind: Pool\nname: team\n",
			want: map[string]any{"QemuVM/web": "pve2", "LinuxBridge/vmbr1": "pve2", "Pool/team": nil}},
		{name: "from /nodes", nodes: []string{"pve3", "pve2"},
			doc:  "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n",
			want: map[string]any{"QemuVM/web": "pve2"}},
		{name: "named in the spec", nodes: []string{"pve", "pve2"}, connNode: []string{"pve"},
			doc:  "kind: QemuVM\nname: web\nspec:\n  node: pve2\n  memory: 1024\n",
			want: map[string]any{"QemuVM/web": "pve2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSimWith(t, pvesim.Options{Nodes: tc.nodes})
			sim.conn.Nodes = tc.connNode
			p := planFor(t, sim, loadSpec(t, tc.doc), engine.Options{})
			got := map[string]any{}
			for _, c := range p.Changes {
				if c.Action != engine.Create {
					continue
				}
				got[c.Address] = nil
				nodes := 0
				for _, d := range c.Diff {
					if d.Path == "node" {
						nodes++
						got[c.Address] = d.After
						if d.Before != nil {
							t.Errorf("%s: node before: got %v want nil", c.Address, d.Before)
						}
					}
				}
				if nodes > 1 {
					t.Errorf("%s: got %d node fields want 1", c.Address, nodes)
				}
				paths := make([]string, 0, len(c.Diff))
				for _, d := range c.Diff {
					paths = append(paths, d.Path)
				}
				if !slices.IsSorted(paths) {
					t.Errorf("%s: diff paths not sorted: %v", c.Address, paths)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("create diff nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSimTaskWarningsAreReported(t *testing.T) {
	sim := newSimWith(t, pvesim.Options{WarnRate: 1})
	set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  vmid: 130\n  memory: 1024\n")
	h := &recHooks{}
	res, err := engine.Apply(context.Background(), sim, planFor(t, sim, set, engine.Options{}), engine.ApplyOptions{Hooks: h})
	if err != nil {
		t.Fatalf("Apply: got %v want success (warnings are not failures)", err)
	}
	// The Result keeps them, for the summary: one per task that warned.
	if w := res.Warnings["QemuVM/web"]; len(w) == 0 || !strings.HasSuffix(w[0], "finished with warnings: simulated warning: the task succeeded with a complaint") {
		t.Errorf("Result.Warnings: got %q, want QemuVM/web's task warning", res.Warnings)
	}
	if !slices.Contains(res.Done, "QemuVM/web") {
		t.Errorf("Result.Done: got %v, want QemuVM/web (a warning is success)", res.Done)
	}
	found := false
	for _, m := range h.messages {
		if strings.HasPrefix(m, "QemuVM/web: task UPID:pve:") && strings.HasSuffix(m, "finished with warnings: simulated warning: the task succeeded with a complaint") {
			found = true
		}
	}
	if !found {
		t.Errorf("messages: got %q want a task warning for QemuVM/web", h.messages)
	}
}

func TestTaskWarningMessage(t *testing.T) {
	st := pve.TaskStatus{UPID: "UPID:pve:1:2:3:qmcreate:100:root@pam:", ExitStatus: "WARNINGS: 2"}
	tests := []struct {
		name     string
		warnings []string
		want     string
	}{
		{name: "lines", warnings: []string{"a", "b"}, want: "task UPID:pve:1:2:3:qmcreate:100:root@pam: finished with warnings: a; b"},
		{name: "log unreadable", want: "task UPID:pve:1:2:3:qmcreate:100:root@pam: finished with WARNINGS: 2 (see its log)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := engine.TaskWarningMessage(st, tc.warnings); got != tc.want {
				t.Errorf("got %q want %q", got, tc.want)
			}
		})
	}
}

func TestSimStagedBridgeWithoutCommit(t *testing.T) {
	sim := newSim(t)
	const bridge = "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n"
	const commit = "---\nkind: NetworkApply\nname: pve\ndependsOn: [LinuxBridge/vmbr1]\n"
	const stays = "the change will stay staged: no NetworkApply in these specs commits node pve's network (add `kind: NetworkApply` for node pve)"
	const staged = "node pve has staged network changes that no NetworkApply in these specs commits (add `kind: NetworkApply` for node pve)"

	set := loadSpec(t, bridge)
	p := planFor(t, sim, set, engine.Options{})
	if diff := cmp.Diff([]string{"does not exist", stays}, p.Changes[0].Reasons); diff != "" {
		t.Errorf("create reasons (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)

	p = planFor(t, sim, set, engine.Options{})
	if c := p.Changes[0]; c.Action != engine.NoOp || !slices.Equal(c.Reasons, []string{staged}) {
		t.Errorf("after create: got %s %q want noop with %q", c.Action, c.Reasons, staged)
	}
	set = loadSpec(t, strings.Replace(bridge, "eno2", "eno3", 1))
	if c := planFor(t, sim, set, engine.Options{}).Changes[0]; c.Action != engine.Update || !slices.Contains(c.Reasons, stays) {
		t.Errorf("update: got %s %q want update saying %q", c.Action, c.Reasons, stays)
	}

	// With a commit in the specs the bridge says nothing more.
	set = loadSpec(t, bridge+commit)
	p = planFor(t, sim, set, engine.Options{})
	if diff := cmp.Diff([]string{"noop LinuxBridge/vmbr1", "apply NetworkApply/pve <- LinuxBridge/vmbr1"}, summary(p)); diff != "" {
		t.Errorf("plan with commit (-want +got):\n%s", diff)
	}
	if r := p.Change("LinuxBridge/vmbr1").Reasons; len(r) != 0 {
		t.Errorf("bridge reasons with a commit: got %q want none", r)
	}
	// pvectl keeps no state: what an earlier run left staged is not this
	// plan's, so it commits only when allowed.
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "--allow-foreign-network-changes") {
		t.Fatalf("apply without allowing the earlier run's staged change: got %v, want a refusal naming --allow-foreign-network-changes", err)
	}
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{AllowForeignNetworkChanges: true}); err != nil {
		t.Fatalf("Apply allowing it: %v", err)
	}
	// Committed: nothing is staged, so the bridge alone is a plain noop.
	if c := planFor(t, sim, loadSpec(t, bridge), engine.Options{}).Changes[0]; c.Action != engine.NoOp || len(c.Reasons) != 0 {
		t.Errorf("after commit: got %s %q want a plain noop", c.Action, c.Reasons)
	}
}

// TestSimVerifyIgnoresPvectlBlock: pvectl writing its description block
// between `plan --out` and `apply FILE` leaves the saved plan valid (and
// the update goes out with PVE's new digest); a user's edit does not.
func TestSimVerifyIgnoresPvectlBlock(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	const doc = "kind: QemuVM\nname: web\nspec:\n  vmid: 130\n  memory: 512\n  description: web server\n"
	p := planEdit(t, sim, doc, "512", "1024", engine.Options{})
	saved := savedPlan(t, p)
	block := url.Values{"description": {"web server\n[pvectl-provision: a.yaml=0123456789ab]"}}
	if err := sim.cl.UpdateQemu(ctx, "pve", 130, block); err != nil {
		t.Fatal(err)
	}
	if err := engine.Verify(ctx, sim, saved); err != nil {
		t.Fatalf("Verify after pvectl's block was written: got %v want nil", err)
	}
	applyPlan(t, sim, saved)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 130)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("memory") != "1024" || !strings.Contains(cfg.Get("description"), "[pvectl-provision: a.yaml=0123456789ab]") {
		t.Errorf("after apply: memory %q description %q, want 1024 and the block kept", cfg.Get("memory"), cfg.Get("description"))
	}
	if p := planFor(t, sim, loadSpec(t, strings.Replace(doc, "512", "1024", 1)), engine.Options{}); p.HasChanges() {
		t.Errorf("plan after apply: got %q want noop (the block is not drift)", summary(p))
	}

	p = planFor(t, sim, loadSpec(t, strings.Replace(doc, "512", "2048", 1)), engine.Options{})
	if err := sim.cl.UpdateQemu(ctx, "pve", 130, url.Values{"description": {"edited by hand"}}); err != nil {
		t.Fatal(err)
	}
	if err := engine.Verify(ctx, sim, p); err == nil || !strings.Contains(err.Error(), "changed since the plan") {
		t.Errorf("Verify after a user's edit: got %v want refusal", err)
	}
}

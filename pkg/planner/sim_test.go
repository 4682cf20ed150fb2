package planner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

const (
	simToken  = "root@pam!pvectl"
	simSecret = "0b4c6f6e-sim-secret"
)

// simClients serves every connection name from one simulator.
type simClients struct {
	cl   *pve.Client
	conn *spec.Connection
}

func (s *simClients) Client(string) (*pve.Client, error) { return s.cl, nil }
func (s *simClients) Connection(string) *spec.Connection { return s.conn }

// newSim starts pvesim on loopback and returns clients talking to it.
func newSim(t *testing.T, nodes ...string) *simClients {
	t.Helper()
	sc, _ := newCountingSim(t, nodes...)
	return sc
}

// requestCounter counts requests by "METHOD path".
type requestCounter struct{ c *simtest.Counter }

func (rc *requestCounter) reset() map[string]int { return rc.c.Reset() }

func newCountingSim(t *testing.T, nodes ...string) (*simClients, *requestCounter) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{Nodes: nodes, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}, &requestCounter{s.Requests}
}

func loadSpec(tb testing.TB, yaml string) *spec.Set {
	tb.Helper()
	return loadSpecIn(tb, tb.TempDir(), yaml)
}

// loadSpecIn loads yaml written as dir/spec.yaml: a secretFile stays
// where it was from one load to the next.
func loadSpecIn(tb testing.TB, dir, yaml string) *spec.Set {
	tb.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		tb.Fatal(err)
	}
	set, err := spec.Load([]string{path}, spec.LoadOptions{Getenv: testGetenv})
	if err != nil {
		tb.Fatalf("spec.Load: %v", err)
	}
	return set
}

// testGetenv is the environment specs of these tests read: the secrets
// they pass (a secret is never written into a spec).
func testGetenv(name string) (string, bool) {
	v, ok := map[string]string{"CT_PASSWORD": "hunter2-ct", "SMB_PASSWORD": "smb-s3cret", "PBS_PASSWORD": "pbs-s3cret",
		"LDAP_BIND_PW": "ldap-bind-s3cret", "INFLUX_TOKEN": "influx-t0ken"}[name]
	return v, ok
}

func example01YAML(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/01-bridge-and-vm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func planFor(tb testing.TB, cl engine.Clients, set *spec.Set, opts engine.Options) *engine.Plan {
	tb.Helper()
	p, err := tryPlan(tb, cl, set, opts)
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	return p
}

// tryPlan observes set and builds its plan, returning Build's error: a
// failed Observe fails the test.
func tryPlan(tb testing.TB, cl engine.Clients, set *spec.Set, opts engine.Options) (*engine.Plan, error) {
	tb.Helper()
	ctx := context.Background()
	obs, err := engine.Observe(ctx, cl, set)
	if err != nil {
		tb.Fatalf("Observe: %v", err)
	}
	return engine.Build(ctx, set, obs, opts)
}

func applyPlan(t *testing.T, cl engine.Clients, p *engine.Plan) *engine.Result {
	t.Helper()
	res, _ := applyHooked(t, cl, p)
	return res
}

// savedPlan is p written to a plan file and read back, as `plan --out`
// and `apply FILE` do.
func savedPlan(t *testing.T, p *engine.Plan) *engine.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := engine.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	saved, err := engine.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return saved
}

// marshalled is p's plan-file bytes, and p read back from them.
func marshalled(t *testing.T, p *engine.Plan) ([]byte, *engine.Plan) {
	t.Helper()
	data, err := engine.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := engine.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return data, back
}

// applyCounted plans set, stops the test unless the plan has n changes
// of action a (what names the plan), and applies it.
func applyCounted(t *testing.T, sim *simClients, set *spec.Set, what string, a engine.Action, n int) {
	t.Helper()
	p := planFor(t, sim, set, engine.Options{})
	if got := countAction(p, a); got != n {
		t.Fatalf("%s: got %d × %s want %d: %q", what, got, a, n, summary(p))
	}
	applyPlan(t, sim, p)
}

// livePlan is PlanLive's plan of set, which must come.
func livePlan(tb testing.TB, cl engine.Clients, set *spec.Set, opts engine.Options) *engine.Plan {
	tb.Helper()
	p, err := engine.PlanLive(context.Background(), cl, set, opts)
	if err != nil {
		tb.Fatalf("PlanLive: %v", err)
	}
	return p
}

// planEdit applies doc, then plans it with old replaced by new.
func planEdit(t *testing.T, sim *simClients, doc, old, new string, opts engine.Options) *engine.Plan {
	t.Helper()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	return planFor(t, sim, loadSpec(t, strings.Replace(doc, old, new, 1)), opts)
}

// wantConverged fails the test through fail (t.Errorf or t.Fatalf)
// unless a new plan of set changes nothing; what names that plan.
func wantConverged(t *testing.T, fail func(format string, args ...any), cl engine.Clients, set *spec.Set, what string) {
	t.Helper()
	if p := planFor(t, cl, set, engine.Options{}); p.HasChanges() {
		fail("%s: got %q, want clean", what, summary(p))
	}
}

// applyHooked is applyPlan returning what the hooks heard too.
func applyHooked(t *testing.T, cl engine.Clients, p *engine.Plan) (*engine.Result, *recHooks) {
	t.Helper()
	h := &recHooks{}
	res, err := engine.Apply(context.Background(), cl, p, engine.ApplyOptions{Hooks: h})
	if err != nil {
		t.Fatalf("Apply: %v\nmessages: %s", err, strings.Join(h.messages, "\n"))
	}
	return res, h
}

func TestSimExample01Lifecycle(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, example01YAML(t))

	// 1. Fresh cluster: everything is created and the bridge committed.
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "first plan", p, []string{
		"create LinuxBridge/vmbr1",
		"apply NetworkApply/pve <- LinuxBridge/vmbr1",
		"create QemuVM/app-vm-1 <- LinuxBridge/vmbr1,NetworkApply/pve",
	})
	res := applyPlan(t, sim, p)
	if diff := cmp.Diff([]string{"LinuxBridge/vmbr1", "NetworkApply/pve", "QemuVM/app-vm-1"}, res.Done); diff != "" {
		t.Errorf("Done (-want +got):\n%s", diff)
	}
	st, err := sim.cl.QemuStatus(ctx, "pve", 100)
	if err != nil || st.Status != "running" {
		t.Errorf("vm 100 status: got %+v, %v want running", st, err)
	}
	if _, changes, err := sim.cl.NetworkList(ctx, "pve"); err != nil || changes != "" {
		t.Errorf("network changes after apply: got %q, %v want none", changes, err)
	}

	// 2. Second plan: nothing to do.
	p = planFor(t, sim, set, engine.Options{})
	for _, c := range p.Changes {
		if c.Action != engine.NoOp {
			t.Errorf("second plan: got %s %s %v want noop", c.Action, c.Address, c.Diff)
		}
	}

	// 3. Memory change: exactly one update with a memory diff.
	set = loadSpec(t, strings.Replace(example01YAML(t), "memory: 2048", "memory: 4096", 1))
	p = planFor(t, sim, set, engine.Options{})
	var updates []*engine.Change
	for _, c := range p.Changes {
		if c.Action != engine.NoOp {
			updates = append(updates, c)
		}
	}
	if len(updates) != 1 || updates[0].Address != "QemuVM/app-vm-1" || updates[0].Action != engine.Update {
		t.Fatalf("memory plan: got %q want one update of QemuVM/app-vm-1", summary(p))
	}
	if diff := cmp.Diff([]engine.FieldDiff{{Path: "memory", Before: "2048", After: "4096"}}, updates[0].Diff); diff != "" {
		t.Errorf("memory diff (-want +got):\n%s", diff)
	}
	// Saved and verified like `pvectl plan --out` / `apply FILE`.
	saved := savedPlan(t, p)
	if err := engine.Verify(ctx, sim, saved); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	applyPlan(t, sim, saved)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 100)
	if err != nil || cfg.Get("memory") != "4096" {
		t.Errorf("memory after update: got %q, %v want 4096", cfg.Get("memory"), err)
	}
	wantConverged(t, t.Errorf, sim, set, "plan after update")

	// 4. Destroy removes the VM and the bridge and commits.
	p = planFor(t, sim, set, engine.Options{Destroy: true})
	wantPlan(t, "destroy plan", p, []string{
		"delete QemuVM/app-vm-1",
		"delete LinuxBridge/vmbr1 <- QemuVM/app-vm-1",
		"apply NetworkApply/pve <- LinuxBridge/vmbr1,QemuVM/app-vm-1",
	})
	applyPlan(t, sim, p)
	rows, err := sim.cl.ClusterResources(ctx, "vm")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.VMID == 100 {
			t.Errorf("vm 100 still exists after destroy: %+v", r)
		}
	}
	if committedIface(t, sim, "vmbr1", "destroy") != nil {
		t.Errorf("vmbr1 still exists after destroy")
	}
}

func TestSimPoolLifecycle(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: Pool\nname: team\nspec:\n  comment: the team\n")
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	wantConverged(t, t.Errorf, sim, set, "plan after create")
	set = loadSpec(t, "kind: Pool\nname: team\nspec:\n  comment: renamed\n")
	p := planFor(t, sim, set, engine.Options{})
	if diff := cmp.Diff([]engine.FieldDiff{{Path: "comment", Before: "the team", After: "renamed"}}, p.Changes[0].Diff); diff != "" {
		t.Errorf("pool diff (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	pools, err := sim.cl.Pools(ctx)
	if err != nil || len(pools) != 1 || pools[0].Comment != "renamed" {
		t.Errorf("pools after update: got %+v, %v want team/renamed", pools, err)
	}
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{Destroy: true}))
	if pools, err := sim.cl.Pools(ctx); err != nil || len(pools) != 0 {
		t.Errorf("pools after destroy: got %+v, %v want none", pools, err)
	}
}

func TestSimVMByNameWithNextID(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	// No node and no vmid: the connection's first node and /cluster/nextid.
	const doc = "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n  tags: b;a\n"
	set := loadSpec(t, doc)
	p := planFor(t, sim, set, engine.Options{})
	if c := p.Changes[0]; c.Action != engine.Create || c.Node != "pve" || stateOf(c).VMID != 0 {
		t.Fatalf("plan: got %s node=%q vmid=%d want create on pve without vmid", c.Action, c.Node, stateOf(c).VMID)
	}
	applyPlan(t, sim, p)
	if stateOf(p.Changes[0]).Created == 0 {
		t.Errorf("create did not record the vmid it got")
	}
	wantConverged(t, t.Errorf, sim, set, "plan after create (found by name)")
	// A second VM of the same name makes the name ambiguous.
	id, err := sim.cl.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.cl.CreateQemu(ctx, "pve", map[string][]string{"vmid": {itoa(id)}, "name": {"web"}}); err != nil {
		t.Fatal(err)
	}
	// Observe keeps per-resource errors for Build, which reports those of
	// the resources it plans.
	obs, err := engine.Observe(ctx, sim, set)
	if err != nil {
		t.Fatalf("Observe: got %v want no error (kept for Build)", err)
	}
	_, err = engine.Build(ctx, set, obs, engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "name web matches VMs") || !strings.Contains(err.Error(), "set vmid") {
		t.Errorf("Build: got %v want an ambiguity error", err)
	}
}

func TestSimFailureSkipsDependents(t *testing.T) {
	sim := newSim(t)
	const doc = "kind: QemuVM\nname: clash\nspec:\n  vmid: 9000\n  name: ubuntu-24.04-cloud\n  memory: 1024\n---\n" +
		"kind: Pool\nname: after\ndependsOn: [QemuVM/clash]\n---\nkind: Pool\nname: other\n"
	set := loadSpec(t, doc)
	p := planFor(t, sim, set, engine.Options{})
	// vmid 9000 is the seeded template: forcing a create makes PVE refuse it.
	c := p.Change("QemuVM/clash")
	c.Action = engine.Create
	res, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{})
	if err == nil {
		t.Fatal("Apply: got nil error want a failure")
	}
	if res.Failed["QemuVM/clash"] == nil {
		t.Errorf("Failed: got %v want QemuVM/clash", res.Failed)
	}
	if diff := cmp.Diff(map[string]string{"Pool/after": "dependency QemuVM/clash failed"}, res.Skipped); diff != "" {
		t.Errorf("Skipped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Pool/other"}, res.Done); diff != "" {
		t.Errorf("Done (-want +got):\n%s", diff)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// guestsNow lists the guests of typ on nodes as they are now: the per-node
// lists, not /cluster/resources, whose names and states lag (pvestatd).
func guestsNow(t *testing.T, sim *simClients, typ pve.GuestType, nodes ...string) []pve.ClusterResource {
	t.Helper()
	var out []pve.ClusterResource
	for _, n := range nodes {
		rows, err := sim.cl.NodeGuests(context.Background(), typ, n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

// TestSimObserveFewCalls pins what a plan costs: the cluster-wide lists
// once, one guest list per node that holds guests of a type the specs
// have (none for containers here: there are none to find yet), one network
// list per node with network resources, one config per guest found, and
// what a guest to create needs judged (its template's storage content).
// The guest lists replace /cluster/resources' lagging names and states
// (guestRows); a guest found by name costs nothing more.
func TestSimObserveFewCalls(t *testing.T) {
	sim, rc := newCountingSim(t, "pve", "pve2")
	set := loadSpec(t, example01YAML(t)+`
---
kind: Pool
name: team
---
kind: QemuVM
name: other
spec:
  vmid: 101
  memory: 512
---
kind: QemuVM
name: far
spec:
  node: pve2
  memory: 512
---
kind: LxcContainer
name: ct
spec:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  vmid: 300
`)
	ctx := context.Background()
	p := planFor(t, sim, set, engine.Options{Targets: []string{"QemuVM/app-vm-1", "QemuVM/other", "QemuVM/far", "Pool/team"}})
	applyPlan(t, sim, p)
	rc.reset()
	obs, err := engine.Observe(ctx, sim, set)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		// The permission preflight, once per connection, and the storage
		// the container to create relies on, asked for by its path: the
		// listing leaves out a path where a NoAccess hides it (visibility.go).
		"GET /access/permissions":         2,
		"GET /cluster/resources":          1,
		"GET /nodes":                      1,
		"GET /nodes/pve/network":          1,
		"GET /pools":                      1,
		"GET /nodes/pve/qemu":             1,
		"GET /nodes/pve2/qemu":            1,
		"GET /nodes/pve/qemu/100/config":  1,
		"GET /nodes/pve/qemu/101/config":  1,
		"GET /nodes/pve2/qemu/102/config": 1,
		// The container to create needs its template: the storage's
		// templates are listed once (prerequisites).
		"GET /nodes/pve/storage/local/content": 1,
	}
	if diff := cmp.Diff(want, rc.reset()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if lo := obs.Objs["QemuVM/far"]; lo == nil || !lo.Exists || lo.Node != "pve2" {
		t.Errorf("QemuVM/far: got %+v, want found by name on pve2", lo)
	}
}

func TestSimDiskGrowsInPlace(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	const doc = "kind: QemuVM\nname: disk\nspec:\n  vmid: 120\n  scsi0: local-lvm:8\n  running: false\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	set := loadSpec(t, strings.Replace(doc, "local-lvm:8", "local-lvm:12,cache=writeback", 1))
	p := planFor(t, sim, set, engine.Options{})
	want := []engine.FieldDiff{{Path: "scsi0.size", Before: "8G", After: "12G"}, {Path: "scsi0.cache", Before: nil, After: "writeback"}}
	if diff := cmp.Diff(want, p.Changes[0].Diff); diff != "" {
		t.Fatalf("diff (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 120)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Get("scsi0"); !strings.Contains(got, "vm-120-disk-0") || !strings.Contains(got, "size=12G") || !strings.Contains(got, "cache=writeback") {
		t.Errorf("scsi0 after update: got %q want the same volume, 12G, writeback", got)
	}
	wantConverged(t, t.Errorf, sim, set, "plan after resize")
}

// BenchmarkPlan measures Observe+Build over many VMs with simulated latency.
// A VM without a vmid never takes one another VM of the plan is pinned to,
// even when it is created first.
func TestSimFreeVMIDSkipsPinnedOnes(t *testing.T) {
	sim := newSim(t)
	const doc = `kind: QemuVM
name: free
spec:
  memory: 512
---
kind: QemuVM
name: pinned
dependsOn: [QemuVM/free]
spec:
  vmid: 100
  memory: 512
---
kind: QemuVM
name: pinned2
dependsOn: [QemuVM/free]
spec:
  vmid: 101
  memory: 512
`
	set := loadSpec(t, doc)
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	got := map[string]int{}
	for _, r := range guestsNow(t, sim, pve.QEMU, "pve") {
		got[r.Name] = r.VMID
	}
	want := map[string]int{"free": 102, "pinned": 100, "pinned2": 101, "ubuntu-24.04-cloud": 9000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vmids (-want +got):\n%s", diff)
	}
}

// running: false shuts a running VM down (gracefully, forced after a
// timeout); running: true starts it again.
func TestSimPowerState(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	doc := func(running bool) string {
		return fmt.Sprintf("kind: QemuVM\nname: pw\nspec:\n  vmid: 130\n  memory: 512\n  running: %v\n", running)
	}
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc(true)), engine.Options{}))
	for _, want := range []bool{false, true} {
		set := loadSpec(t, doc(want))
		p := planFor(t, sim, set, engine.Options{})
		c := p.Change("QemuVM/pw")
		if diff := cmp.Diff([]engine.FieldDiff{{Path: "running", Before: !want, After: want}}, c.Diff); c.Action != engine.Update || diff != "" {
			t.Fatalf("running=%v: got %s (-want +got):\n%s", want, c.Action, diff)
		}
		h := &recHooks{}
		if _, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{Hooks: h}); err != nil {
			t.Fatal(err)
		}
		verb := "start vm 130"
		if !want {
			verb = "shutdown vm 130"
		}
		if !strings.Contains(strings.Join(h.messages, "\n"), verb) {
			t.Errorf("running=%v: messages %q lack %q", want, h.messages, verb)
		}
		st, err := sim.cl.QemuStatus(ctx, "pve", 130)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Status == "running"; got != want {
			t.Errorf("running=%v: status %s", want, st.Status)
		}
		if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
			t.Errorf("running=%v: next plan %q, want clean", want, summary(p))
		}
	}
}

package planner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Round trips per VM are deterministic and asserted here, so that a change
// that adds one fails CI (the wall-clock figures are benchmarks:
// docs/performance.md). Task status polls depend on timing; they are
// counted apart and bounded by the per-task poll budget.

// callCount splits a counter's calls into status polls and the rest.
type callCount struct {
	polls, other int
	byCall       map[string]int
}

func countCalls(calls map[string]int) callCount {
	cc := callCount{byCall: calls}
	for k, n := range calls {
		if strings.HasPrefix(k, "GET /nodes/") && strings.Contains(k, "/tasks/") && strings.HasSuffix(k, "/status") {
			cc.polls += n
			continue
		}
		cc.other += n
	}
	return cc
}

func (cc callCount) String() string {
	var rows []string
	for k, n := range cc.byCall {
		if !strings.Contains(k, "/tasks/") {
			rows = append(rows, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	sort.Strings(rows)
	return fmt.Sprintf("%d polls, %d other: %s", cc.polls, cc.other, strings.Join(rows, ", "))
}

// vmDocs writes n QemuVM documents with pinned vmids and memory mem.
func vmDocs(tb testing.TB, n, mem int, extra string) *spec.Set {
	tb.Helper()
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "kind: QemuVM\nname: vm%d\nspec:\n  vmid: %d\n  memory: %d\n  cores: 1\n  net0: virtio,bridge=vmbr0\n%s", i, 1000+i, mem, extra)
	}
	return loadSpec(tb, b.String())
}

// callsSim is a simulator whose tasks take 5 ms, with its request counter.
func callsSim(t *testing.T) (*simClients, *simtest.Sim) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: 5 * time.Millisecond, Seed: 1}})
	return &simClients{cl: s.Client, conn: &spec.Connection{Nodes: []string{"pve"}}}, s
}

// perVMCheck checks that calls of n VMs, polls aside, are perVM for
// each VM and lists more.
func perVMCheck(t *testing.T, n int) func(what string, cc callCount, perVM, lists int) {
	return func(what string, cc callCount, perVM, lists int) {
		t.Helper()
		if want := perVM*n + lists; cc.other != want {
			t.Errorf("%s of %d VMs: %d calls besides polls, want %d (%d per VM + %d): %s", what, n, cc.other, want, perVM, lists, cc)
		}
	}
}

// callSteps plans and applies n VMs (their documents ending in extra)
// step by step on a fresh callsSim: a step gives the VMs memory mem,
// checks that the plan made planPerVM calls per VM and planLists more,
// that the apply made applyPerVM per VM, and returns the apply's calls.
func callSteps(t *testing.T, n int, extra string) func(mem int, planWhat string, planPerVM, planLists int, applyWhat string, applyPerVM int) callCount {
	cl, s := callsSim(t)
	check := perVMCheck(t, n)
	return func(mem int, planWhat string, planPerVM, planLists int, applyWhat string, applyPerVM int) callCount {
		t.Helper()
		plan, apply := planApply(t, cl, s, vmDocs(t, n, mem, extra), 8)
		check(planWhat, plan, planPerVM, planLists)
		check(applyWhat, apply, applyPerVM, 0)
		return apply
	}
}

// planApply plans set and applies it, returning the calls of the plan and
// of the apply apart.
func planApply(t *testing.T, cl *simClients, s *simtest.Sim, set *spec.Set, par int) (plan, apply callCount) {
	t.Helper()
	ctx := context.Background()
	s.Requests.Reset()
	p := livePlan(t, cl, set, engine.Options{})
	plan = countCalls(s.Requests.Reset())
	res, err := engine.Apply(ctx, cl, p, engine.ApplyOptions{Parallelism: par})
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("apply: %v %v", err, res.Failed)
	}
	return plan, countCalls(s.Requests.Reset())
}

// TestCallsPerVM: the calls of a plan, a create and an update of n VMs
// are a constant number of lists plus a fixed number per VM.
func TestCallsPerVM(t *testing.T) {
	const n = 24
	step := callSteps(t, n, "  running: false\n")

	// Create: the plan reads the lists (permissions, /cluster/resources,
	// /nodes, the node's VMs and its network for net0's bridge; no VM
	// exists: no config reads); each create is the create call and its
	// task.
	apply := step(512, "plan before create", 0, 5, "create", 1)
	if maxPolls := n * 20; apply.polls > maxPolls {
		t.Errorf("create: %d status polls, want ≤ %d (the poll budget's burst per task)", apply.polls, maxPolls)
	}

	// A no-op plan: the lists and one config read per VM.
	step(512, "no-op plan", 1, 4, "no-op apply", 0)

	// An update of a stopped VM's memory rewrites its config only: one
	// synchronous PUT, no task to poll; then its status, to tell what PVE
	// kept pending had it been started since the plan (applyPending).
	apply = step(1024, "plan of an update", 1, 4, "update", 2)
	if apply.polls != 0 || apply.byCall["PUT /nodes/pve/qemu/1000/config"] != 1 {
		t.Errorf("update of a stopped VM's memory: want one PUT …/config and no task: %s", apply)
	}
}

// TestCallsPerRunningVM: the same for VMs that run: a create is the
// create and the start (two tasks); a memory update of a running VM is a
// qmconfig task (PVE may hotplug it), its status and the keys PVE kept
// pending.
func TestCallsPerRunningVM(t *testing.T) {
	const n = 12
	step := callSteps(t, n, "  running: true\n")
	step(512, "plan before create", 0, 5, "create and start", 2)
	apply := step(1024, "plan of an update", 1, 4, "update", 3)
	if apply.byCall["POST /nodes/pve/qemu/1000/config"] != 1 || apply.byCall["PUT /nodes/pve/qemu/1000/config"] != 0 {
		t.Errorf("update of a running VM's memory: want POST …/config (a task): %s", apply)
	}
}

// TestVerifyCallsPerVM: applying a saved plan re-reads what it changes:
// its creates share one /cluster/resources list (not one each), its
// updates read one config each.
func TestVerifyCallsPerVM(t *testing.T) {
	const n = 20
	cl, s := callsSim(t)
	ctx := context.Background()
	verify := func(set *spec.Set) callCount {
		t.Helper()
		p := livePlan(t, cl, set, engine.Options{})
		s.Requests.Reset()
		if err := engine.Verify(ctx, cl, p); err != nil {
			t.Fatal(err)
		}
		cc := countCalls(s.Requests.Reset())
		if res, err := engine.Apply(ctx, cl, p, engine.ApplyOptions{Parallelism: 8}); err != nil || len(res.Failed) > 0 {
			t.Fatalf("apply: %v %v", err, res.Failed)
		}
		return cc
	}
	if cc := verify(vmDocs(t, n, 512, "  running: false\n")); cc.other != 1 || cc.byCall["GET /cluster/resources"] != 1 {
		t.Errorf("verify of %d creates: want one GET /cluster/resources and nothing else: %s", n, cc)
	}
	if cc := verify(vmDocs(t, n, 1024, "  running: false\n")); cc.other != n {
		t.Errorf("verify of %d updates: want %d config reads: %s", n, n, cc)
	}
}

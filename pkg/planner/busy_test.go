package planner

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// newSlowSim is a simulator whose tasks run long enough for a plan to
// meet them running.
func newSlowSim(t *testing.T, task time.Duration) *simClients {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: task, Seed: 1}})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
}

// startTask sends a task-starting request and returns without waiting
// for the task.
func startTask(t *testing.T, sim *simClients, method, path string, params url.Values) {
	t.Helper()
	if err := sim.cl.Do(context.Background(), method, path, params, nil); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
}

// waitRecorder records what PlanLive says it waits for.
type waitRecorder struct {
	mu    sync.Mutex
	calls [][]string
}

func (w *waitRecorder) waiting(busy []*engine.BusyError, _ time.Duration) {
	var addrs []string
	for _, b := range busy {
		addrs = append(addrs, b.Address)
	}
	w.mu.Lock()
	w.calls = append(w.calls, addrs)
	w.mu.Unlock()
}

// Issue 10 part 1(b) and (d): guests that PVE is still creating have no
// name yet and are locked; a plan neither takes a VM found by name for
// absent while they exist nor judges a locked one. PlanLive waits for
// them, then plans what is there.
func TestSimGuestsBeingCreated(t *testing.T) {
	sim := newSlowSim(t, 3*time.Second)
	startTask(t, sim, http.MethodPost, "/nodes/pve/qemu", url.Values{"vmid": {"105"}, "name": {"web"}, "memory": {"512"}})
	startTask(t, sim, http.MethodPost, "/nodes/pve/qemu", url.Values{"vmid": {"500"}, "name": {"pinned"}, "memory": {"512"}})
	set := loadSpec(t, `kind: QemuVM
name: web
spec:
  memory: 512
---
kind: QemuVM
name: pinned
spec:
  vmid: 500
  memory: 512
---
kind: QemuVM
name: other
spec:
  memory: 512
`)
	_, err := tryPlan(t, sim, set, engine.Options{})
	busy, only := engine.BusyErrors(err)
	if !only || len(busy) != 3 {
		t.Fatalf("Build: got %v, want three busy resources and nothing else", err)
	}
	for _, want := range []string{
		"QemuVM/web: no VM is named web, but PVE is still creating or cloning VMs 105, 500 (locked, no name yet): one of them may become it",
		"QemuVM/pinned: vm 500 is locked (create): a PVE task is working on it",
		"QemuVM/other: no VM is named other, but PVE is still creating or cloning VMs 105, 500",
		"qm destroy 105", "qm unlock 500",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build error:\n%v\nwant it to say %q", err, want)
		}
	}

	rec := &waitRecorder{}
	p := livePlan(t, sim, set, engine.Options{BusyTimeout: time.Minute, Waiting: rec.waiting})
	got := map[string]engine.Action{}
	for _, c := range p.Changes {
		got[c.Address] = c.Action
	}
	if got["QemuVM/web"] != engine.NoOp || got["QemuVM/pinned"] != engine.NoOp || got["QemuVM/other"] != engine.Create {
		t.Errorf("plan once the creates ended: got %q, want web and pinned found, other created", summary(p))
	}
	if len(rec.calls) == 0 || len(rec.calls[0]) != 3 {
		t.Errorf("Waiting heard %v, want the three busy resources first", rec.calls)
	}
}

// A guest an unfinished task holds locked: nothing to change is fine (the
// plan says so), a change is refused until the task ends.
func TestSimLockedGuest(t *testing.T) {
	sim := newSlowSim(t, 3*time.Second)
	const doc = "kind: LxcContainer\nname: src\nspec:\n  vmid: 200\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  rootfs: local-lvm:4\n  memory: 512\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	// pve-container marks a clone's source "disk" until the clone ends.
	startTask(t, sim, http.MethodPost, "/nodes/pve/lxc/200/clone", url.Values{"newid": {"201"}})

	p := planFor(t, sim, loadSpec(t, doc), engine.Options{})
	if c := p.Changes[0]; c.Action != engine.NoOp || !strings.Contains(strings.Join(c.Reasons, "; "), "container 200 is locked (disk): a PVE task is working on it: nothing to change") {
		t.Errorf("unchanged locked container: got %s %q, want a noop that says it is locked", c.Action, c.Reasons)
	}
	changed := loadSpec(t, strings.Replace(doc, "memory: 512", "memory: 1024", 1))
	err := planErr(t, sim, changed)
	var be *engine.BusyError
	if !errors.As(err, &be) || be.Address != "LxcContainer/src" || !strings.Contains(err.Error(), "pct unlock 200") {
		t.Fatalf("changed locked container: got %v, want it refused as busy", err)
	}
	p = livePlan(t, sim, changed, engine.Options{BusyTimeout: time.Minute})
	if c := p.Changes[0]; c.Action != engine.Update {
		t.Errorf("once the clone ended: got %s, want the update", c.Action)
	}
}

// A saved plan that creates a guest by name is refused while a guest
// that may be it is still being created.
func TestSimVerifyRefusesWhileCreating(t *testing.T) {
	sim := newSlowSim(t, 3*time.Second)
	set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 512\n")
	p := planFor(t, sim, set, engine.Options{})
	startTask(t, sim, http.MethodPost, "/nodes/pve/qemu", url.Values{"vmid": {"105"}, "name": {"web"}, "memory": {"512"}})
	err := engine.Verify(context.Background(), sim, p)
	if err == nil || !strings.Contains(err.Error(), "PVE is still creating or cloning VM 105") {
		t.Errorf("Verify: got %v, want the create refused while vm 105 is made", err)
	}
}

package planner

import (
	"context"
	"net/url"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
)

const ownerVMSpec = `kind: QemuVM
name: keep
spec:
  memory: 512
`

// TestSimPruneContainer: a container pvectl creates carries the owner mark
// of the plan's stack; once its document is gone the plan lists it, a
// plan of another stack does not, and a saved --prune plan removes it —
// through Verify, as any saved delete — and nothing else.
func TestSimPruneContainer(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	both := loadSpec(t, lxcSpec+"---\n"+ownerVMSpec)
	p := planFor(t, sim, both, engine.Options{Stack: "lab"})
	applyPlan(t, sim, p)
	if p := planFor(t, sim, both, engine.Options{Stack: "lab", Prune: true}); p.HasChanges() || len(p.Orphans) != 0 {
		t.Fatalf("plan after create: %v, orphans %v; want clean (the mark is no drift)", summary(p), p.Orphans)
	}
	ct := stateOf(p.Change("LxcContainer/dns01")).Created
	cfg, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", ct)
	if err != nil {
		t.Fatal(err)
	}
	if stack, id, ok := marks.ParseOwnerMark(cfg.Get("description")); !ok || stack != "lab" || id != ct || !marks.HasOwnerTag(cfg.Get("tags")) {
		t.Fatalf("container %d: description %q tags %q, want the owner mark of stack lab and the pvectl tag", ct, cfg.Get("description"), cfg.Get("tags"))
	}

	vmOnly := loadSpec(t, ownerVMSpec)
	p = planFor(t, sim, vmOnly, engine.Options{Stack: "lab"})
	want := []engine.Orphan{{Address: "LxcContainer/dns01", Node: "pve", What: "vmid " + itoa(ct), Stack: "lab"}}
	if diff := cmp.Diff(want, p.Orphans); diff != "" || p.HasChanges() {
		t.Fatalf("orphans (-want +got):\n%s\nchanges: %v", diff, summary(p))
	}
	if p := planFor(t, sim, vmOnly, engine.Options{Stack: "other", Prune: true}); len(p.Orphans) != 0 || p.HasChanges() {
		t.Fatalf("stack other: orphans %v, changes %v; want none", p.Orphans, summary(p))
	}

	p = planFor(t, sim, vmOnly, engine.Options{Stack: "lab", Prune: true})
	wantPlan(t, "plan --prune", p, []string{"delete LxcContainer/dns01", "noop QemuVM/keep"})
	if c := p.Change("LxcContainer/dns01"); !c.Pruned || len(c.Needs) == 0 {
		t.Errorf("the prune change: pruned %v, needs %v; want pruned with the delete's privileges", c.Pruned, c.Needs)
	}
	saved := savedPlan(t, p)
	if err := engine.Verify(ctx, sim, saved); err != nil {
		t.Fatalf("Verify of the saved prune plan: %v", err)
	}
	applyPlan(t, sim, saved)
	if _, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", ct); !pve.IsNotFound(err) {
		t.Errorf("container %d after the prune: %v, want gone", ct, err)
	}
	if p := planFor(t, sim, vmOnly, engine.Options{Stack: "lab", Prune: true}); p.HasChanges() || len(p.Orphans) != 0 {
		t.Errorf("after the prune: %v, orphans %v; want clean", summary(p), p.Orphans)
	}
}

// TestSimOwnedTwoConnections: two connections that reach one cluster see
// each other's documents — a guest one of them names is no orphan of the
// other — and an orphan found through both is listed once.
func TestSimOwnedTwoConnections(t *testing.T) {
	sim := newSim(t)
	conn := "kind: Connection\nname: lab\nspec:\n  url: https://127.0.0.1:8006\n  tokenId: \"a@pve!t\"\n---\n"
	onLab := func(name string) string {
		return "kind: QemuVM\nname: " + name + "\nconnection: lab\nspec:\n  memory: 512\n---\n"
	}
	all := loadSpec(t, conn+onLab("worker")+onLab("gone")+ownerVMSpec)
	applyPlan(t, sim, planFor(t, sim, all, engine.Options{}))
	if p := planFor(t, sim, all, engine.Options{}); p.HasChanges() || len(p.Orphans) != 0 {
		t.Fatalf("plan after create: %v, orphans %v; want clean", summary(p), p.Orphans)
	}
	p := planFor(t, sim, loadSpec(t, conn+onLab("worker")+ownerVMSpec), engine.Options{})
	if len(p.Orphans) != 1 || p.Orphans[0].Address != "QemuVM/gone" {
		t.Errorf("orphans %+v, want QemuVM/gone once", p.Orphans)
	}
}

// TestSimOwnedSameName: two orphans of one name are told apart by vmid;
// one marked for another vmid (a hand-made clone) or without the tag is
// nobody's.
func TestSimOwnedSameName(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	mk := func(vmid int, tags, desc string) {
		t.Helper()
		v := url.Values{"vmid": {itoa(vmid)}, "name": {"dup"}, "memory": {"512"}, "description": {desc}}
		if tags != "" {
			v.Set("tags", tags)
		}
		if err := sim.cl.CreateGuest(ctx, pve.QEMU, "pve", v); err != nil {
			t.Fatal(err)
		}
	}
	mk(201, "pvectl", marks.OwnerMark(engine.DefaultStack, 201))
	mk(202, "pvectl;web", "note\n"+marks.OwnerMark(engine.DefaultStack, 202))
	mk(203, "pvectl", marks.OwnerMark(engine.DefaultStack, 201)) // a clone of 201
	mk(204, "", marks.OwnerMark(engine.DefaultStack, 204))       // the tag was removed
	p := planFor(t, sim, loadSpec(t, ownerVMSpec), engine.Options{})
	var got []string
	for _, o := range p.Orphans {
		got = append(got, o.Address+" "+o.What)
	}
	if diff := cmp.Diff([]string{"QemuVM/dup vmid 201", "QemuVM/dup-202 vmid 202"}, got); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
}

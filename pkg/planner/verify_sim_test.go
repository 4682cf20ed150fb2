package planner

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

func TestSimVerifyRefusesChangedLiveState(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, example01YAML(t)), Options{}))

	set := loadSpec(t, strings.Replace(example01YAML(t), "memory: 2048", "memory: 4096", 1))
	p := planFor(t, sim, set, Options{})
	// Someone edits the VM between plan and apply.
	if err := sim.cl.UpdateQemu(ctx, "pve", 100, map[string][]string{"cores": {"4"}}); err != nil {
		t.Fatal(err)
	}
	err := Verify(ctx, sim, p)
	if err == nil || !strings.Contains(err.Error(), "QemuVM/app-vm-1") || !strings.Contains(err.Error(), "run plan again") {
		t.Errorf("Verify: got %v want a refusal naming QemuVM/app-vm-1", err)
	}
}

func TestSimVerifyRefusesCreatedMeanwhile(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: Pool\nname: team\nspec:\n  comment: the team\n")
	p := planFor(t, sim, set, Options{})
	if err := sim.cl.CreatePool(ctx, map[string][]string{"poolid": {"team"}}); err != nil {
		t.Fatal(err)
	}
	err := Verify(ctx, sim, p)
	if err == nil || !strings.Contains(err.Error(), "Pool/team: now exists") {
		t.Errorf("Verify: got %v want a refusal for Pool/team", err)
	}
}

// A VM created by someone else between plan and apply is found by its
// name although /cluster/resources does not know the name yet.
func TestSimVerifyRefusesVMCreatedMeanwhile(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	p := planFor(t, sim, loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 512\n"), Options{})
	if err := sim.cl.CreateQemu(ctx, "pve", url.Values{"vmid": {"150"}, "name": {"web"}}); err != nil {
		t.Fatal(err)
	}
	err := Verify(ctx, sim, p)
	if err == nil || !strings.Contains(err.Error(), "QemuVM/web: now exists") {
		t.Errorf("Verify: got %v want a refusal for QemuVM/web", err)
	}
}

func TestSimVerifyRefusesGone(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: Pool\nname: team\n")
	applyPlan(t, sim, planFor(t, sim, set, Options{}))
	p := planFor(t, sim, set, Options{Destroy: true})
	if err := sim.cl.DeletePool(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	err := Verify(ctx, sim, p)
	if err == nil || !strings.Contains(err.Error(), "Pool/team: is gone, but the plan deletes it: run plan again") {
		t.Errorf("Verify: got %v want a refusal for Pool/team", err)
	}
}

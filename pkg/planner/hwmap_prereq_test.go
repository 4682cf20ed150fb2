package planner

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// A guest whose node the connection chooses, with a mapped device whose
// mapping has no entry for that node: the plan refuses it, naming the
// node and PVE's refusal at start — the mapping in the specs or only in
// PVE. With an entry for the node it plans.
func TestSimMappingWithoutGuestNode(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	const onPve2 = "kind: HardwareMapping\nname: stick\nspec:\n  type: usb\n  map: [\"node=pve2,id=0781:5583,path=1-2\"]\n"
	const vm = "kind: QemuVM\nname: hw\nspec:\n  vmid: 180\n  memory: 512\n  usb0: mapping=stick\n"
	const want = "usb mapping stick has no entry for node pve"
	plan := func(yaml string) error {
		set := loadSpec(t, yaml)
		_, err := tryPlan(t, sim, set, engine.Options{})
		return err
	}
	if err := plan(onPve2 + "---\n" + vm); err == nil || !strings.Contains(err.Error(), "(HardwareMapping/stick) has no entry for node pve") {
		t.Errorf("mapping in the specs: %v, want it refused for node pve", err)
	}
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, onPve2), engine.Options{}))
	if err := plan(vm); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "USB device mapping not found for 'stick'") {
		t.Errorf("mapping in PVE: %v, want %q", err, want)
	}
	// A mapping PVE does not have: PVE makes a stopped guest naming it
	// (its start fails), so only a guest the apply starts is refused.
	missing := strings.Replace(vm, "mapping=stick", "mapping=nosuch", 1)
	if err := plan(missing); err != nil {
		t.Errorf("stopped guest, missing mapping: %v, want a plan", err)
	}
	if err := plan(missing + "  running: true\n"); err == nil || !strings.Contains(err.Error(), "usb mapping nosuch does not exist") ||
		!strings.Contains(err.Error(), "USB device mapping not found for 'nosuch'") {
		t.Errorf("started guest, missing mapping: %v, want it refused", err)
	}
	both := strings.Replace(onPve2, `["node=pve2,id=0781:5583,path=1-2"]`, `["node=pve2,id=0781:5583,path=1-2", "node=pve,id=0781:5583,path=1-2"]`, 1)
	if err := plan(both + "---\n" + vm); err != nil {
		t.Errorf("with an entry for pve: %v, want a plan", err)
	}
}

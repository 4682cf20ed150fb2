package planner

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
)

// The seeded vmbr0 as a read-only LinuxBridge and a VM on it: pvectl
// creates only the VM, destroy removes only the VM, and naming a bridge
// that does not exist fails the plan.
const managedFalseSpec = `kind: LinuxBridge
name: vmbr0
managed: false
spec:
  node: pve
  bridge_ports: eno9
---
kind: QemuVM
name: on-vmbr0
spec:
  vmid: 140
  memory: 512
  net0: virtio,bridge=vmbr0
`

func TestSimManagedFalse(t *testing.T) {
	sim := newSim(t)
	set := loadSpec(t, managedFalseSpec)
	if diff := cmp.Diff([]string{"LinuxBridge/vmbr0"}, set.DepGraph().Deps["QemuVM/on-vmbr0"]); diff != "" {
		t.Errorf("the VM depends on the read-only bridge (-want +got):\n%s", diff)
	}
	p := planFor(t, sim, set, engine.Options{})
	// bridge_ports differs from the live eno1: a read-only resource still
	// plans nothing.
	wantPlan(t, "plan", p, []string{"noop LinuxBridge/vmbr0", "create QemuVM/on-vmbr0 <- LinuxBridge/vmbr0"})
	applyPlan(t, sim, p)
	if i := committedIface(t, sim, "vmbr0", "apply"); i != nil && i.Get("bridge_ports") != "eno1" {
		t.Errorf("vmbr0 was changed: bridge_ports %q", i.Get("bridge_ports"))
	}

	d := planFor(t, sim, set, engine.Options{Destroy: true})
	wantPlan(t, "destroy plan", d, []string{"delete QemuVM/on-vmbr0", "noop LinuxBridge/vmbr0 <- QemuVM/on-vmbr0"})
	applyPlan(t, sim, d)
	if liveIface(t, sim, "vmbr0") == nil {
		t.Errorf("destroy removed the read-only vmbr0")
	}

	missing := loadSpec(t, strings.ReplaceAll(managedFalseSpec, "vmbr0", "vmbr7"))
	_, err := tryPlan(t, sim, missing, engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "LinuxBridge/vmbr7 does not exist, and it is managed: false") {
		t.Errorf("plan with a missing read-only bridge: got %v want it named", err)
	}
}

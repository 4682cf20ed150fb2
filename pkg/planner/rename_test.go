package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
)

// Issue 23 (2): a VM document renamed with renamedFrom is one in-place
// update — same vmid, new name — and the next plan is clean, with or
// without the key; a container the same by hostname.
func TestSimRenamedFrom(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	before := "kind: QemuVM\nname: worker-1\nspec: {node: pve, memory: 512}\n---\nkind: LxcContainer\nname: dns1\nspec: {node: pve, ostemplate: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', rootfs: 'local-lvm:4'}\n"
	p := planFor(t, sim, loadSpec(t, before), engine.Options{})
	applyPlan(t, sim, p)
	ids := map[string]int{}
	for _, c := range p.Changes {
		ids[c.Address] = stateOf(c).Created
	}

	renamed := "kind: QemuVM\nname: worker-01\nrenamedFrom: worker-1\nspec: {node: pve, memory: 512}\n---\nkind: LxcContainer\nname: dns01\nrenamedFrom: dns1\nspec: {node: pve, ostemplate: 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', rootfs: 'local-lvm:4'}\n"
	p = planFor(t, sim, loadSpec(t, renamed), engine.Options{})
	if diff := cmp.Diff([]string{"update LxcContainer/dns01", "update QemuVM/worker-01"}, sorted(summary(p))); diff != "" {
		t.Fatalf("rename plan (-want +got):\n%s", diff)
	}
	for _, c := range p.Changes {
		if !strings.HasPrefix(c.Reasons[0], "renamed from ") {
			t.Errorf("%s: reasons %q, want the rename named first", c.Address, c.Reasons)
		}
	}
	applyPlan(t, sim, p)
	vm, err := sim.cl.QemuConfig(ctx, "pve", ids["QemuVM/worker-1"])
	if err != nil || vm.Get("name") != "worker-01" {
		t.Errorf("vm %d after the rename: name %q (%v), want worker-01 with the same vmid", ids["QemuVM/worker-1"], vm.Get("name"), err)
	}
	ct, err := sim.cl.GuestConfig(ctx, "lxc", "pve", ids["LxcContainer/dns1"])
	if err != nil || ct.Get("hostname") != "dns01" {
		t.Errorf("ct %d after the rename: hostname %q (%v), want dns01", ids["LxcContainer/dns1"], ct.Get("hostname"), err)
	}
	if p := planFor(t, sim, loadSpec(t, renamed), engine.Options{}); p.HasChanges() {
		t.Errorf("plan after the rename: %q, want clean", summary(p))
	}
	without := strings.ReplaceAll(strings.ReplaceAll(renamed, "renamedFrom: worker-1\n", ""), "renamedFrom: dns1\n", "")
	if p := planFor(t, sim, loadSpec(t, without), engine.Options{}); p.HasChanges() {
		t.Errorf("plan without renamedFrom: %q, want clean", summary(p))
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

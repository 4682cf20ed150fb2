package planner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// createPaths are the diff paths of the create of the VM of
// TestCreateDiffConveniences with keys written beside its own, sorted.
func createPaths(keys ...string) []string {
	return slices.Sorted(slices.Values(append(keys, "memory", "name", "node", "running")))
}

// TestCreateDiffConveniences: a create's diff shows the key the user
// wrote (ip, vlan, bridge), not also the PVE key it stands for; a net0
// the user wrote beside vlan is shown too, and the wire params are the
// same either way.
func TestCreateDiffConveniences(t *testing.T) {
	sim := newSim(t)
	for _, tc := range []struct {
		name, keys string
		want       []string // diff paths
		params     map[string]string
	}{
		{"ip", "ip: 10.0.5.20/24\n  gateway: 10.0.5.1", createPaths("gateway", "ip"), map[string]string{"ipconfig0": "ip=10.0.5.20/24,gw=10.0.5.1"}},
		{"vlan", "bridge: vmbr0\n  vlan: 30", createPaths("bridge", "vlan"), map[string]string{"net0": "virtio,bridge=vmbr0,tag=30"}},
		{"bridge", "bridge: vmbr0", createPaths("bridge"), map[string]string{"net0": "virtio,bridge=vmbr0"}},
		{"net0 written", "net0: e1000,bridge=vmbr0,firewall=1\n  vlan: 30", createPaths("net0", "vlan"), map[string]string{"net0": "e1000,bridge=vmbr0,firewall=1,tag=30"}},
		{"ipconfig0 written", "ipconfig0: ip=dhcp", createPaths("ipconfig0"), map[string]string{"ipconfig0": "ip=dhcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n  running: false\n  "+tc.keys+"\n")
			c := planFor(t, sim, set, engine.Options{}).Change("QemuVM/web")
			var got []string
			for _, d := range c.Diff {
				got = append(got, d.Path)
			}
			if c.Action != engine.Create || !slices.Equal(got, tc.want) {
				t.Errorf("%s, diff %v; want a create showing %v", c.Action, got, tc.want)
			}
			for k, v := range tc.params {
				if c.Resource.Params.Get(k) != v {
					t.Errorf("param %s: got %q want %q", k, c.Resource.Params.Get(k), v)
				}
			}
		})
	}
}

// TestUpdateDiffConveniences: an update's diff keeps PVE's paths (what
// the update sends, and its effects and privileges are worked out from)
// and labels those the user wrote as a convenience with it (ip, gateway,
// vlan): the plan text shows the label. Keys written as PVE's own, and
// the sub-keys of a net0 the user wrote, get no label.
func TestUpdateDiffConveniences(t *testing.T) {
	sim := newSim(t)
	type shown struct{ path, label string }
	for i, tc := range []struct {
		name, before, after string
		want                []shown
	}{
		{"ip", "ip: 10.0.5.20/24", "ip: 10.0.5.21/24",
			[]shown{{"ipconfig0.ip", "ip"}}},
		{"ip and gateway", "ip: 10.0.5.20/24\n  gateway: 10.0.5.1", "ip: 10.0.6.20/24\n  gateway: 10.0.6.254",
			[]shown{{"ipconfig0.ip", "ip"}, {"ipconfig0.gw", "gateway"}}},
		{"vlan", "bridge: vmbr0\n  vlan: 30", "bridge: vmbr0\n  vlan: 40",
			[]shown{{"net0.tag", "vlan"}}},
		{"net0 written beside vlan", "net0: e1000,bridge=vmbr0\n  vlan: 30", "net0: e1000,bridge=vmbr0,firewall=1\n  vlan: 40",
			[]shown{{"net0.firewall", ""}, {"net0.tag", "vlan"}}},
		{"PVE keys", "ipconfig0: ip=10.0.5.20/24,gw=10.0.5.1\n  net0: virtio,bridge=vmbr0,tag=30",
			"ipconfig0: ip=10.0.5.21/24,gw=10.0.5.1\n  net0: virtio,bridge=vmbr0,tag=40",
			[]shown{{"ipconfig0.ip", ""}, {"net0.tag", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := func(keys string) string {
				return fmt.Sprintf("kind: QemuVM\nname: web%d\nspec:\n  memory: 1024\n  running: false\n  %s\n", i, keys)
			}
			addr := fmt.Sprintf("QemuVM/web%d", i)
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc(tc.before)), engine.Options{}))
			if c := planFor(t, sim, loadSpec(t, doc(tc.before)), engine.Options{}).Change(addr); c.Action != engine.NoOp {
				t.Fatalf("after apply: %s %v, want noop", c.Action, c.Diff)
			}
			c := planFor(t, sim, loadSpec(t, doc(tc.after)), engine.Options{}).Change(addr)
			var got []shown
			for _, d := range c.Diff {
				got = append(got, shown{d.Path, d.Label})
			}
			if c.Action != engine.Update || !slices.Equal(got, tc.want) {
				t.Errorf("%s, diff %+v; want an update of %+v", c.Action, got, tc.want)
			}
		})
	}
}

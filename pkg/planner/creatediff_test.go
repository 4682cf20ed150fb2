package planner

import (
	"slices"
	"testing"
)

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
		{"ip", "ip: 10.0.5.20/24\n  gateway: 10.0.5.1",
			[]string{"gateway", "ip", "memory", "name", "node", "running"},
			map[string]string{"ipconfig0": "ip=10.0.5.20/24,gw=10.0.5.1"}},
		{"vlan", "bridge: vmbr0\n  vlan: 30",
			[]string{"bridge", "memory", "name", "node", "running", "vlan"},
			map[string]string{"net0": "virtio,bridge=vmbr0,tag=30"}},
		{"bridge", "bridge: vmbr0",
			[]string{"bridge", "memory", "name", "node", "running"},
			map[string]string{"net0": "virtio,bridge=vmbr0"}},
		{"net0 written", "net0: e1000,bridge=vmbr0,firewall=1\n  vlan: 30",
			[]string{"memory", "name", "net0", "node", "running", "vlan"},
			map[string]string{"net0": "e1000,bridge=vmbr0,firewall=1,tag=30"}},
		{"ipconfig0 written", "ipconfig0: ip=dhcp",
			[]string{"ipconfig0", "memory", "name", "node", "running"},
			map[string]string{"ipconfig0": "ip=dhcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n  running: false\n  "+tc.keys+"\n")
			c := planFor(t, sim, set, Options{}).Change("QemuVM/web")
			var got []string
			for _, d := range c.Diff {
				got = append(got, d.Path)
			}
			if c.Action != Create || !slices.Equal(got, tc.want) {
				t.Errorf("%s, diff %v; want a create showing %v", c.Action, got, tc.want)
			}
			for k, v := range tc.params {
				if c.Resource.Params[k] != v {
					t.Errorf("param %s: got %q want %q", k, c.Resource.Params[k], v)
				}
			}
		})
	}
}

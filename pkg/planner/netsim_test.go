package planner

import (
	"context"
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

// newCheckedSim is newSim behind the official-schema checker.
func newCheckedSim(t *testing.T) *simClients {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Conformance: true,
		Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
}

// planErr builds a plan that must fail and returns its error.
func planErr(t *testing.T, cl engine.Clients, set *spec.Set) error {
	t.Helper()
	p, err := tryPlan(t, cl, set, engine.Options{})
	if err == nil {
		t.Fatalf("Build: got plan %q, want an error", summary(p))
	}
	return err
}

// nodeNetwork is node pve's interfaces and its staged changes.
func nodeNetwork(t *testing.T, sim *simClients) ([]*pve.Config, string) {
	t.Helper()
	ifaces, changes, err := sim.cl.NetworkList(context.Background(), "pve")
	if err != nil {
		t.Fatal(err)
	}
	return ifaces, changes
}

// rowWith is the first row whose key is value, or nil.
func rowWith(rows []*pve.Config, key, value string) *pve.Config {
	for _, r := range rows {
		if r.Get(key) == value {
			return r
		}
	}
	return nil
}

// committedIface is node pve's interface name (nil: none) after an
// apply that must leave no network change staged; when names the apply.
func committedIface(t *testing.T, sim *simClients, name, when string) *pve.Config {
	t.Helper()
	ifaces, changes := nodeNetwork(t, sim)
	if changes != "" {
		t.Errorf("network changes staged after %s: got %q want none", when, changes)
	}
	return rowWith(ifaces, "iface", name)
}

func liveIface(t *testing.T, sim *simClients, name string) *pve.Config {
	t.Helper()
	ifaces, _ := nodeNetwork(t, sim)
	return rowWith(ifaces, "iface", name)
}

// PVE turns VLAN awareness on for bridge_vlan_aware=0: false is sent as
// leaving the key out (create) or deleting it (update).
func TestSimBridgeVlanAwareFalse(t *testing.T) {
	sim := newCheckedSim(t)
	doc := func(aware bool) string {
		a := "false"
		if aware {
			a = "true"
		}
		return "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n  bridge_vlan_aware: " + a +
			"\n---\nkind: NetworkApply\nname: pve\n"
	}
	for i, aware := range []bool{false, true, false} {
		set := loadSpec(t, doc(aware))
		p := planFor(t, sim, set, engine.Options{})
		if c := p.Change("LinuxBridge/vmbr1"); i == 2 {
			if got := c.Params; got["delete"] != "bridge_vlan_aware" || got["bridge_vlan_aware"] != "" {
				t.Errorf("turning VLAN awareness off: got params %v, want delete=bridge_vlan_aware and no bridge_vlan_aware", got)
			}
		}
		applyPlan(t, sim, p)
		if got := liveIface(t, sim, "vmbr1").Get("bridge_vlan_aware") == "1"; got != aware {
			t.Errorf("step %d: got VLAN-aware %v, want %v", i, got, aware)
		}
		if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
			t.Errorf("step %d: plan after apply %q, want clean", i, summary(p))
		}
	}
}

// A VLAN list on a bridge that is not VLAN-aware is never written: the
// plan says so instead of updating it for ever.
func TestSimBridgeVidsNeedVlanAware(t *testing.T) {
	sim := newCheckedSim(t)
	err := planErr(t, sim, loadSpec(t, "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n  bridge_vids: 10 20\n"))
	for _, want := range []string{"LinuxBridge/vmbr1", "bridge_vids", "bridge_vlan_aware: true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to name %q", err, want)
		}
	}
	set := loadSpec(t, "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n  bridge_vlan_aware: true\n  bridge_vids: 10 20\n---\nkind: NetworkApply\nname: pve\n")
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	wantConverged(t, t.Errorf, sim, set, "plan after apply")
}

// A node has one default gateway (and one IPv6 one): pve-manager
// Network.pm refuses a second; the plan names the holder before apply.
func TestSimSecondDefaultGateway(t *testing.T) {
	const vmbr1 = "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n  cidr: 10.0.0.2/24\n  gateway: 10.0.0.1\n"
	const apply = "---\nkind: NetworkApply\nname: pve\n"
	const vmbr0Drops = "---\nkind: LinuxBridge\nname: vmbr0\nspec:\n  gateway: null\n"
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"held live by vmbr0", vmbr1 + apply, []string{"LinuxBridge/vmbr1", "spec.yaml:6", "gateway:",
			"interface vmbr0", "Default gateway already exists on interface 'vmbr0'."}},
		{"dropped by vmbr0 but not ordered", vmbr1 + vmbr0Drops + apply, []string{"LinuxBridge/vmbr1", "gateway:",
			"until LinuxBridge/vmbr0 removes it", "dependsOn: [LinuxBridge/vmbr0]"}},
		{"two new ones", strings.Replace(vmbr1, "spec:\n", "dependsOn: [LinuxBridge/vmbr0]\nspec:\n", 1) +
			"---\nkind: LinuxBridge\nname: vmbr2\ndependsOn: [LinuxBridge/vmbr0]\nspec:\n  bridge_ports: eno3\n  cidr: 10.1.0.2/24\n  gateway: 10.1.0.1\n" +
			vmbr0Drops + apply, []string{"LinuxBridge/vmbr1", "LinuxBridge/vmbr2 sets node pve's default gateway too"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newCheckedSim(t)
			err := planErr(t, sim, loadSpec(t, tc.doc))
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}

	// Ordered after vmbr0 gives it up, the move plans and applies, and
	// settles.
	sim := newCheckedSim(t)
	set := loadSpec(t, strings.Replace(vmbr1, "spec:\n", "dependsOn: [LinuxBridge/vmbr0]\nspec:\n", 1)+vmbr0Drops+apply)
	p := planFor(t, sim, set, engine.Options{})
	want := []string{"update LinuxBridge/vmbr0", "create LinuxBridge/vmbr1 <- LinuxBridge/vmbr0",
		"apply NetworkApply/pve <- LinuxBridge/vmbr0,LinuxBridge/vmbr1"}
	if diff := cmp.Diff(want, summary(p)); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	if got := liveIface(t, sim, "vmbr1").Get("gateway"); got != "10.0.0.1" {
		t.Errorf("vmbr1 gateway: got %q want 10.0.0.1", got)
	}
	if got := liveIface(t, sim, "vmbr0"); got.Get("gateway") != "" || got.Get("cidr") != "192.168.100.2/24" {
		t.Errorf("vmbr0: got %v, want its address without the gateway", got)
	}
	wantConverged(t, t.Errorf, sim, set, "plan after apply")
}

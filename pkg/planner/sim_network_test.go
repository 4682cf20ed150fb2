package planner

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// Interfaces against the simulator: staged changes and their commit.

func TestSimBridgeUpdateIsCommitted(t *testing.T) {
	sim := newSim(t)
	const base = "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n---\nkind: NetworkApply\nname: pve\ndependsOn: [LinuxBridge/vmbr1]\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, base), engine.Options{}))
	set := loadSpec(t, strings.Replace(base, "bridge_ports: eno2", "bridge_ports: eno3 eno2", 1))
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"update LinuxBridge/vmbr1", "apply NetworkApply/pve <- LinuxBridge/vmbr1"})
	applyPlan(t, sim, p)
	if i := committedIface(t, sim, "vmbr1", "update"); i != nil && !compare.EqualSet(i.Get("bridge_ports"), "eno2 eno3") {
		t.Errorf("vmbr1 ports: got %q want eno2 eno3", i.Get("bridge_ports"))
	}
	wantConverged(t, t.Errorf, sim, set, "plan after update")
}

func TestSimNetworkApplyWithoutPendingIsNoop(t *testing.T) {
	sim, rc := newCountingSim(t)
	set := loadSpec(t, "kind: NetworkApply\nname: pve\n")
	p := planFor(t, sim, set, engine.Options{})
	if p.Changes[0].Action != engine.NoOp {
		t.Fatalf("plan: got %q want noop", summary(p))
	}
	// A saved plan may say "apply" while someone committed meanwhile.
	p.Changes[0].Action = engine.ApplyNet
	rc.reset()
	h := &recHooks{}
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: h}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NetworkApply/pve: no pending network changes on node pve"}, h.messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if n := rc.reset()["PUT /nodes/pve/network"]; n != 0 {
		t.Errorf("commits: got %d want 0", n)
	}
}

// TestSimBridgeUpdateKeepsUnmanagedAddress: an address set outside the
// specs survives an update of another setting (PVE's PUT would otherwise
// stage the bridge with method manual and drop the IP on commit).
func TestSimBridgeUpdateKeepsUnmanagedAddress(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	// A node has one default gateway: vmbr0 gives its up first.
	err := sim.cl.UpdateIface(ctx, "pve", "vmbr0", url.Values{"type": {"bridge"}, "cidr": {"192.168.100.2/24"}, "delete": {"gateway"}})
	if err != nil {
		t.Fatal(err)
	}
	err = sim.cl.CreateIface(ctx, "pve", url.Values{"iface": {"vmbr1"}, "type": {"bridge"}, "bridge_ports": {"eno2"},
		"cidr": {"10.0.0.2/24"}, "gateway": {"10.0.0.1"}, "comments": {"uplink"}, "autostart": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.cl.ApplyNetwork(ctx, "pve"); err != nil {
		t.Fatal(err)
	}
	set := loadSpec(t, "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n  bridge_vlan_aware: true\n---\nkind: NetworkApply\nname: pve\ndependsOn: [LinuxBridge/vmbr1]\n")
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"update LinuxBridge/vmbr1", "apply NetworkApply/pve <- LinuxBridge/vmbr1"})
	applyPlan(t, sim, p)
	got := liveIface(t, sim, "vmbr1")
	want := map[string]string{"method": "static", "cidr": "10.0.0.2/24", "gateway": "10.0.0.1", "bridge_vlan_aware": "1", "autostart": "1"}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("vmbr1 %s: got %q want %q (all: %v)", k, got.Get(k), v, got)
		}
	}
	wantConverged(t, t.Errorf, sim, set, "plan after update")
}

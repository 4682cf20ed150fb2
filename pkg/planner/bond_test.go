package planner

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// newCheckedCountingSim is newCheckedSim with a request counter.
func newCheckedCountingSim(t *testing.T) (*simClients, *requestCounter) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Conformance: true,
		Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}, &requestCounter{s.Requests}
}

// bondSpec is the bond of ../shared/examples/04-every-kind.yaml, with a
// bridge on it and the node's commit.
const bondSpec = `kind: BondInterface
name: bond0
spec:
  node: pve
  iface: bond0
  slaves: eno3 eno4
  bond_mode: 802.3ad
  bond_xmit_hash_policy: layer3+4
  autostart: true
---
kind: LinuxBridge
name: vmbr1
spec:
  node: pve
  bridge_ports: bond0
  autostart: true
---
kind: NetworkApply
name: pve
spec:
  node: pve
`

func TestSimBondLifecycle(t *testing.T) {
	sim, rc := newCheckedCountingSim(t)
	set := loadSpec(t, bondSpec)
	p := planFor(t, sim, set, engine.Options{})
	want := []string{"create BondInterface/bond0", "create LinuxBridge/vmbr1 <- BondInterface/bond0",
		"apply NetworkApply/pve <- BondInterface/bond0,LinuxBridge/vmbr1"}
	if diff := cmp.Diff(want, summary(p)); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	if n := applyCommits(t, sim, rc, p); n != 1 {
		t.Errorf("commits: got %d want 1", n)
	}
	bond := liveIface(t, sim, "bond0")
	for k, v := range map[string]string{"type": "bond", "slaves": "eno3 eno4", "bond_mode": "802.3ad", "bond_xmit_hash_policy": "layer3+4", "active": "1"} {
		if bond.Get(k) != v {
			t.Errorf("bond0 %s: got %q want %q", k, bond.Get(k), v)
		}
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after apply")

	// Another mode: the hash policy goes (the writer would drop it), the
	// primary comes; the update sends the whole definition.
	set = loadSpec(t, strings.Replace(bondSpec, "  bond_mode: 802.3ad\n  bond_xmit_hash_policy: layer3+4\n",
		"  bond_mode: active-backup\n  bond-primary: eno3\n  bond_xmit_hash_policy: null\n  mtu: 9000\n", 1))
	p = planFor(t, sim, set, engine.Options{})
	c := p.Change("BondInterface/bond0")
	if c.Action != engine.Update || c.Params["type"] != "bond" || c.Params["slaves"] != "eno3 eno4" || c.Params["delete"] != "bond_xmit_hash_policy" {
		t.Fatalf("mode change: got %s with params %v, want an update with type, slaves and delete=bond_xmit_hash_policy", c.Action, c.Params)
	}
	applyPlan(t, sim, p)
	if got := liveIface(t, sim, "bond0"); got.Get("bond-primary") != "eno3" || got.Get("mtu") != "9000" || got.Get("bond_xmit_hash_policy") != "" {
		t.Errorf("bond0 after the mode change: got %v", got)
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after the mode change")

	// Destroy: the bridge goes before its bond, one commit for both.
	p = planFor(t, sim, set, engine.Options{Destroy: true})
	want = []string{"delete LinuxBridge/vmbr1", "delete BondInterface/bond0 <- LinuxBridge/vmbr1",
		"apply NetworkApply/pve <- BondInterface/bond0,LinuxBridge/vmbr1"}
	if diff := cmp.Diff(want, summary(p)); diff != "" {
		t.Fatalf("destroy plan (-want +got):\n%s", diff)
	}
	if n := applyCommits(t, sim, rc, p); n != 1 {
		t.Errorf("destroy commits: got %d want 1", n)
	}
	for _, name := range []string{"bond0", "vmbr1"} {
		if liveIface(t, sim, name) != nil {
			t.Errorf("%s still there after destroy", name)
		}
	}
	if p := planFor(t, sim, set, engine.Options{Destroy: true}); p.HasChanges() {
		t.Errorf("destroy plan after destroy: got %q, want clean", summary(p))
	}
}

// What PVE refuses or drops in a bond's call is a plan error at the key,
// with the mode the bond will have.
func TestSimBondPlanChecks(t *testing.T) {
	const head = "kind: BondInterface\nname: bond0\nspec:\n"
	tests := []struct {
		name  string
		setup func(e *simClients)
		doc   string
		want  []string
	}{
		{"hash policy with the default mode", nil, head + "  slaves: eno3 eno4\n  bond_xmit_hash_policy: layer2\n",
			[]string{"BondInterface/bond0 (", "spec.yaml:5", "bond_xmit_hash_policy is kept only with bond_mode balance-xor or 802.3ad",
				"PVE's default mode (the spec sets no bond_mode), balance-rr"}},
		{"primary with the live mode", func(e *simClients) { mustCall(t, e, "POST", "iface=bond0&type=bond&slaves=eno3&bond_mode=802.3ad") },
			head + "  bond-primary: eno3\n",
			[]string{"spec.yaml:4", "bond-primary is kept only with bond_mode active-backup", "its live bond_mode (the spec sets none), 802.3ad"}},
		{"missing slave", nil, head + "  slaves: eno3 eno9\n",
			[]string{"slaves names eno9, which node pve does not have", "wrong interface type on slave 'eno9' ('' != 'eth or bond')"}},
		{"slave of the wrong type", nil, head + "  slaves: vmbr0\n",
			[]string{"slaves names vmbr0, a bridge", "('bridge' != 'eth or bond')"}},
		{"slave held by a bridge", nil, head + "  slaves: eno1\n",
			[]string{"eno1 is a port of interface vmbr0 on node pve already", "eno1 is already used on interface 'vmbr0'."}},
		{"slave given up by a bridge without ordering", nil, head + "  slaves: eno1\n---\nkind: LinuxBridge\nname: vmbr0\nspec:\n  bridge_ports: eno2\n",
			[]string{"interface vmbr0 holds eno1 until LinuxBridge/vmbr0 gives it up", "dependsOn: [LinuxBridge/vmbr0]"}},
		{"a bridge as a bridge's port", nil, "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: vmbr0\n",
			[]string{"bridge_ports names vmbr0, a bridge: Linux does not make a bridge the port of another bridge"}},
		{"a port with an address", func(e *simClients) { mustCall(t, e, "PUT", "iface=eno2&type=eth&cidr=10.9.0.2/24") },
			"kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n",
			[]string{"bridge_ports names eno2, which has an address of its own (PVE refuses: iface eno2 - ip address can't be set on interface if bridged in vmbr1)"}},
		{"a missing bridge port", nil, "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno7\n",
			[]string{"bridge 'vmbr1' - unable to find bridge port 'eno7'"}},
		{"primary not among live slaves", func(e *simClients) {
			mustCall(t, e, "POST", "iface=bond0&type=bond&slaves=eno3&bond_mode=active-backup")
		}, head + "  bond-primary: eno4\n", []string{"bond-primary \"eno4\" is not one of the bond's slaves \"eno3\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newCheckedSim(t)
			if tc.setup != nil {
				tc.setup(sim)
			}
			err := planErr(t, sim, loadSpec(t, tc.doc))
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// mustCall stages an interface through the API, as someone else would.
// applyCommits applies p and returns how many network commits it sent.
func applyCommits(t *testing.T, sim *simClients, rc *requestCounter, p *engine.Plan) int {
	t.Helper()
	rc.reset()
	applyPlan(t, sim, p)
	return rc.reset()["PUT /nodes/pve/network"]
}

func mustCall(t *testing.T, sim *simClients, method, query string) {
	t.Helper()
	vals, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	switch method {
	case "POST":
		err = sim.cl.CreateIface(ctx, "pve", vals)
	default:
		iface := vals.Get("iface")
		vals.Del("iface")
		err = sim.cl.UpdateIface(ctx, "pve", iface, vals)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, query, err)
	}
}

// A bond slave the configuration names but the host lacks: the plan warns,
// as the commit's reload will fail on it.
func TestSimBondWarnsOfAbsentSlave(t *testing.T) {
	sim := newCheckedSim(t)
	mustCall(t, sim, "POST", "iface=eno9&type=eth")
	if err := sim.cl.ApplyNetwork(context.Background(), "pve"); err != nil {
		t.Fatal(err)
	}
	p := planFor(t, sim, loadSpec(t, "kind: BondInterface\nname: bond0\nspec:\n  slaves: eno3 eno9\n"), engine.Options{})
	c := p.Change("BondInterface/bond0")
	found := false
	for _, r := range c.Reasons {
		found = found || strings.Contains(r, "slaves eno9 is in node pve's network configuration but not on the host")
	}
	if !found {
		t.Errorf("reasons: got %q, want a warning about eno9", c.Reasons)
	}
}

// Deleting an interface another one uses as a port: PVE's writer refuses
// it, so the plan does unless the user goes first.
func TestSimRemoveInterfaceInUse(t *testing.T) {
	const bond = "kind: BondInterface\nname: bond0\nspec:\n  slaves: eno3 eno4\n"
	const absentBond = "kind: BondInterface\nname: bond0\nstate: absent\n"
	tests := []struct {
		name    string
		doc     string
		destroy bool
		want    string // "" plans fine
	}{
		{"destroy under a bridge the specs do not manage", bond, true,
			"interface vmbr1 of node pve, which these specs do not manage, uses bond0 as a port (PVE refuses to delete it: bridge 'vmbr1' - unable to find bridge port 'bond0')"},
		{"destroy with the bridge in the specs", bond + "---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: bond0\n", true, ""},
		{"absent while a bridge keeps it", absentBond + "---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  autostart: true\n", false,
			"LinuxBridge/vmbr1 keeps bond0 as a port"},
		{"absent while a bridge drops it, unordered", absentBond + "---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n", false,
			"add `dependsOn: [LinuxBridge/vmbr1]`"},
		{"absent after the bridge drops it", strings.Replace(absentBond, "state: absent\n", "state: absent\ndependsOn: [LinuxBridge/vmbr1]\n", 1) +
			"---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n", false, ""},
		{"both absent", absentBond + "---\nkind: LinuxBridge\nname: vmbr1\nstate: absent\nspec:\n  bridge_ports: bond0\n", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newCheckedSim(t)
			mustCall(t, sim, "POST", "iface=bond0&type=bond&slaves=eno3+eno4")
			mustCall(t, sim, "POST", "iface=vmbr1&type=bridge&bridge_ports=bond0")
			set := loadSpec(t, tc.doc)
			p, err := tryPlan(t, sim, set, engine.Options{Destroy: tc.destroy})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Build: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Build: got %v (plan %q), want an error containing %q", err, summary(p), tc.want)
			case tc.want == "":
				applyPlan(t, sim, p)
			}
		})
	}
}

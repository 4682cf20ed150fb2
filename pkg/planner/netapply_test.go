package planner

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve"
)

func TestStagedDiff(t *testing.T) {
	const changes = "--- /etc/network/interfaces\t2025-01-01 10:00:00.000000000 +0000\n" +
		"+++ /etc/network/interfaces.new\t2025-01-02 11:00:00.000000000 +0000\n" +
		"@@ -10,3 +10,6 @@\n \tbridge-fd 0\n \n+auto vmbr9\n+iface vmbr9 inet manual\n+--- not a header\n \n"
	want := "@@ -10,3 +10,6 @@\n \tbridge-fd 0\n \n+auto vmbr9\n+iface vmbr9 inet manual\n+--- not a header"
	if got := stagedDiff(changes); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := stagedDiff(""); got != "" {
		t.Errorf("no changes: got %q", got)
	}
}

// foreignVmbr9 stages a bridge the way someone else would (the GUI).
func foreignVmbr9(t *testing.T, sim *simClients) {
	t.Helper()
	mustCall(t, sim, "POST", "iface=vmbr9&type=bridge&bridge_ports=eno2&autostart=1&comments=by+hand")
}

// Staged changes pvectl did not make: the plan shows them, Apply refuses
// them before changing anything unless allowed, and then commits them
// with the plan's own.
func TestSimForeignStagedChanges(t *testing.T) {
	sim, rc := newCheckedCountingSim(t)
	foreignVmbr9(t, sim)
	set := loadSpec(t, bondSpec)
	p := planFor(t, sim, set, engine.Options{})
	c := p.Change("NetworkApply/pve")
	if c.Action != engine.ApplyNet {
		t.Fatalf("commit: got %s, want apply", c.Action)
	}
	joined := strings.Join(c.Reasons, "\n")
	for _, w := range []string{"node pve has staged network changes that pvectl did not make; apply commits them only with --allow-foreign-network-changes:",
		"  +auto vmbr9", "  +iface vmbr9 inet manual", "  +\tbridge-ports eno2", "  +#by hand",
		"BondInterface/bond0 will stage a change"} {
		if !strings.Contains(joined, w) {
			t.Errorf("reasons:\n%s\nwant a line %q", joined, w)
		}
	}

	rc.reset()
	_, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "NetworkApply/pve: node pve has staged network changes that pvectl did not make") ||
		!strings.Contains(err.Error(), "Nothing was changed") {
		t.Fatalf("Apply: got %v, want a refusal before anything ran", err)
	}
	for call, n := range rc.reset() {
		if !strings.HasPrefix(call, "GET ") {
			t.Errorf("a refused apply sent %s (%d times)", call, n)
		}
	}

	res, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{AllowForeignNetworkChanges: true})
	if err != nil {
		t.Fatalf("Apply allowing them: %v (%+v)", err, res)
	}
	if _, changes, _ := sim.cl.NetworkList(context.Background(), "pve"); changes != "" {
		t.Errorf("after the commit: still staged %q", changes)
	}
	if liveIface(t, sim, "vmbr9").Get("active") != "1" || liveIface(t, sim, "bond0").Get("active") != "1" {
		t.Errorf("vmbr9 and bond0 should both be committed and up")
	}
	wantConverged(t, t.Errorf, sim, set, "plan after apply")
}

// A change made after the plan is refused at commit time, allowed or not;
// the plan's own changes stay staged.
func TestSimStagedChangeAfterPlan(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		before func(t *testing.T, sim *simClients) // staged before the plan
		after  func(t *testing.T, sim *simClients) // staged between plan and commit
		want   string
	}{
		{"a new interface beside this plan's", bondSpec, nil, foreignVmbr9,
			"node pve: interface(s) vmbr9 changed in the staged configuration since the plan, and this plan did not change them"},
		{"an edit of an interface this plan leaves alone", bondSpec, nil, func(t *testing.T, sim *simClients) {
			mustCall(t, sim, "PUT", "iface=vmbr0&type=bridge&bridge_ports=eno1&cidr=192.168.100.2/24&gateway=192.168.100.1&mtu=1400")
		}, "interface(s) vmbr0 changed"},
		{"foreign changes edited since the plan showed them", "kind: NetworkApply\nname: pve\n", foreignVmbr9, func(t *testing.T, sim *simClients) {
			mustCall(t, sim, "PUT", "iface=vmbr9&type=bridge&bridge_ports=eno2&comments=edited")
		}, "the staged network changes are not those the plan showed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim, rc := newCheckedCountingSim(t)
			if tc.before != nil {
				tc.before(t, sim)
			}
			p := planFor(t, sim, loadSpec(t, tc.doc), engine.Options{})
			tc.after(t, sim)
			rc.reset()
			res, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{AllowForeignNetworkChanges: true})
			if err == nil || !strings.Contains(res.Failed["NetworkApply/pve"].Error(), tc.want) {
				t.Fatalf("Apply: got %v, want NetworkApply/pve to fail with %q", err, tc.want)
			}
			if n := rc.reset()["PUT /nodes/pve/network"]; n != 0 {
				t.Errorf("commits: got %d want 0", n)
			}
		})
	}
}

// reloadFails leaves a NIC stanza for a card the host lacks (eno9): a bond
// on it stages, and the reload fails on it.
const reloadFails = `kind: BondInterface
name: bond0
spec:
  slaves: eno3 eno9
  autostart: true
---
kind: LinuxBridge
name: vmbr0
spec:
  mtu: 1400
---
kind: NetworkApply
name: pve
`

func TestSimReloadFailure(t *testing.T) {
	for _, revert := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "reverted"}[revert], func(t *testing.T) {
			sim, rc := newCheckedCountingSim(t)
			ctx := context.Background()
			mustCall(t, sim, "POST", "iface=eno9&type=eth")
			if err := sim.cl.ApplyNetwork(ctx, "pve"); err != nil {
				t.Fatal(err)
			}
			before, _ := nodeNetwork(t, sim)
			doc := reloadFails
			if revert {
				doc += "spec:\n  revertOnFailure: true\n"
			}
			p := planFor(t, sim, loadSpec(t, doc), engine.Options{})
			rc.reset()
			h := &recHooks{}
			res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{Hooks: h})
			if err == nil {
				t.Fatal("Apply: got no error, want the reload's failure")
			}
			msg := res.Failed["NetworkApply/pve"].Error()
			for _, w := range []string{"apply network on node pve: task", "command 'ifreload -a' failed: exit code 1",
				"task log (last lines):", "bond0 : error: bond0: skipping slave eno9, does not exist"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\nwant it to contain %q", msg, w)
				}
			}
			after, changes := nodeNetwork(t, sim)
			if changes != "" {
				t.Errorf("staged after the failure: %q, want nothing", changes)
			}
			commits := rc.reset()["PUT /nodes/pve/network"]
			if !revert {
				if !strings.Contains(msg, "set revertOnFailure: true on NetworkApply/pve") || commits != 1 {
					t.Errorf("without revert: got %d commits and %q, want 1 and the hint", commits, msg)
				}
				if byIface(after)["bond0"] == nil {
					t.Error("without revert the new configuration stays, bond0 included")
				}
				if len(res.Reverted) != 0 || !slices.Contains(res.Done, "BondInterface/bond0") {
					t.Errorf("without revert: got done %v, reverted %v; want bond0 done (it stays)", res.Done, res.Reverted)
				}
				return
			}
			// The interface changes were made and undone: reverted, not done.
			if diff := cmp.Diff([]string{"BondInterface/bond0", "LinuxBridge/vmbr0"}, slices.Sorted(maps.Keys(res.Reverted))); diff != "" || len(res.Done) != 0 {
				t.Errorf("with revert: got done %v, reverted %v; want both interfaces reverted and nothing done (-want +got):\n%s", res.Done, res.Reverted, diff)
			}
			if !strings.Contains(msg, "reverted: node pve's interfaces are back as the plan found them, and reloaded") || commits != 2 {
				t.Errorf("with revert: got %d commits and %q, want 2 and the revert", commits, msg)
			}
			wantMsg := "NetworkApply/pve: reload failed on node pve; reverting: delete bond0, restore eno3, restore eno9, restore vmbr0"
			if !cmp.Equal(h.messages[len(h.messages)-1], wantMsg) {
				t.Errorf("messages: got %q, want the last %q", h.messages, wantMsg)
			}
			if diff := cmp.Diff(digests(before), digests(after)); diff != "" {
				t.Errorf("interfaces after the revert differ from before (-before +after):\n%s", diff)
			}
		})
	}
}

func digests(ifaces []*pve.Config) map[string]string {
	out := map[string]string{}
	for _, c := range ifaces {
		out[c.Get("iface")] = ifaceDigest(c)
	}
	return out
}

// The revert's calls depend on each other: the bond can only go once the
// bridge has its old port back. Refused calls are retried after the others.
func TestSimRevertOrdersItself(t *testing.T) {
	sim := newCheckedSim(t)
	ctx := context.Background()
	mustCall(t, sim, "POST", "iface=eno9&type=eth")
	mustCall(t, sim, "POST", "iface=vmbr1&type=bridge&bridge_ports=eno2&autostart=1")
	if err := sim.cl.ApplyNetwork(ctx, "pve"); err != nil {
		t.Fatal(err)
	}
	before, _ := nodeNetwork(t, sim)
	const doc = "kind: BondInterface\nname: bond0\nspec:\n  slaves: eno3 eno9\n  autostart: true\n" +
		"---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: bond0\n" +
		"---\nkind: NetworkApply\nname: pve\nspec:\n  revertOnFailure: true\n"
	p := planFor(t, sim, loadSpec(t, doc), engine.Options{})
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{})
	if err == nil {
		t.Fatal("Apply: got no error, want the reload's failure")
	}
	if msg := res.Failed["NetworkApply/pve"].Error(); !strings.Contains(msg, "reverted: node pve's interfaces are back as the plan found them, and reloaded") {
		t.Fatalf("got %q, want a complete revert", msg)
	}
	after, _ := nodeNetwork(t, sim)
	if diff := cmp.Diff(digests(before), digests(after)); diff != "" {
		t.Errorf("interfaces after the revert differ from before (-before +after):\n%s", diff)
	}
}

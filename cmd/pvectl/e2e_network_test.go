package main

import (
	"context"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// every04 is testdata/examples/04-every-kind.yaml (a copy of the shared example)
// with the kinds this pvectl manages in full; the compute VM, which needs
// configDrive and a PCI mapping, and the kinds not implemented yet are
// left out.
func every04(t *testing.T) string {
	t.Helper()
	keep := []string{"Connection", "Pool", "BondInterface", "NodeDns", "NetworkApply", "LxcContainer"}
	return example(t, "04-every-kind.yaml", func(s string) string {
		var out []string
		for _, doc := range strings.Split(s, "\n---\n") {
			for _, line := range strings.Split(doc, "\n") {
				if kind, ok := strings.CutPrefix(line, "kind: "); ok && slices.Contains(keep, kind) {
					out = append(out, doc)
					break
				}
			}
		}
		return strings.Join(out, "\n---\n") + "\n"
	})
}

// networkCommits counts the commits (PUT /nodes/pve/network) since the
// last reset.
func (e *simEnv) networkCommits() int {
	return e.requests.Reset()["PUT /nodes/pve/network"]
}

func TestE2EEveryKindNetwork(t *testing.T) {
	env := startSim(t)
	f := every04(t)
	r := env.mustRun(2, "plan", "-f", f, "--detailed-exitcode", "--no-color")
	containsAll(t, "plan", r.stdout, "+ BondInterface/bond0", "! NetworkApply/pve", "BondInterface/bond0 will stage a change")
	env.requests.Reset()
	env.mustRun(0, "apply", "-f", f, "--auto-approve", "--no-color")
	if n := env.networkCommits(); n != 1 {
		t.Errorf("apply: %d network commits, want 1", n)
	}
	ifaces, changes, err := env.client.NetworkList(context.Background(), "pve")
	if err != nil {
		t.Fatal(err)
	}
	var bond map[string]string
	for _, i := range ifaces {
		if i.Get("iface") == "bond0" {
			bond = i.Map()
		}
	}
	if bond == nil || bond["slaves"] != "eno3 eno4" || bond["bond_mode"] != "802.3ad" || bond["bond_xmit_hash_policy"] != "layer3+4" || changes != "" {
		t.Errorf("after apply: bond0 %v, staged %q; want the example's bond, committed", bond, changes)
	}
	r = env.mustRun(0, "plan", "-f", f, "--detailed-exitcode", "--no-color")
	if !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("second plan is not clean:\n%s", r.stdout)
	}

	env.requests.Reset()
	env.mustRun(0, "destroy", "-f", f, "--auto-approve", "--no-color")
	if n := env.networkCommits(); n != 1 {
		t.Errorf("destroy: %d network commits, want 1", n)
	}
	assertIface(t, env, "bond0", false)
	r = env.mustRun(2, "plan", "-f", f, "--detailed-exitcode", "--no-color")
	if !strings.Contains(r.stdout, "+ BondInterface/bond0") {
		t.Errorf("plan after destroy should create the bond again:\n%s", r.stdout)
	}
}

// A staged network change made through the API beforehand: the plan shows
// it, and apply refuses to commit it (changing nothing) unless
// --allow-foreign-network-changes; so does applying a saved plan.
func TestE2EForeignNetworkChanges(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	vals := url.Values{"iface": {"vmbr9"}, "type": {"bridge"}, "bridge_ports": {"eno2"}, "autostart": {"1"}, "comments": {"staged by hand"}}
	if err := env.client.CreateIface(ctx, "pve", vals); err != nil {
		t.Fatal(err)
	}
	f := every04(t)
	r := env.mustRun(2, "plan", "-f", f, "--detailed-exitcode", "--no-color")
	containsAll(t, "plan", r.stdout, "node pve has staged network changes that pvectl did not make", "+auto vmbr9", "+iface vmbr9 inet manual", "+#staged by hand")
	planFile := filepath.Join(t.TempDir(), "plan.out")
	env.mustRun(2, "plan", "-f", f, "--out", planFile, "--detailed-exitcode", "--no-color")

	env.requests.Reset()
	r = env.mustRun(1, "apply", "-f", f, "--auto-approve", "--no-color")
	if !strings.Contains(r.stderr, "--allow-foreign-network-changes") || !strings.Contains(r.stderr, "Nothing was changed") {
		t.Errorf("apply without the flag: stderr lacks the refusal:\n%s", r.stderr)
	}
	r = env.mustRun(1, "apply", planFile, "--no-color")
	if !strings.Contains(r.stderr, "--allow-foreign-network-changes") {
		t.Errorf("apply FILE without the flag: stderr lacks the refusal:\n%s", r.stderr)
	}
	for call, n := range env.requests.Reset() {
		switch {
		case call == "POST /pools" || call == "DELETE /pools":
			// The run lock, taken and released by each of the two runs.
			if n != 2 {
				t.Errorf("%s sent %d times, want twice (the run lock of two runs)", call, n)
			}
		case !strings.HasPrefix(call, "GET "):
			t.Errorf("a refused apply sent %s", call)
		}
	}
	ifaces, changes, err := env.client.NetworkList(ctx, "pve")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		if i.Get("iface") == "bond0" {
			t.Error("a refused apply staged bond0")
		}
	}
	if !strings.Contains(changes, "+iface vmbr9 inet manual") || strings.Contains(changes, "bond0") {
		t.Errorf("after the refusals: staged %q, want only the hand-made vmbr9", changes)
	}

	env.mustRun(0, "apply", planFile, "--allow-foreign-network-changes", "--no-color")
	if n := env.networkCommits(); n != 1 {
		t.Errorf("apply: %d network commits, want 1", n)
	}
	assertIface(t, env, "vmbr9", true)
	assertIface(t, env, "bond0", true)
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode", "--no-color")
}

// A reload that fails: apply shows the task log's tail and, with
// revertOnFailure, puts the interfaces back.
func TestE2EFailedReloadIsReverted(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	// A NIC stanza left from a card the host no longer has.
	if err := env.client.CreateIface(ctx, "pve", url.Values{"iface": {"eno9"}, "type": {"eth"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.client.ApplyNetwork(ctx, "pve"); err != nil {
		t.Fatal(err)
	}
	f := writeSpec(t, "bond.yaml", "kind: BondInterface\nname: bond0\nspec:\n  slaves: eno3 eno9\n  autostart: true\n---\nkind: NetworkApply\nname: pve\nspec:\n  revertOnFailure: true\n")
	r := env.mustRun(2, "plan", "-f", f, "--detailed-exitcode", "--no-color")
	if !strings.Contains(r.stdout, "slaves eno9 is in node pve's network configuration but not on the host") {
		t.Errorf("plan lacks the warning about eno9:\n%s", r.stdout)
	}
	env.requests.Reset()
	r = env.mustRun(1, "apply", "-f", f, "--auto-approve", "--no-color")
	out := r.stdout + r.stderr
	containsAll(t, "apply output", out, "command 'ifreload -a' failed: exit code 1", "bond0 : error: bond0: skipping slave eno9, does not exist",
		"reverted: node pve's interfaces are back as the plan found them, and reloaded")
	if n := env.networkCommits(); n != 2 {
		t.Errorf("commits: got %d, want 2 (the failed one and the revert)", n)
	}
	assertIface(t, env, "bond0", false)
	// The bond was made and undone: the summary says reverted, not created.
	containsAll(t, "apply summary", r.stdout, "Apply incomplete: 0 changed; 1 failed, 1 reverted.", "reverted (made, then undone):\n    BondInterface/bond0 (reverted: the network commit on node pve failed)")
	// The same in --json, which the event schema allows.
	r = env.mustRun(1, "apply", "-f", f, "--auto-approve", "--json")
	validateLines(t, eventSchema(t), r.stdout)
	sum := lastJSONLine(t, r.stdout)
	if got := addresses(sum["reverted"]); len(got) != 1 || got[0] != "BondInterface/bond0" {
		t.Errorf("--json summary reverted: got %v, want BondInterface/bond0", got)
	}
	if counts, _ := sum["counts"].(map[string]any); len(counts) != 0 || len(addresses(sum["done"])) != 0 {
		t.Errorf("--json summary: got counts %v and done %v, want nothing done", sum["counts"], sum["done"])
	}
}

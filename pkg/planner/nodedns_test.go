package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve"
)

// TestSimNodeDNS: NodeDns updates the node's resolv.conf in place, shows
// the name servers PVE will drop, keeps the live ones when the spec names
// none, and is left alone by destroy.
func TestSimNodeDNS(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	read := func() *pve.Config {
		t.Helper()
		var cfg *pve.Config
		if err := sim.cl.Do(ctx, "GET", "/nodes/pve/dns", nil, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	set := loadSpec(t, "kind: NodeDns\nname: pve\nspec:\n  search: lab.example.com\n  dns1: 10.8.10.11\n  dns2: 10.8.10.12\n")
	p := planFor(t, sim, set, engine.Options{})
	c := p.Changes[0]
	want := []engine.FieldDiff{
		{Path: "search", Before: "local", After: "lab.example.com"},
		{Path: "dns1", Before: "192.168.100.1", After: "10.8.10.11"},
		{Path: "dns2", Before: nil, After: "10.8.10.12"},
	}
	if diff := cmp.Diff(want, c.Diff); c.Action != engine.Update || diff != "" {
		t.Fatalf("plan: got %s (-want +got):\n%s", c.Action, diff)
	}
	applyPlan(t, sim, p)
	if diff := cmp.Diff(pve.ConfigOf(map[string]string{"search": "lab.example.com", "dns1": "10.8.10.11", "dns2": "10.8.10.12"}), read()); diff != "" {
		t.Errorf("after apply (-want +got):\n%s", diff)
	}
	wantConverged(t, t.Errorf, sim, set, "second plan")

	// One server fewer: PVE drops dns2, and the plan says so.
	one := loadSpec(t, "kind: NodeDns\nname: pve\nspec:\n  search: lab.example.com\n  dns1: 10.8.10.11\n")
	p = planFor(t, sim, one, engine.Options{})
	if c := p.Changes[0]; len(c.Diff) != 1 || c.Diff[0].Path != "dns2" || c.Diff[0].After != nil ||
		!strings.Contains(strings.Join(c.Reasons, "\n"), "PVE drops a server") {
		t.Fatalf("plan with one server fewer: got %+v, reasons %q", c.Diff, c.Reasons)
	}

	// Only a search domain: the servers are not managed and stay.
	search := loadSpec(t, "kind: NodeDns\nname: pve\nspec:\n  search: other.example.com\n")
	p = planFor(t, sim, search, engine.Options{})
	applyPlan(t, sim, p)
	if diff := cmp.Diff(pve.ConfigOf(map[string]string{"search": "other.example.com", "dns1": "10.8.10.11", "dns2": "10.8.10.12"}), read()); diff != "" {
		t.Errorf("search-only spec (-want +got):\n%s", diff)
	}
	if d := planFor(t, sim, search, engine.Options{Destroy: true}); d.HasChanges() {
		t.Errorf("destroy: got %q want nothing (a node keeps its DNS settings)", summary(d))
	}
}

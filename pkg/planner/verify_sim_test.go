package planner

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// wantRefused makes meddle's change behind p's back, then checks that
// Verify refuses p saying each of wants.
func wantRefused(t *testing.T, sim *simClients, p *engine.Plan, meddle func() error, wants ...string) {
	t.Helper()
	if err := meddle(); err != nil {
		t.Fatal(err)
	}
	wantSays(t, engine.Verify(context.Background(), sim, p), wants...)
}

func TestSimVerifyRefusesChangedLiveState(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, example01YAML(t)), engine.Options{}))

	set := loadSpec(t, strings.Replace(example01YAML(t), "memory: 2048", "memory: 4096", 1))
	p := planFor(t, sim, set, engine.Options{})
	// Someone edits the VM between plan and apply.
	wantRefused(t, sim, p, func() error { return sim.cl.UpdateQemu(ctx, "pve", 100, map[string][]string{"cores": {"4"}}) }, "QemuVM/app-vm-1", "run plan again")
}

func TestSimVerifyRefusesCreatedMeanwhile(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: Pool\nname: team\nspec:\n  comment: the team\n")
	p := planFor(t, sim, set, engine.Options{})
	wantRefused(t, sim, p, func() error { return sim.cl.CreatePool(ctx, map[string][]string{"poolid": {"team"}}) }, "Pool/team: now exists")
}

// A VM created by someone else between plan and apply is found by its
// name although /cluster/resources does not know the name yet.
func TestSimVerifyRefusesVMCreatedMeanwhile(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	p := planFor(t, sim, loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 512\n"), engine.Options{})
	wantRefused(t, sim, p, func() error { return sim.cl.CreateQemu(ctx, "pve", url.Values{"vmid": {"150"}, "name": {"web"}}) }, "QemuVM/web: now exists")
}

func TestSimVerifyRefusesGone(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: Pool\nname: team\n")
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	p := planFor(t, sim, set, engine.Options{Destroy: true})
	wantRefused(t, sim, p, func() error { return sim.cl.DeletePool(ctx, "team") }, "Pool/team: is gone, but the plan deletes it: run plan again")
}

// A metric server's GET carries no digest (pve-manager
// API2/Cluster/MetricServer.pm read): the plan's fingerprint of its
// settings still sees an edit between plan and apply, also of a setting
// the spec leaves alone.
func TestSimVerifyRefusesChangedMetricServer(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	graph := "kind: MetricServer\nname: graph\nspec:\n  type: graphite\n  server: 127.0.0.7\n  port: 2003\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, graph), engine.Options{}))
	p := planFor(t, sim, loadSpec(t, strings.Replace(graph, "2003", "2004", 1)), engine.Options{})
	wantRefused(t, sim, p, func() error {
		return sim.cl.Do(ctx, "PUT", "/cluster/metrics/server/graph", url.Values{"server": {"127.0.0.7"}, "port": {"2003"}, "mtu": {"1400"}}, nil)
	}, "MetricServer/graph", "run plan again")
}

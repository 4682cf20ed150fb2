package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/runlock"
)

// Issue 17: force-unlock while a run holds the lease: that run's apply
// stops before its next write, naming the lost lease, and makes nothing.
func TestSimApplyStopsOnLostLease(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	info := runlock.NewInfo("apply")
	l, err := runlock.Acquire(ctx, sim, []string{""}, runlock.Options{Info: info})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	p := planFor(t, sim, loadSpec(t, "kind: Pool\nname: lease-a\n---\nkind: Pool\nname: lease-b\n"), engine.Options{})
	if _, err := runlock.ForceUnlock(ctx, sim.cl, info.ID); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{Guard: l.Check})
	if err == nil || len(res.Done) != 0 || !strings.Contains(err.Error(), "lost the run lock "+info.ID) {
		t.Fatalf("apply after the revoke: %v (done %v), want it stopped naming the lease", err, res.Done)
	}
	pools, err := sim.cl.Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		if strings.HasPrefix(p.PoolID, "lease-") {
			t.Errorf("pool %s was made after the lease was lost", p.PoolID)
		}
	}
}

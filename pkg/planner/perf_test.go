package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestPlanCallsPerGuest: a plan of N managed VMs that exist costs one
// config read per VM plus a constant number of lists (permissions,
// /cluster/resources, /nodes, one guest list per node), never a list per
// VM: 2,000 VMs, at most 2,005 calls.
func TestPlanCallsPerGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 2,000 VMs")
	}
	const n = 2000
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	cl := &simClients{cl: s.Client, conn: &spec.Connection{Nodes: []string{"pve"}}}
	set := manyVMs(t, n)
	ctx := context.Background()
	p := planFor(t, cl, set, engine.Options{})
	if res, err := engine.Apply(ctx, cl, p, engine.ApplyOptions{Parallelism: 32}); err != nil || len(res.Failed) > 0 {
		t.Fatalf("apply: %v %v", err, res.Failed)
	}
	s.Requests.Reset()
	p = livePlan(t, cl, set, engine.Options{})
	if p.HasChanges() {
		t.Fatalf("plan after apply has changes")
	}
	calls := s.Requests.Reset()
	total := 0
	for _, c := range calls {
		total += c
	}
	t.Logf("plan of %d VMs: %d calls", n, total)
	if total > n+5 {
		var lists []string
		for k, c := range calls {
			if c > 1 && !strings.HasSuffix(k, "/config") {
				lists = append(lists, fmt.Sprintf("%s ×%d", k, c))
			}
		}
		t.Errorf("plan of %d VMs made %d calls, want ≤ %d; repeated non-config calls: %v", n, total, n+5, lists)
	}
	if cfg := calls["GET /nodes/pve/qemu"]; cfg != 1 {
		t.Errorf("GET /nodes/pve/qemu ×%d, want once", cfg)
	}
}

// manyVMs loads a spec of n QemuVM documents with pinned vmids.
func manyVMs(tb testing.TB, n int) *spec.Set {
	tb.Helper()
	return vmDocs(tb, n, 512, "")
}

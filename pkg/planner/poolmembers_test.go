package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
)

// TestSimPoolStorageMembers: a Pool's storages are its storage members as
// a set: added at create, changed in place, emptied before the pool is
// deleted (PVE deletes only an empty pool).
func TestSimPoolStorageMembers(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	members := func() []string {
		t.Helper()
		p, err := sim.cl.Pool(ctx, "lab")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range p.Members {
			if m.Type == "storage" && !slices.Contains(out, m.Storage) {
				out = append(out, m.Storage)
			}
		}
		slices.Sort(out)
		return out
	}
	const doc = "kind: Pool\nname: lab\nspec:\n  comment: Lab\n  storages: [local, local-lvm]\n"
	set := loadSpec(t, doc)
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	if diff := cmp.Diff([]string{"local", "local-lvm"}, members()); diff != "" {
		t.Fatalf("members after create (-want +got):\n%s", diff)
	}
	wantConverged(t, t.Fatalf, sim, set, "second plan")
	one := loadSpec(t, strings.Replace(doc, "[local, local-lvm]", "[local-lvm]", 1))
	p := planFor(t, sim, one, engine.Options{})
	want := []engine.FieldDiff{{Path: "storages", Before: []any{"local", "local-lvm"}, After: []any{"local-lvm"}}}
	if diff := cmp.Diff(want, p.Changes[0].Diff); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	if diff := cmp.Diff([]string{"local-lvm"}, members()); diff != "" {
		t.Errorf("members after update (-want +got):\n%s", diff)
	}
	wantConverged(t, t.Errorf, sim, one, "plan after update")
	applyPlan(t, sim, planFor(t, sim, one, engine.Options{Destroy: true}))
	pools, err := sim.cl.Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		if p.PoolID == "lab" {
			t.Errorf("destroy left pool lab (with its storage members?)")
		}
	}
}

package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Pools are imported with their comment and, when they have any, their
// storage members (the storages key manages them as a set). pvectl's run
// lock pool is not a resource.

func (poolKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	pools, err := ic.lc.poolList(ctx)
	if err != nil {
		return nil, err
	}
	var out []importItem
	for _, p := range pools {
		if p.PoolID == spec.RunLockPool {
			continue
		}
		// A spec that manages storage members makes observe read them.
		r := &spec.Resource{Kind: spec.KindPool, Name: p.PoolID, State: spec.Present, Params: spec.ParamsOf(map[string]string{"poolid": p.PoolID}),
			Keys: &spec.PoolKeys{Storages: &[]string{}}}
		out = append(out, importItem{r: r, ids: []string{p.PoolID}})
	}
	return out, nil
}

// importLists: GET /pools.
func (poolKind) importLists(lc *liveConn, _ string) []listRead { return []listRead{poolsRead(lc)} }

// importPerms: GET /pools lists only the pools a token may audit.
func (poolKind) importPerms(string) []permNeed {
	return []permNeed{need("/pool", "to list the pools (PVE lists only those a token may audit)", "Pool.Audit")}
}

func (poolKind) importDoc(ic *importCtx, _ *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	id := lo.Config.Get("poolid")
	d := &ImportedDoc{Kind: spec.KindPool, Name: id}
	d.Spec = ic.Fields(d, ic.method("POST", poolCreatePath), lo.Config, "pool_"+id, func(k string) bool { return k == "poolid" }, importdoc.KeepSub)
	if st, ok := lo.State.(*poolLive); ok && len(st.Storages) > 0 {
		d.Spec = append(d.Spec, Field{Key: "storages", Value: st.Storages})
	}
	return d, nil
}

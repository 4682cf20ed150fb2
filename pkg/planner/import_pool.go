package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Pools are imported with their comment and, when they have any, their
// storage members (the storages key manages them as a set). pvectl's run
// lock pool is not a resource.

func (poolKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	pools, err := ic.Lc.PoolList(ctx)
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, p := range pools {
		if p.PoolID == spec.RunLockPool {
			continue
		}
		// A spec that manages storage members makes observe read them.
		r := &spec.Resource{Kind: spec.KindPool, Name: p.PoolID, State: spec.Present, Params: spec.ParamsOf(map[string]string{"poolid": p.PoolID}),
			Keys: &spec.PoolKeys{Storages: &[]string{}}}
		out = append(out, engine.ImportItem{R: r, Ids: []string{p.PoolID}})
	}
	return out, nil
}

// ImportLists: GET /pools.
func (poolKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{engine.PoolsRead(lc)}
}

// ImportPerms: GET /pools lists only the pools a token may audit.
func (poolKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedPriv("/pool", "to list the pools (PVE lists only those a token may audit)", "Pool.Audit")}
}

func (poolKind) ImportDoc(ic *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	id := lo.Config.Get("poolid")
	d := &engine.ImportedDoc{Kind: spec.KindPool, Name: id}
	d.Spec = ic.Fields(d, ic.Method("POST", poolCreatePath), lo.Config, "pool_"+id, func(k string) bool { return k == "poolid" }, importdoc.KeepSub)
	if st, ok := lo.State.(*poolLive); ok && len(st.Storages) > 0 {
		d.Spec = append(d.Spec, engine.Field{Key: "storages", Value: st.Storages})
	}
	return d, nil
}

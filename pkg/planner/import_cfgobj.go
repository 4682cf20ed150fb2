package planner

import (
	"context"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The config-file kinds (cfgKind) are imported from their list: every
// object but those PVE has built in (isBuiltin), with the settings its
// create call takes; a write-only secret the object may hold becomes a
// ${VAR} placeholder (importSecret), since PVE never gives it back.

func (k *cfgKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	rows, err := k.list(ctx, ic.Lc)
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, row := range rows {
		id := row.Get(k.listID)
		if id == "" || (k.isBuiltin != nil && k.isBuiltin(row)) {
			continue
		}
		r := &spec.Resource{Kind: k.kind, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{k.idParam: id})}
		out = append(out, engine.ImportItem{R: r, Ids: []string{id}})
	}
	return out, nil
}

func (k *cfgKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{engine.RowsRead(&lc.CfgLists, k.listPath, func(ctx context.Context) ([]*pve.Config, error) { return k.readList(ctx, lc.Client) })}
}

func (k *cfgKind) ImportPerms(string) []engine.PermNeed {
	return engine.CallNeeds(k.ReadCalls(&spec.Resource{Name: ""}))
}

func (k *cfgKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	id := k.id(r)
	d := &engine.ImportedDoc{Kind: k.kind, Name: id}
	prefix := strings.ToLower(k.kind) + "_" + id
	d.Spec = ic.Fields(d, ic.Method("POST", k.createPath), lo.Config, prefix, func(key string) bool {
		return key == k.idParam || slices.Contains(k.secrets, key)
	}, importdoc.KeepSub)
	if k.importSecret != nil {
		if key := k.importSecret(lo.Config); key != "" {
			d.Spec = append(d.Spec, engine.Field{Key: key, Value: d.Placeholder(prefix, key, "")})
		}
	}
	return d, nil
}

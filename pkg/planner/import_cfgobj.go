package planner

import (
	"context"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The config-file kinds (cfgKind) are imported from their list: every
// object but those PVE has built in (isBuiltin), with the settings its
// create call takes; a write-only secret the object may hold becomes a
// ${VAR} placeholder (importSecret), since PVE never gives it back.

func (k *cfgKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	rows, err := k.list(ctx, ic.lc)
	if err != nil {
		return nil, err
	}
	var out []importItem
	for _, row := range rows {
		id := row.Get(k.listID)
		if id == "" || (k.isBuiltin != nil && k.isBuiltin(row)) {
			continue
		}
		r := &spec.Resource{Kind: k.kind, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{k.idParam: id})}
		out = append(out, importItem{r: r, ids: []string{id}})
	}
	return out, nil
}

func (k *cfgKind) importLists(lc *liveConn, _ string) []listRead {
	return []listRead{rowsRead(&lc.cfgLists, k.listPath, func(ctx context.Context) ([]*pve.Config, error) { return k.readList(ctx, lc.client) })}
}

func (k *cfgKind) importPerms(string) []permNeed {
	return callNeeds(k.readCalls(&spec.Resource{Name: ""}))
}

func (k *cfgKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	id := k.id(r)
	d := &ImportedDoc{Kind: k.kind, Name: id}
	prefix := strings.ToLower(k.kind) + "_" + id
	d.Spec = ic.Fields(d, ic.method("POST", k.createPath), lo.Config, prefix, func(key string) bool {
		return key == k.idParam || slices.Contains(k.secrets, key)
	}, importdoc.KeepSub)
	if k.importSecret != nil {
		if key := k.importSecret(lo.Config); key != "" {
			d.Spec = append(d.Spec, Field{Key: key, Value: d.Placeholder(prefix, key, "")})
		}
	}
	return d, nil
}

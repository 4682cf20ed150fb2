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

// HA resources and rules, backup jobs and replication jobs are imported
// from their lists with PVE's raw ids (sid, resources, vmid, id): the
// guests' documents may be named otherwise than their PVE names, so a
// guest reference (QemuVM/<name>) is the user's to write.

// ImportLists: the kind's list, read in the prefetch round with the
// others.
func (k *sectionKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{sectionListRead(lc, k.list)}
}

// sectionListRead reads the section list at path ahead, where
// sectionRows finds it.
func sectionListRead(lc *engine.LiveConn, path string) engine.ListRead {
	return engine.RowsRead(&lc.Sections, path, func(ctx context.Context) ([]*pve.Config, error) { return engine.ReadSection(ctx, lc.Client, path) })
}

func (k *sectionKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	rows, err := ic.Lc.SectionRows(ctx, k.list)
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, row := range rows {
		if row.Get("remove_job") != "" {
			continue // a replication job being removed
		}
		id := row.Get(k.idKey)
		params := map[string]string{}
		for _, key := range k.importKeys {
			if v := row.Get(key); v != "" {
				params[key] = v
			}
		}
		params[k.idKey] = id
		name := strings.ReplaceAll(id, ":", "-")
		r := &spec.Resource{Kind: k.kind, Name: name, State: spec.Present, Params: spec.ParamsOf(params)}
		out = append(out, engine.ImportItem{R: r, Ids: []string{id, name}})
	}
	return out, nil
}

// ImportPerms: the lists need what reading them truthfully needs.
func (k *sectionKind) ImportPerms(string) []engine.PermNeed {
	return engine.CallNeeds(k.ReadCalls(&spec.Resource{Params: spec.NewParams(0)}))
}

func (k *sectionKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	d := &engine.ImportedDoc{Kind: k.kind, Name: r.Name}
	id := lo.Config.Get(k.idKey)
	skip := func(key string) bool {
		switch {
		case slices.Contains(k.importKeys, key):
			return false
		case key == k.idKey:
			return id == r.Name // the name is the id
		}
		return slices.Contains(k.skip, key) || key == "digest"
	}
	d.Spec = ic.Fields(d, ic.Method("POST", k.list), lo.Config, strings.ToLower(k.kind)+"_"+r.Name, skip, importdoc.KeepSub)
	return d, nil
}

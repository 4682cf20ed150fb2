package planner

import (
	"context"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// HA resources and rules, backup jobs and replication jobs are imported
// from their lists with PVE's raw ids (sid, resources, vmid, id): the
// guests' documents may be named otherwise than their PVE names, so a
// guest reference (QemuVM/<name>) is the user's to write.

// importLists: the kind's list, read in the prefetch round with the
// others.
func (k *sectionKind) importLists(lc *liveConn, _ string) []listRead {
	return []listRead{sectionListRead(lc, k.list)}
}

// sectionListRead reads the section list at path ahead, where
// sectionRows finds it.
func sectionListRead(lc *liveConn, path string) listRead {
	return rowsRead(&lc.sections, path, func(ctx context.Context) ([]*pve.Config, error) { return readSection(ctx, lc.client, path) })
}

func (k *sectionKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	rows, err := ic.lc.sectionRows(ctx, k.list)
	if err != nil {
		return nil, err
	}
	var out []importItem
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
		out = append(out, importItem{r: r, ids: []string{id, name}})
	}
	return out, nil
}

// importPerms: the lists need what reading them truthfully needs.
func (k *sectionKind) importPerms(string) []permNeed {
	return callNeeds(k.readCalls(&spec.Resource{Params: spec.NewParams(0)}))
}

func (k *sectionKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	d := &ImportedDoc{Kind: k.kind, Name: r.Name}
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
	d.Spec = ic.Fields(d, ic.method("POST", k.list), lo.Config, strings.ToLower(k.kind)+"_"+r.Name, skip, importdoc.KeepSub)
	return d, nil
}

package planner

import (
	"context"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Hardware mappings are imported from the three lists (pci, usb, dir):
// the document's name is the mapping id, its map PVE's entries as
// property strings. A pci and a usb mapping may share an id; the second
// one's document is named <type>-<id>.

var hwmapTypes = []string{spec.MappingPCI, spec.MappingUSB, spec.MappingDir}

func (hwmapKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	var out []engine.ImportItem
	used := map[string]bool{}
	for _, typ := range hwmapTypes {
		rows, err := ic.Lc.HWMapRows(ctx, typ)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			id := row.Get("id")
			if id == "" {
				continue
			}
			name := id
			if used[name] {
				name = typ + "-" + id
			}
			used[name] = true
			r := &spec.Resource{Kind: spec.KindHardwareMapping, Name: name, State: spec.Present,
				Params: spec.ParamsOf(map[string]string{"id": id}), Keys: &spec.HardwareMappingKeys{Type: typ}}
			out = append(out, engine.ImportItem{R: r, Ids: []string{name, typ + "/" + id}})
		}
	}
	return out, nil
}

func (hwmapKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	var out []engine.ListRead
	for _, typ := range hwmapTypes {
		path := engine.HWMapListPath(typ)
		out = append(out, engine.RowsRead(&lc.CfgLists, path, func(ctx context.Context) ([]*pve.Config, error) { return engine.ReadHWMaps(ctx, lc.Client, typ) }))
	}
	return out
}

// ImportPerms: listing shows what the token may audit; nothing more is
// needed to read.
func (hwmapKind) ImportPerms(string) []engine.PermNeed { return nil }

func (hwmapKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	typ := hwmapType(r)
	d := &engine.ImportedDoc{Kind: spec.KindHardwareMapping, Name: r.Name}
	if id := hwmapID(r); id != r.Name {
		d.Spec = append(d.Spec, engine.Field{Key: "id", Value: id})
	}
	d.Spec = append(d.Spec, engine.Field{Key: "type", Value: typ})
	settings := pve.NewConfig(0)
	for _, key := range hwmapSettings {
		if v, ok := lo.Config.Lookup(key); ok {
			settings.Set(key, v)
		}
	}
	d.Spec = append(d.Spec, ic.Fields(d, ic.Method("POST", engine.HWMapListPath(typ)), settings, "hardwaremapping_"+r.Name, func(string) bool { return false }, importdoc.KeepSub)...)
	var entries []string
	for _, e := range strings.Split(lo.Config.Get("map"), "\n") {
		if e != "" {
			entries = append(entries, e)
		}
	}
	d.Spec = append(d.Spec, engine.Field{Key: "map", Value: entries})
	return d, nil
}

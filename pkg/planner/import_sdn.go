package planner

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The SDN kinds are imported from the files' view of their lists (what
// PVE will run after the next commit), subnets by the vnets of the files;
// the cluster's SdnApply comes with them (--all) so that their plan
// does not say their changes would stay pending.

// ImportLists: the kind's list in its pending view (for subnets, the
// vnets they are listed by), read in the prefetch round with the others;
// sdnRows shares the answer, as a plan's observe does.
func (k *sdnObjKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	path := k.listPath(nil)
	if k.file == "subnets" {
		path = "/cluster/sdn/vnets"
	}
	return []engine.ListRead{{Key: path, Fetch: func(ctx context.Context) (func(), error) {
		_, err := lc.SDNRows(ctx, path)
		return func() {}, err
	}}}
}

func (k *sdnObjKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	paths := []string{k.listPath(nil)}
	if k.file == "subnets" {
		vnets, err := ic.Lc.SDNRows(ctx, "/cluster/sdn/vnets")
		if err != nil {
			return nil, err
		}
		paths = nil
		for _, v := range vnets {
			if v.Get("state") == "deleted" {
				continue
			}
			paths = append(paths, k.listPath(map[string]string{"vnet": v.Get("vnet")}))
		}
	}
	var out []engine.ImportItem
	for _, path := range paths {
		rows, err := ic.Lc.SDNRows(ctx, path)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if row.Get("state") == "deleted" {
				continue // only in the running config
			}
			out = append(out, k.importItem(row))
		}
	}
	return out, nil
}

// importItem is a listed entry as a resource: named by its id (a
// subnet: <vnet>-<network>-<mask>).
func (k *sdnObjKind) importItem(row *pve.Config) engine.ImportItem {
	if k.file == "subnets" {
		name := row.Get("vnet") + "-" + strings.Replace(row.Get("cidr"), "/", "-", 1)
		r := &spec.Resource{Kind: k.kind, Name: name, State: spec.Present,
			Params: spec.ParamsOf(map[string]string{"vnet": row.Get("vnet"), "subnet": row.Get("cidr"), "type": "subnet"})}
		return engine.ImportItem{R: r, Ids: []string{name, row.Get("subnet")}}
	}
	id := row.Get(k.idKey)
	r := &spec.Resource{Kind: k.kind, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{k.idKey: id})}
	return engine.ImportItem{R: r, Ids: []string{id}}
}

// ImportPerms: the lists show only what the token may audit.
func (k *sdnObjKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedAny("/sdn", "to list every "+spec.Noun(k.kind)+" (PVE lists only those a token may audit)", "SDN.Audit", "SDN.Allocate")}
}

func (k *sdnObjKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	d := &engine.ImportedDoc{Kind: k.kind, Name: r.Name}
	fixed := k.file == "vnets" || k.file == "subnets"
	skip := func(key string) bool {
		return key == k.idKey || key == "digest" || (fixed && key == "type") || key == "vnet" || key == "lock-token"
	}
	var head []engine.Field
	if k.file == "subnets" {
		head = []engine.Field{{Key: "vnet", Value: r.Params.Get("vnet")}, {Key: "subnet", Value: r.Params.Get("subnet")}}
	}
	m := ic.Method("POST", k.createPath)
	d.Spec = append(head, ic.Fields(d, m, lo.Config, strings.ToLower(k.kind)+"_"+r.Name, skip, importdoc.KeepSub)...)
	if k.file == "vnets" {
		d.Spec = append([]engine.Field{{Key: "zone", Value: lo.Config.Get("zone")}}, slices.DeleteFunc(d.Spec, func(f engine.Field) bool { return f.Key == "zone" })...)
	}
	return d, nil
}

// SdnApply: one per connection, written with --all when SDN objects were
// imported, or when named.
func (sdnApplyKind) Importable(context.Context, *engine.ImportCtx, string) ([]engine.ImportItem, error) {
	r := &spec.Resource{Kind: spec.KindSdnApply, Name: "sdn", State: spec.Present, Params: spec.NewParams(0)}
	return []engine.ImportItem{{R: r, Ids: []string{"sdn"}}}, nil
}

func (sdnApplyKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, _ *engine.LiveObj) (*engine.ImportedDoc, error) {
	staged := false
	for _, addr := range slices.Sorted(maps.Keys(ic.Docs)) {
		d := ic.Docs[addr]
		if engine.TraitsOf(d.Kind).CommittedBy == spec.KindSdnApply && !d.ReadOnly {
			staged = true
		}
	}
	if !staged && !ic.Named(r) {
		return nil, nil
	}
	return &engine.ImportedDoc{Kind: spec.KindSdnApply, Name: r.Name}, nil
}

// ImportPerms: the commit is judged from every pending SDN change, which
// only a token that may audit /sdn sees.
func (k sdnApplyKind) ImportPerms(string) []engine.PermNeed {
	return engine.CallNeeds(k.ReadCalls(nil))
}

package planner

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The SDN kinds are imported from the files' view of their lists (what
// PVE will run after the next commit), subnets by the vnets of the files;
// the cluster's SdnApply comes with them (--all) so that their plan
// does not say their changes would stay pending.

// importLists: the kind's list in its pending view (for subnets, the
// vnets they are listed by), read in the prefetch round with the others;
// sdnRows shares the answer, as a plan's observe does.
func (k *sdnObjKind) importLists(lc *liveConn, _ string) []listRead {
	path := k.listPath(nil)
	if k.file == "subnets" {
		path = "/cluster/sdn/vnets"
	}
	return []listRead{{key: path, fetch: func(ctx context.Context) (func(), error) {
		_, err := lc.sdnRows(ctx, path)
		return func() {}, err
	}}}
}

func (k *sdnObjKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	paths := []string{k.listPath(nil)}
	if k.file == "subnets" {
		vnets, err := ic.lc.sdnRows(ctx, "/cluster/sdn/vnets")
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
	var out []importItem
	for _, path := range paths {
		rows, err := ic.lc.sdnRows(ctx, path)
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
func (k *sdnObjKind) importItem(row *pve.Config) importItem {
	if k.file == "subnets" {
		name := row.Get("vnet") + "-" + strings.Replace(row.Get("cidr"), "/", "-", 1)
		r := &spec.Resource{Kind: k.kind, Name: name, State: spec.Present,
			Params: spec.ParamsOf(map[string]string{"vnet": row.Get("vnet"), "subnet": row.Get("cidr"), "type": "subnet"})}
		return importItem{r: r, ids: []string{name, row.Get("subnet")}}
	}
	id := row.Get(k.idKey)
	r := &spec.Resource{Kind: k.kind, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{k.idKey: id})}
	return importItem{r: r, ids: []string{id}}
}

// importPerms: the lists show only what the token may audit.
func (k *sdnObjKind) importPerms(string) []permNeed {
	return []permNeed{needAny("/sdn", "to list every "+spec.Noun(k.kind)+" (PVE lists only those a token may audit)", "SDN.Audit", "SDN.Allocate")}
}

func (k *sdnObjKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	d := &ImportedDoc{Kind: k.kind, Name: r.Name}
	fixed := k.file == "vnets" || k.file == "subnets"
	skip := func(key string) bool {
		return key == k.idKey || key == "digest" || (fixed && key == "type") || key == "vnet" || key == "lock-token"
	}
	var head []Field
	if k.file == "subnets" {
		head = []Field{{Key: "vnet", Value: r.Params.Get("vnet")}, {Key: "subnet", Value: r.Params.Get("subnet")}}
	}
	m := ic.method("POST", k.createPath)
	d.Spec = append(head, ic.Fields(d, m, lo.Config, strings.ToLower(k.kind)+"_"+r.Name, skip, importdoc.KeepSub)...)
	if k.file == "vnets" {
		d.Spec = append([]Field{{Key: "zone", Value: lo.Config.Get("zone")}}, slices.DeleteFunc(d.Spec, func(f Field) bool { return f.Key == "zone" })...)
	}
	return d, nil
}

// SdnApply: one per connection, written with --all when SDN objects were
// imported, or when named.
func (sdnApplyKind) importable(context.Context, *importCtx, string) ([]importItem, error) {
	r := &spec.Resource{Kind: spec.KindSdnApply, Name: "sdn", State: spec.Present, Params: spec.NewParams(0)}
	return []importItem{{r: r, ids: []string{"sdn"}}}, nil
}

func (sdnApplyKind) importDoc(ic *importCtx, r *spec.Resource, _ *liveObj) (*ImportedDoc, error) {
	staged := false
	for _, addr := range slices.Sorted(maps.Keys(ic.docs)) {
		d := ic.docs[addr]
		if traitsOf(d.Kind).CommittedBy == spec.KindSdnApply && !d.ReadOnly {
			staged = true
		}
	}
	if !staged && !ic.named(r) {
		return nil, nil
	}
	return &ImportedDoc{Kind: spec.KindSdnApply, Name: r.Name}, nil
}

// importPerms: the commit is judged from every pending SDN change, which
// only a token that may audit /sdn sees.
func (k sdnApplyKind) importPerms(string) []permNeed { return callNeeds(k.readCalls(nil)) }

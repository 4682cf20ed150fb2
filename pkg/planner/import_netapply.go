package planner

import (
	"context"
	"maps"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A node's network commit is imported for each node whose interfaces
// were imported (with --all), or when named: without it, a plan of the
// interfaces says their changes would stay staged.

func (netApplyKind) Importable(_ context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	nodes := ic.Lc.Nodes
	if node != "" {
		nodes = []string{node}
	}
	var out []engine.ImportItem
	for _, n := range nodes {
		r := &spec.Resource{Kind: spec.KindNetworkApply, Name: n, State: spec.Present, Params: spec.ParamsOf(map[string]string{"node": n})}
		out = append(out, engine.ImportItem{R: r, Ids: []string{n}})
	}
	return out, nil
}

// ImportLists: the nodes' network lists.
func (netApplyKind) ImportLists(lc *engine.LiveConn, node string) []engine.ListRead {
	return engine.NetworkReads(lc, node)
}

// ImportDoc writes the commit of a node, with --all only for a node
// whose interfaces this import manages.
func (netApplyKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	var ifaces []string
	for _, addr := range slices.Sorted(maps.Keys(ic.Docs)) {
		d := ic.Docs[addr]
		// A managed: false interface stages nothing to commit.
		if engine.TraitsOf(d.Kind).CommittedBy == spec.KindNetworkApply && !d.ReadOnly && fieldString(d.Spec, "node") == lo.Node {
			ifaces = append(ifaces, addr)
		}
	}
	if len(ifaces) == 0 && !ic.Named(r) {
		return nil, nil
	}
	return &engine.ImportedDoc{Kind: spec.KindNetworkApply, Name: lo.Node, Spec: []engine.Field{{Key: "node", Value: lo.Node}}}, nil
}

func fieldString(fs []engine.Field, key string) string {
	v, _ := importdoc.Value(fs, key)
	s, _ := v.(string)
	return s
}

package planner

import (
	"context"
	"maps"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A node's network commit is imported for each node whose interfaces
// were imported (with --all), or when named: without it, a plan of the
// interfaces says their changes would stay staged.

func (netApplyKind) importable(_ context.Context, ic *importCtx, node string) ([]importItem, error) {
	nodes := ic.lc.nodes
	if node != "" {
		nodes = []string{node}
	}
	var out []importItem
	for _, n := range nodes {
		r := &spec.Resource{Kind: spec.KindNetworkApply, Name: n, State: spec.Present, Params: spec.ParamsOf(map[string]string{"node": n})}
		out = append(out, importItem{r: r, ids: []string{n}})
	}
	return out, nil
}

// importLists: the nodes' network lists.
func (netApplyKind) importLists(lc *liveConn, node string) []listRead { return networkReads(lc, node) }

// importDoc writes the commit of a node, with --all only for a node
// whose interfaces this import manages.
func (netApplyKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	var ifaces []string
	for _, addr := range slices.Sorted(maps.Keys(ic.docs)) {
		d := ic.docs[addr]
		// A managed: false interface stages nothing to commit.
		if traitsOf(d.Kind).CommittedBy == spec.KindNetworkApply && !d.ReadOnly && fieldString(d.Spec, "node") == lo.Node {
			ifaces = append(ifaces, addr)
		}
	}
	if len(ifaces) == 0 && !ic.named(r) {
		return nil, nil
	}
	return &ImportedDoc{Kind: spec.KindNetworkApply, Name: lo.Node, Spec: []Field{{Key: "node", Value: lo.Node}}}, nil
}

func fieldString(fs []Field, key string) string {
	v, _ := importdoc.Value(fs, key)
	s, _ := v.(string)
	return s
}

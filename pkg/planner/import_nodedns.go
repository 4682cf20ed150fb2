package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A node's DNS settings are imported as its NodeDns: search and the name
// servers it has.

func (nodeDNSKind) Importable(_ context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	nodes := ic.Lc.Nodes
	if node != "" {
		nodes = []string{node}
	}
	var out []engine.ImportItem
	for _, n := range nodes {
		r := &spec.Resource{Kind: spec.KindNodeDns, Name: n, State: spec.Present, Params: spec.ParamsOf(map[string]string{"node": n})}
		out = append(out, engine.ImportItem{R: r, Ids: []string{n}, Lo: dnsObj(ic.Lc.Client, n)})
	}
	return out, nil
}

// dnsObj is a node's DNS settings, read with the other objects' reads
// (observe reads them at once: a plan has a NodeDns or two, an import
// reads every node's beside the guests' configs).
func dnsObj(cl *pve.Client, node string) *engine.LiveObj {
	lo := &engine.LiveObj{Node: node}
	lo.Load = func(ctx context.Context) error {
		got, err := readDNS(ctx, cl, node)
		if err == nil {
			*lo = *got
		}
		return err
	}
	return lo
}

// ImportPerms: GET /nodes/{node}/dns needs Sys.Audit on the node.
func (nodeDNSKind) ImportPerms(node string) []engine.PermNeed {
	path := "/nodes"
	if node != "" {
		path = "/nodes/" + node
	}
	return []engine.PermNeed{engine.NeedPriv(path, "to read the node's DNS settings", "Sys.Audit")}
}

func (nodeDNSKind) ImportDoc(ic *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	d := &engine.ImportedDoc{Kind: spec.KindNodeDns, Name: lo.Node}
	m := ic.Method("PUT", "/nodes/{node}/dns")
	fields := ic.Fields(d, m, lo.Config, "dns_"+lo.Node, func(k string) bool { return k == "node" }, importdoc.KeepSub)
	if len(fields) == 0 {
		return nil, nil
	}
	d.Spec = importdoc.WithFirst(fields, engine.Field{Key: "node", Value: lo.Node})
	return d, nil
}

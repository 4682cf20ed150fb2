package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A node's DNS settings are imported as its NodeDns: search and the name
// servers it has.

func (nodeDNSKind) importable(_ context.Context, ic *importCtx, node string) ([]importItem, error) {
	nodes := ic.lc.nodes
	if node != "" {
		nodes = []string{node}
	}
	var out []importItem
	for _, n := range nodes {
		r := &spec.Resource{Kind: spec.KindNodeDns, Name: n, State: spec.Present, Params: spec.ParamsOf(map[string]string{"node": n})}
		out = append(out, importItem{r: r, ids: []string{n}, lo: dnsObj(ic.lc.client, n)})
	}
	return out, nil
}

// dnsObj is a node's DNS settings, read with the other objects' reads
// (observe reads them at once: a plan has a NodeDns or two, an import
// reads every node's beside the guests' configs).
func dnsObj(cl *pve.Client, node string) *liveObj {
	lo := &liveObj{Node: node}
	lo.load = func(ctx context.Context) error {
		got, err := readDNS(ctx, cl, node)
		if err == nil {
			*lo = *got
		}
		return err
	}
	return lo
}

// importPerms: GET /nodes/{node}/dns needs Sys.Audit on the node.
func (nodeDNSKind) importPerms(node string) []permNeed {
	path := "/nodes"
	if node != "" {
		path = "/nodes/" + node
	}
	return []permNeed{need(path, "to read the node's DNS settings", "Sys.Audit")}
}

func (nodeDNSKind) importDoc(ic *importCtx, _ *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	d := &ImportedDoc{Kind: spec.KindNodeDns, Name: lo.Node}
	m := ic.method("PUT", "/nodes/{node}/dns")
	fields := ic.Fields(d, m, lo.Config, "dns_"+lo.Node, func(k string) bool { return k == "node" }, importdoc.KeepSub)
	if len(fields) == 0 {
		return nil, nil
	}
	d.Spec = importdoc.WithFirst(fields, Field{Key: "node", Value: lo.Node})
	return d, nil
}

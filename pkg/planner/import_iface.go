package planner

import (
	"context"
	"slices"

	"github.com/pvectl/pvectl/pkg/spec"
)

// Interfaces are imported per node from the node's network list, as
// observe reads it (the staged view, interfaces.new, when changes are
// pending: a warning says so).

// ifaceGenerated are what PVE's network reader adds to what was written:
// the VLANs a VLAN-aware bridge allows when none were given
// (pve-common Network.pm: bridge-vids 2-4094).
var ifaceGenerated = map[string]string{"bridge_vids": "2-4094"}

func (k ifaceKind) importable(ctx context.Context, ic *importCtx, node string) ([]importItem, error) {
	nodes := ic.lc.nodes
	if node != "" {
		nodes = []string{node}
	}
	kind := k.kindName()
	var out []importItem
	for _, n := range nodes {
		ln, err := ic.lc.network(ctx, n)
		if err != nil {
			return nil, err
		}
		if ln.changes != "" && !slices.Contains(ic.stagedWarned, n) {
			ic.stagedWarned = append(ic.stagedWarned, n)
			ic.warn("node %s has uncommitted network changes: its interfaces are imported as staged, and its NetworkApply will commit them", n)
		}
		for _, c := range ln.ifaces {
			if c["type"] != k.typ {
				continue
			}
			iface := c["iface"]
			r := &spec.Resource{Kind: kind, Name: iface, State: spec.Present, Params: map[string]string{"node": n, "iface": iface}}
			out = append(out, importItem{r: r, ids: []string{n + "/" + iface, iface}})
		}
	}
	return out, nil
}

func (k ifaceKind) kindName() string {
	if k.typ == "bond" {
		return spec.KindBondInterface
	}
	return spec.KindLinuxBridge
}

// importPerms: GET /nodes/{node}/network needs Sys.Audit on the node.
func (k ifaceKind) importPerms(node string) []permNeed {
	path := "/nodes"
	if node != "" {
		path = "/nodes/" + node
	}
	return []permNeed{need(path, "to list the node's network interfaces", "Sys.Audit")}
}

// importDoc writes an interface: node, iface and the settings the
// create call takes. An address is written once, as cidr (PVE answers
// cidr and address/netmask both, and refuses a call with both).
func (k ifaceKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	kind := k.kindName()
	iface, node := lo.Config["iface"], lo.Node
	d := &ImportedDoc{Kind: kind, Name: ic.docName(kind, iface, iface+"-"+node)}
	m := ic.method("POST", networkCreatePath)
	fields := ic.specFields(d, m, lo.Config, "iface_"+node+"_"+iface, func(key string) bool {
		switch {
		case key == "node" || key == "iface" || key == "type":
			return true
		case (key == "address" || key == "netmask") && lo.Config["cidr"] != "",
			(key == "address6" || key == "netmask6") && lo.Config["cidr6"] != "":
			return true
		case ifaceGenerated[key] != "" && lo.Config[key] == ifaceGenerated[key] && !ic.withGenerated:
			return true
		}
		return false
	}, keepSub)
	first := []Field{{"node", node}}
	if d.Name != iface {
		first = append(first, Field{"iface", iface})
	}
	d.Spec = withFirst(fields, first...)
	return d, nil
}

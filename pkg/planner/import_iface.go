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

// Interfaces are imported per node from the node's network list, as
// observe reads it (the staged view, interfaces.new, when changes are
// pending: a warning says so).

// ifaceGenerated are what PVE's network reader adds to what was written:
// the VLANs a VLAN-aware bridge allows when none were given
// (pve-common Network.pm: bridge-vids 2-4094).
var ifaceGenerated = map[string]string{"bridge_vids": "2-4094"}

func (k ifaceKind) Importable(ctx context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	nodes := ic.Lc.Nodes
	if node != "" {
		nodes = []string{node}
	}
	kind := k.kindName()
	var out []engine.ImportItem
	for _, n := range nodes {
		ln, err := ic.Lc.Network(ctx, n)
		if err != nil {
			return nil, err
		}
		if ln.Changes != "" && !slices.Contains(ic.StagedWarned, n) {
			ic.StagedWarned = append(ic.StagedWarned, n)
			ic.Warn("node %s has uncommitted network changes: its interfaces are imported as staged, and its NetworkApply will commit them", n)
		}
		for _, c := range ln.Ifaces {
			if c.Get("type") != k.typ {
				continue
			}
			iface := c.Get("iface")
			r := &spec.Resource{Kind: kind, Name: iface, State: spec.Present, Params: spec.ParamsOf(map[string]string{"node": n, "iface": iface})}
			out = append(out, engine.ImportItem{R: r, Ids: []string{n + "/" + iface, iface}})
		}
	}
	return out, nil
}

// ImportLists: the nodes' network lists.
func (ifaceKind) ImportLists(lc *engine.LiveConn, node string) []engine.ListRead {
	return engine.NetworkReads(lc, node)
}

func (k ifaceKind) kindName() string {
	if k.typ == "bond" {
		return spec.KindBondInterface
	}
	return spec.KindLinuxBridge
}

// ImportPerms: GET /nodes/{node}/network needs Sys.Audit on the node.
func (k ifaceKind) ImportPerms(node string) []engine.PermNeed {
	path := "/nodes"
	if node != "" {
		path = "/nodes/" + node
	}
	return []engine.PermNeed{engine.NeedPriv(path, "to list the node's network interfaces", "Sys.Audit")}
}

// ImportDoc writes an interface: node, iface and the settings the
// create call takes. An address is written once, as cidr (PVE answers
// cidr and address/netmask both, and refuses a call with both).
func (k ifaceKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	kind := k.kindName()
	iface, node := lo.Config.Get("iface"), lo.Node
	d := &engine.ImportedDoc{Kind: kind, Name: ic.DocName(kind, iface, iface+"-"+node)}
	m := ic.Method("POST", networkCreatePath)
	fields := ic.Fields(d, m, lo.Config, "iface_"+node+"_"+iface, func(key string) bool {
		switch {
		case key == "node" || key == "iface" || key == "type":
			return true
		case (key == "address" || key == "netmask") && lo.Config.Get("cidr") != "",
			(key == "address6" || key == "netmask6") && lo.Config.Get("cidr6") != "":
			return true
		case ifaceGenerated[key] != "" && lo.Config.Get(key) == ifaceGenerated[key] && !ic.WithGenerated:
			return true
		}
		return false
	}, importdoc.KeepSub)
	first := []engine.Field{{Key: "node", Value: node}}
	if d.Name != iface {
		first = append(first, engine.Field{Key: "iface", Value: iface})
	}
	d.Spec = importdoc.WithFirst(fields, first...)
	if !ic.ManageInfrastructure && nodeInfra(ic.Lc.Networks[node], iface) {
		d.ReadOnly = true
		d.Notes = append(d.Notes, "# managed: false: the node's own network (import with --manage-infrastructure to manage it).")
	}
	return d, nil
}

// addressKeys are what give an interface an address or a route of the
// node's own.
var addressKeys = []string{"address", "cidr", "gateway", "address6", "cidr6", "gateway6"}

// nodeInfra reports whether iface carries the node's own network: it
// has an address or a gateway (the management bridge, vmbr0 with the
// address the installer gave), or it is a port of an interface that does
// (a bond under that bridge). Removing it would take the node off the
// network.
func nodeInfra(ln *engine.LiveNetwork, iface string) bool {
	if ln == nil {
		return false
	}
	carries := func(c *pve.Config) bool {
		return slices.ContainsFunc(addressKeys, func(k string) bool { return c.Get(k) != "" })
	}
	if c := ln.Iface(iface); c != nil && carries(c) {
		return true
	}
	for _, c := range ln.Ifaces {
		ports := append(strings.Fields(c.Get("bridge_ports")), strings.Fields(c.Get("slaves"))...)
		if slices.Contains(ports, iface) && c.Get("iface") != iface && carries(c) {
			return true
		}
	}
	return false
}

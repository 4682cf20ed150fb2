package planner

import (
	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The calls a firewall's reads and writes make, per scope; their needs
// come from PVE's rules (permcalls.go).

// fwTmpl is a scope's path as the apidoc spells it, and the parameters
// that fill it; a node's firewall has no aliases nor IP sets.
func fwTmpl(r *spec.Resource) (string, []string, bool) {
	w := spec.FirewallWireOf(r)
	if w == nil {
		return "", nil, false
	}
	switch w.Scope {
	case spec.FirewallCluster:
		return "/cluster/firewall", nil, true
	case spec.FirewallNode:
		return "/nodes/{node}/firewall", []string{"node", w.Node}, true
	case spec.FirewallVnet:
		return "/cluster/sdn/vnets/{vnet}/firewall", []string{"vnet", w.Vnet}, true
	}
	return "/nodes/{node}/" + w.Scope + "/{vmid}/firewall", []string{"node", r.Params.Get("node"), "vmid", r.Params.Get("vmid")}, true
}

// ReadCalls: a scope's options, rules, aliases and IP sets (pve-firewall
// API2/Firewall/{Cluster,Host,VM}.pm, Rules.pm, Aliases.pm, IPSet.pm).
func (firewallKind) ReadCalls(r *spec.Resource) []engine.APICall {
	base, vars, ok := fwTmpl(r)
	if !ok {
		return nil
	}
	var calls []engine.APICall
	for _, sub := range []string{"/options", "/rules", "/aliases", "/ipset"} {
		if _, known := acl.RuleOf("GET", base+sub); known {
			calls = append(calls, engine.Call("GET", base+sub, "to read the firewall", vars...))
		}
	}
	if w := spec.FirewallWireOf(r); w.Scope == spec.FirewallVnet {
		// A vnet's firewall calls are open to all; Vnet.pm checks SDN.Audit
		// or SDN.Allocate on /sdn/zones/<zone>/<vnet>. The zone is not in
		// the Firewall's spec: vnetZoneNeeds puts it in (sdn_vnetzone.go).
		calls[0] = calls[0].With(engine.NeedAny(vnetZoneMarker+w.Vnet, "to read the firewall", "SDN.Audit", "SDN.Allocate"))
	}
	return calls
}

// ChangeCalls: the writes a change may make: options, rules, aliases and
// IP sets (their rules are the scope's one privilege).
func (firewallKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	base, vars, ok := fwTmpl(c.Resource)
	if !ok {
		return nil
	}
	why := "to " + c.Action.String() + " the firewall"
	pos := append([]string{"pos", "0"}, vars...)
	calls := []engine.APICall{
		engine.Call("PUT", base+"/options", why, vars...),
		engine.Call("POST", base+"/rules", why, vars...),
		engine.Call("PUT", base+"/rules/{pos}", why, pos...),
		engine.Call("DELETE", base+"/rules/{pos}", why, pos...),
	}
	for _, sub := range []string{"/aliases", "/ipset"} {
		if _, known := acl.RuleOf("POST", base+sub); known {
			calls = append(calls, engine.Call("POST", base+sub, why, vars...))
		}
	}
	if w := spec.FirewallWireOf(c.Resource); w.Scope == spec.FirewallVnet {
		// Vnet.pm: SDN.Allocate to write (see readCalls).
		calls[0] = calls[0].With(engine.NeedPriv(vnetZoneMarker+w.Vnet, why, "SDN.Allocate"))
	}
	return calls
}

package planner

import (
	"fmt"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Interface calls PVE would refuse, or settle differently than asked, seen
// at plan time from the node's live network list (read anyway) and the
// other interfaces of the specs.

// definedIsOn are the interface flags PVE's writer switches on whenever the
// key is defined, whatever its value (pve-common Network/Interfaces.pm
// __interface_to_string: `if (defined($d->{bridge_vlan_aware}))` writes
// "bridge-vlan-aware yes"). Off is the key's absence: a create leaves it
// out, an update deletes it. autostart is not one: the writer only writes
// "auto" for a true value.
var definedIsOn = map[string]bool{"bridge_vlan_aware": true}

// gatewayKeys are the settings a node has once: pve-manager
// PVE/API2/Network.pm check_duplicate_gateway(6) refuses a second.
var gatewayKeys = []string{"gateway", "gateway6"}

// sendFlags rewrites params (a create's or an update's) so that a false
// flag of definedIsOn is not sent as 0; it returns the keys an update must
// delete instead (those the live interface has).
func sendFlags(params map[string]string, live pve.Config) []string {
	var del []string
	for k := range definedIsOn {
		v, set := params[k]
		if !set {
			continue
		}
		if on, ok := schema.ParseBool(v); ok && !on {
			delete(params, k)
			if _, has := live[k]; has {
				del = append(del, k)
			}
		}
	}
	return del
}

// gatewayHolders names, per gateway key, the interfaces of a node other
// than self that have it set.
func gatewayHolders(ifaces []pve.Config, self string) map[string][]string {
	out := map[string][]string{}
	for _, i := range ifaces {
		if i["iface"] == self {
			continue
		}
		for _, k := range gatewayKeys {
			if i[k] != "" {
				out[k] = append(out[k], i["iface"])
			}
		}
	}
	return out
}

// checkIfaceCall finds what PVE would refuse in the call that creates or
// updates r with sent, or what it would silently not keep.
func checkIfaceCall(b *builder, r *spec.Resource, lo *liveObj, sent map[string]string) error {
	where := r.Address()
	pos := func(key string) string {
		if p, ok := r.KeyPos[key]; ok && p.File != "" {
			return fmt.Sprintf("%s (%s)", where, p)
		}
		return where
	}
	if _, ok := r.Params["bridge_vids"]; ok && !vlanAware(r, lo) {
		return fmt.Errorf("%s: bridge_vids is kept only on a VLAN-aware bridge (PVE writes no VLAN list otherwise, and the plan would never settle): set bridge_vlan_aware: true, or drop bridge_vids", pos("bridge_vids"))
	}
	var holders map[string][]string
	if st, ok := lo.State.(*ifaceLive); ok {
		holders = st.Holders
	}
	for _, key := range gatewayKeys {
		if sent[key] == "" {
			continue
		}
		for _, h := range holders[key] {
			owner := b.ifaceResource(r.Connection, lo.Node, h)
			if owner != nil && dropsKey(owner, key) {
				if b.dependsOn(r, owner) {
					continue
				}
				return fmt.Errorf("%s: %s: interface %s holds node %s's default %s until %s removes it, and PVE checks each call on its own: add `dependsOn: [%s]` so that goes first",
					pos(key), key, h, lo.Node, gatewayWord(key), owner.Address(), owner.Address())
			}
			return fmt.Errorf("%s: %s: node %s has its default %s on interface %s already, and PVE allows one per node (%s): remove it there first, or drop %s here",
				pos(key), key, lo.Node, gatewayWord(key), h, pveGatewayMsg(key, h), key)
		}
		for _, other := range b.ifaceSetters(r, lo.Node, key, holders[key]) {
			return fmt.Errorf("%s: %s: %s sets node %s's default %s too, and PVE allows one per node", pos(key), key, other, lo.Node, gatewayWord(key))
		}
	}
	return nil
}

func gatewayWord(key string) string {
	if key == "gateway6" {
		return "IPv6 gateway"
	}
	return "gateway"
}

// pveGatewayMsg is PVE's own refusal, to recognise it by.
func pveGatewayMsg(key, holder string) string {
	if key == "gateway6" {
		return fmt.Sprintf("Default ipv6 gateway already exists on interface '%s'.", holder)
	}
	return fmt.Sprintf("Default gateway already exists on interface '%s'.", holder)
}

// vlanAware is whether r's bridge will be VLAN-aware after the plan: the
// spec's flag, else the live one.
func vlanAware(r *spec.Resource, lo *liveObj) bool {
	if v, ok := r.Params["bridge_vlan_aware"]; ok {
		on, _ := schema.ParseBool(v)
		return on
	}
	if slices.Contains(r.Remove, "bridge_vlan_aware") {
		return false
	}
	on, _ := schema.ParseBool(lo.Config["bridge_vlan_aware"])
	return on
}

// dropsKey reports whether r's plan takes key off its interface.
func dropsKey(r *spec.Resource, key string) bool {
	return r.State == spec.Absent || slices.Contains(r.Remove, key)
}

// ifaceResource is the resource of the specs that manages iface on node.
func (b *builder) ifaceResource(conn, node, iface string) *spec.Resource {
	for _, o := range b.set.Resources {
		if o.Connection != conn || !is[netStager](o.Kind) || ifaceName(o) != iface {
			continue
		}
		if lo := b.obs.objs[o.Address()]; lo != nil && lo.Node == node {
			return o
		}
	}
	return nil
}

// ifaceSetters lists the other interfaces of the specs that will set key on
// node, leaving out those that hold it live already (held).
func (b *builder) ifaceSetters(r *spec.Resource, node, key string, held []string) []string {
	var out []string
	for _, o := range b.set.Resources {
		if o == r || o.Connection != r.Connection || !is[netStager](o.Kind) || o.ReadOnly || o.State == spec.Absent ||
			b.opts.Destroy || o.Params[key] == "" || ifaceName(o) == ifaceName(r) || slices.Contains(held, ifaceName(o)) {
			continue
		}
		if lo := b.obs.objs[o.Address()]; lo != nil && lo.Node == node {
			out = append(out, o.Address())
		}
	}
	slices.Sort(out)
	return out
}

// dependsOn reports whether r waits for o (an edge of the specs, direct or not).
func (b *builder) dependsOn(r, o *spec.Resource) bool {
	if b.set.Graph != nil {
		return b.set.Graph.Reaches(r.Address(), o.Address())
	}
	for _, d := range r.DependsOn {
		if d.String() == o.Address() {
			return true
		}
	}
	return false
}

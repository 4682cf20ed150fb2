package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

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
func sendFlags(params map[string]string, live *pve.Config) []string {
	var del []string
	for k := range definedIsOn {
		v, set := params[k]
		if !set {
			continue
		}
		if on, ok := schema.ParseBool(v); ok && !on {
			delete(params, k)
			if _, has := live.Lookup(k); has {
				del = append(del, k)
			}
		}
	}
	return del
}

// gatewayHolders names, per gateway key, the interfaces of a node other
// than self that have it set.
func gatewayHolders(ifaces []*pve.Config, self string) map[string][]string {
	out := map[string][]string{}
	for _, i := range ifaces {
		if i.Get("iface") == self {
			continue
		}
		for _, k := range gatewayKeys {
			if i.Get(k) != "" {
				out[k] = append(out[k], i.Get("iface"))
			}
		}
	}
	return out
}

// keyWhere names r and, when known, the file and line of its key.
func keyWhere(r *spec.Resource, key string) string {
	if p, ok := r.KeyPos.Get(key); ok && p.File != "" {
		return fmt.Sprintf("%s (%s)", r.Address(), p)
	}
	return r.Address()
}

// checkIfaceCall finds what PVE would refuse in the call that creates or
// updates r with sent, whatever the interface's type.
func checkIfaceCall(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, sent map[string]string) error {
	pos := func(key string) string { return keyWhere(r, key) }
	var holders map[string][]string
	if st, ok := lo.State.(*ifaceLive); ok {
		holders = st.Holders
	}
	for _, key := range gatewayKeys {
		if sent[key] == "" {
			continue
		}
		for _, h := range holders[key] {
			owner := ifaceResource(b, r.Connection, lo.Node, h)
			if owner != nil && dropsKey(owner, key) {
				if dependsOn(b, r, owner) {
					continue
				}
				return fmt.Errorf("%s: %s: interface %s holds node %s's default %s until %s removes it, and PVE checks each call on its own: add `dependsOn: [%s]` so that goes first",
					pos(key), key, h, lo.Node, gatewayWord(key), owner.Address(), owner.Address())
			}
			return fmt.Errorf("%s: %s: node %s has its default %s on interface %s already, and PVE allows one per node (%s): remove it there first, or drop %s here",
				pos(key), key, lo.Node, gatewayWord(key), h, pveGatewayMsg(key, h), key)
		}
		for _, other := range ifaceSetters(b, r, lo.Node, key, holders[key]) {
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

// dropsKey reports whether r's plan takes key off its interface.
func dropsKey(r *spec.Resource, key string) bool {
	return r.State == spec.Absent || slices.Contains(r.Remove, key)
}

// ifaceResource is the resource of the specs that manages iface on node.
func ifaceResource(b *engine.Builder, conn, node, iface string) *spec.Resource {
	for _, o := range b.Set.Resources {
		if o.Connection != conn || !isIface(o.Kind) || ifaceName(o) != iface {
			continue
		}
		if lo := b.Obs.Objs[o.Address()]; lo != nil && lo.Node == node {
			return o
		}
	}
	return nil
}

// ifaceSetters lists the other interfaces of the specs that will set key on
// node, leaving out those that hold it live already (held).
func ifaceSetters(b *engine.Builder, r *spec.Resource, node, key string, held []string) []string {
	var out []string
	for _, o := range b.Set.Resources {
		if o == r || o.Connection != r.Connection || !isIface(o.Kind) || o.ReadOnly || o.State == spec.Absent ||
			b.Opts.Destroy || o.Params.Get(key) == "" || ifaceName(o) == ifaceName(r) || slices.Contains(held, ifaceName(o)) {
			continue
		}
		if lo := b.Obs.Objs[o.Address()]; lo != nil && lo.Node == node {
			out = append(out, o.Address())
		}
	}
	slices.Sort(out)
	return out
}

// dependsOn reports whether r waits for o (an edge of the specs, direct or not).
func dependsOn(b *engine.Builder, r, o *spec.Resource) bool {
	if b.Set != nil {
		return b.Set.DepGraph().Reaches(r.Address(), o.Address())
	}
	for _, d := range r.DependsOn {
		if d.String() == o.Address() {
			return true
		}
	}
	return false
}

// checkPorts finds what PVE would refuse about the ports (bridge_ports)
// or slaves the spec gives r: one that is not on the node and that no
// interface of the specs creates (the writer: "unable to find bridge port",
// or a bond's "wrong interface type on slave … (” != 'eth or bond')"), a
// slave that is not a NIC or a bond, a bridge port with an address of its
// own, and one another interface holds (pve-manager Network.pm
// check_duplicate_ports). A port the node's configuration names but the
// host lacks is a warning: PVE stages it, and the commit's ifreload fails.
func (k ifaceKind) checkPorts(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj) ([]string, error) {
	v, set := r.Params.Lookup(k.ports)
	if !set {
		return nil, nil
	}
	st, _ := lo.State.(*ifaceLive)
	if st == nil {
		return nil, nil // the node's interfaces were not read
	}
	others := st.Others
	at := keyWhere(r, k.ports)
	var warns []string
	for _, p := range schema.SplitList(v) {
		if p == "none" {
			continue
		}
		live := others[p]
		managed := ifaceResource(b, r.Connection, lo.Node, p)
		if managed != nil && managed.State == spec.Absent {
			return nil, fmt.Errorf("%s: %s names %s, which %s removes", at, k.ports, p, managed.Address())
		}
		if mk, ok := kindOfResource(managed).(ifaceKind); ok && k.typ == "bond" && mk.typ != "bond" {
			return nil, fmt.Errorf("%s: slaves names %s, a %s of these specs: a bond's slaves are NICs or bonds", at, p, mk.typ)
		}
		if live == nil {
			if managed != nil || (k.typ == "bridge" && vlanPort(p, others, func(n string) bool { return ifaceResource(b, r.Connection, lo.Node, n) != nil })) {
				continue
			}
			return nil, fmt.Errorf("%s: %s names %s, which node %s does not have (PVE refuses: %s)", at, k.ports, p, lo.Node, missingPortMsg(k.typ, ifaceName(r), p))
		}
		typ := live.Get("type")
		switch {
		case k.typ == "bond" && typ != "eth" && typ != "bond":
			return nil, fmt.Errorf("%s: slaves names %s, a %s: a bond's slaves are NICs or bonds (PVE refuses: bond '%s' - wrong interface type on slave '%s' ('%s' != 'eth or bond'))",
				at, p, typ, ifaceName(r), p, typ)
		case k.typ == "bridge" && (typ == "bridge" || typ == "OVSBridge"):
			return nil, fmt.Errorf("%s: bridge_ports names %s, a bridge: Linux does not make a bridge the port of another bridge (the kernel refuses it when the commit brings the bridge up)", at, p)
		case k.typ == "bridge" && managed == nil && (live.Get("method") == "static" || live.Get("method6") == "static"):
			return nil, fmt.Errorf("%s: bridge_ports names %s, which has an address of its own (PVE refuses: iface %s - ip address can't be set on interface if bridged in %s): move the address to the bridge",
				at, p, p, ifaceName(r))
		case typ == "eth" && live.Get("exists") != "1":
			warns = append(warns, fmt.Sprintf("%s %s is in node %s's network configuration but not on the host: the commit's reload will fail on it", k.ports, p, lo.Node))
		}
		for _, h := range portHolders(others, p) {
			if h == ifaceName(r) {
				continue
			}
			owner := ifaceResource(b, r.Connection, lo.Node, h)
			if owner != nil && dropsPort(owner, p) {
				if dependsOn(b, r, owner) {
					continue
				}
				return nil, fmt.Errorf("%s: %s: interface %s holds %s until %s gives it up, and PVE checks each call on its own: add `dependsOn: [%s]` so that goes first",
					at, k.ports, h, p, owner.Address(), owner.Address())
			}
			return nil, fmt.Errorf("%s: %s: %s is a port of interface %s on node %s already (PVE refuses: %s is already used on interface '%s'.): take it out there first, or leave it out here",
				at, k.ports, p, h, lo.Node, p, h)
		}
	}
	return warns, nil
}

// missingPortMsg is the writer's refusal of a port it cannot find.
func missingPortMsg(typ, iface, port string) string {
	if typ == "bond" {
		return fmt.Sprintf("bond '%s' - wrong interface type on slave '%s' ('' != 'eth or bond')", iface, port)
	}
	return fmt.Sprintf("bridge '%s' - unable to find bridge port '%s'", iface, port)
}

// vlanPort reports whether p is a VLAN port (eno1.10) whose parent exists
// or is created: the writer makes such a port on the fly.
func vlanPort(p string, live map[string]*pve.Config, managed func(string) bool) bool {
	parent, id, ok := strings.Cut(p, ".")
	if !ok || parent == "" || id == "" || strings.Trim(id, "0123456789") != "" {
		return false
	}
	return live[parent] != nil || managed(parent)
}

// portHolders names the interfaces that list p among their ports or slaves.
func portHolders(ifaces map[string]*pve.Config, p string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ifaces)) {
		for _, k := range []string{"bridge_ports", "slaves", "ovs_ports", "ovs_bonds"} {
			if slices.Contains(schema.SplitList(ifaces[name].Get(k)), p) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// dropsPort reports whether r's plan takes port p off its interface.
func dropsPort(r *spec.Resource, p string) bool {
	if r.State == spec.Absent {
		return true
	}
	for _, k := range []string{"bridge_ports", "slaves"} {
		if slices.Contains(r.Remove, k) {
			return true
		}
		if v, set := r.Params.Lookup(k); set && !slices.Contains(schema.SplitList(v), p) {
			return true
		}
	}
	return false
}

// isIface reports whether kind is a network interface's (LinuxBridge,
// BondInterface).
func isIface(kind string) bool {
	_, ok := engine.Kinds[kind].(ifaceKind)
	return ok
}

// kindOfResource is r's kind (nil for nil or an unknown kind).
func kindOfResource(r *spec.Resource) engine.KindOps {
	if r == nil {
		return nil
	}
	return engine.Kinds[r.Kind]
}

// CheckRemove finds an interface of the node that still lists r's as a
// port or slave when r is deleted: PVE's writer refuses the file then
// ("unable to find bridge port", a bond's missing slave). A holder these
// specs manage is left to the order of the plan: in a destroy it goes
// first when its spec names r; going forward, a holder that gives the
// port up must be waited for.
func (k ifaceKind) CheckRemove(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj) error {
	st, _ := lo.State.(*ifaceLive)
	if st == nil {
		return nil
	}
	name := ifaceName(r)
	for _, h := range portHolders(st.Others, name) {
		owner := ifaceResource(b, r.Connection, lo.Node, h)
		switch {
		case owner == nil:
			return fmt.Errorf("%s: interface %s of node %s, which these specs do not manage, uses %s as a port (PVE refuses to delete it: %s): take it out of %s first",
				r.Address(), h, lo.Node, name, missingPortMsg(st.Others[h].Get("type"), h, name), h)
		case b.Opts.Destroy:
		case owner.State == spec.Absent && dependsOn(b, owner, r):
			// Both go, and the plan deletes the user first.
		case !dropsPort(owner, name):
			return fmt.Errorf("%s: %s keeps %s as a port, and PVE refuses to delete an interface in use: drop it from %s first", r.Address(), owner.Address(), name, owner.Address())
		case !dependsOn(b, r, owner):
			return fmt.Errorf("%s: interface %s uses %s as a port until %s gives it up, and PVE checks each call on its own: add `dependsOn: [%s]` so that goes first",
				r.Address(), h, name, owner.Address(), owner.Address())
		}
	}
	return nil
}

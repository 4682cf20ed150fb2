package spec

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The SDN kinds (issue 20): zones, vnets, subnets and controllers are
// entries of pve-network's section-config files (src/PVE/API2/Network/
// SDN/{Zones,Vnets,Subnets,Controllers}.pm); every write is pending until
// an SdnApply commits it cluster-wide (`PUT /cluster/sdn`). Their keys
// are PVE's parameters; what the rows here add is what PVE's plugins
// refuse, found before any call.

// sdnLockRefused: pvectl takes SDN's lock itself (the token is a secret
// of the run).
var sdnLockRefused = map[string]string{
	"lock-token": "pvectl takes SDN's lock itself for the apply and sends its token: leave lock-token out",
}

// sdnZoneOptions are each zone type's options (pve-network
// src/PVE/Network/SDN/Zones/*Plugin.pm options(); true: required).
var sdnZoneOptions = func() map[string]map[string]bool {
	common := []string{"nodes", "mtu", "dns", "reversedns", "dnszone", "ipam"}
	opts := func(required []string, optional ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range append(common, optional...) {
			m[k] = false
		}
		for _, k := range required {
			m[k] = true
		}
		return m
	}
	return map[string]map[string]bool{
		"simple": opts(nil, "dhcp"),
		"vlan":   opts([]string{"bridge"}, "bridge-disable-mac-learning"),
		"qinq":   opts([]string{"tag", "bridge"}, "bridge-disable-mac-learning", "vlan-protocol"),
		"vxlan":  opts(nil, "peers", "vxlan-port", "fabric"),
		"evpn": opts([]string{"vrf-vxlan", "controller"}, "exitnodes", "exitnodes-local-routing", "exitnodes-primary",
			"advertise-subnets", "disable-arp-nd-suppression", "bridge-disable-mac-learning", "rt-import", "vxlan-port", "mac"),
	}
}()

// sdnTyped is an SDN section whose options depend on its type (a zone's
// or a controller's): SectionConfig check_config refuses a key the
// type's plugin does not list ("unexpected property") and a required one
// left out ("missing value for required option").
type sdnTyped struct {
	idKey   string                     // the section's id key
	article string                     // "a" or "the", before the type
	noun    string                     // "zone", "controller"
	managed string                     // the types pvectl manages, for the message
	options map[string]map[string]bool // by type; true: required
}

// check reports r's type, keys and required keys against the type's
// plugin; ok is false when the type is not one pvectl manages.
func (t sdnTyped) check(r *Resource, report func(key, format string, args ...any)) (typ string, ok bool) {
	typ = r.Params.Get("type")
	opts, ok := t.options[typ]
	if !ok {
		if typ != "" {
			report("type", "pvectl manages SDN %ss of type %s, not %q", t.noun, t.managed, typ)
		}
		return typ, false
	}
	for _, k := range r.Params.Keys() {
		if _, ok := opts[k]; !ok && k != t.idKey && k != "type" {
			report(k, "%s %s %s has no option %s (PVE refuses it: unexpected property '%s'); its options: %s", t.article, typ, t.noun, k, k, strings.Join(sortedKeys(opts), ", "))
		}
	}
	for _, k := range sortedKeys(opts) {
		if opts[k] && r.State == Present && r.Params.Get(k) == "" {
			report(k, "%s %s %s needs %s (PVE refuses it without: missing value for required option '%s')", t.article, typ, t.noun, k, k)
		}
	}
	return typ, true
}

// exactlyOnePeersOrFabric reports a section that sets both or neither
// of peers and fabric (VxlanPlugin on_update_hook, EvpnPlugin's
// controller check).
func exactlyOnePeersOrFabric(r *Resource, what string, report func(key, format string, args ...any)) {
	if r.State == Present && (r.Params.Get("peers") != "") == (r.Params.Get("fabric") != "") {
		report("peers", "%s needs exactly one of peers and fabric (PVE refuses it otherwise)", what)
	}
}

// sdnZones: the zone types the issue covers, each key one its plugin
// takes (pve-network src/PVE/Network/SDN/Zones/*Plugin.pm options()).
var sdnZones = sdnTyped{idKey: "zone", article: "a", noun: "zone", managed: "simple, vlan, qinq, vxlan and evpn", options: sdnZoneOptions}

// sdnControllers: the controller types and their keys
// (Controllers/*Plugin.pm options(); required ones set).
var sdnControllers = sdnTyped{idKey: "controller", article: "the", noun: "controller", managed: "evpn, bgp and isis", options: map[string]map[string]bool{
	"evpn": {"asn": true, "peers": false, "fabric": false},
	"bgp":  {"node": true, "asn": true, "peers": true, "bgp-multipath-as-path-relax": false, "ebgp": false, "ebgp-multihop": false, "loopback": false},
	"isis": {"isis-domain": true, "isis-net": true, "isis-ifaces": true, "node": true, "loopback": false},
}}

// checkSdnZone: a zone of a type the issue covers with its plugin's keys,
// and a vxlan zone with exactly one of peers and fabric (VxlanPlugin
// on_update_hook).
func checkSdnZone(r *Resource, report func(key, format string, args ...any)) {
	if typ, ok := sdnZones.check(r, report); ok && typ == "vxlan" {
		exactlyOnePeersOrFabric(r, "a vxlan zone", report)
	}
}

// checkSdnController: a controller of a type pvectl manages with its
// plugin's keys, and an evpn controller with exactly one of peers and
// fabric.
func checkSdnController(r *Resource, report func(key, format string, args ...any)) {
	if typ, ok := sdnControllers.check(r, report); ok && typ == "evpn" {
		exactlyOnePeersOrFabric(r, "an evpn controller", report)
	}
}

// checkVnetInZone is the zone plugin's vnet_update_hook, for a vnet whose
// zone is in the specs: a simple zone takes no tag, a vlan or qinq zone a
// tag up to 4096 (a vlan zone needs one), a vxlan or evpn zone a VNI up
// to 16777216, and an evpn vnet cannot be VLAN-aware
// (Zones/{Simple,Vlan,Qinq,Vxlan,Evpn}Plugin.pm).
func checkVnetInZone(zoneKind string) func(r *Resource, find func(kind, value string) []*Resource) []problem {
	return func(r *Resource, find func(kind, value string) []*Resource) []problem {
		return vnetInZone(r, find(zoneKind, r.Params.Get("zone")))
	}
}

func vnetInZone(r *Resource, zones []*Resource) []problem {
	if len(zones) != 1 || r.State != Present {
		return nil
	}
	z := zones[0]
	typ := z.Params.Get("type")
	tagStr, hasTag := r.Params.Lookup("tag")
	tag, _ := strconv.Atoi(tagStr)
	where := fmt.Sprintf("zone %s (%s, a %s zone)", r.Params.Get("zone"), z.Address(), typ)
	switch {
	case typ == "simple" && hasTag:
		return []problem{{"tag", "a vnet of " + where + " takes no tag (PVE: vlan tag is not allowed on simple zone): leave tag out"}}
	case typ == "vlan" && !hasTag:
		return []problem{{"tag", "a vnet of " + where + " needs its VLAN tag (1-4096)"}}
	case (typ == "vlan" || typ == "qinq") && tag > 4096:
		return []problem{{"tag", fmt.Sprintf("tag %d is out of range for a vnet of %s: VLAN tags go up to 4096 (PVE: vlan tag max value is 4096)", tag, where)}}
	case (typ == "vxlan" || typ == "evpn") && !hasTag:
		return []problem{{"tag", "a vnet of " + where + " needs its VXLAN id (tag, 1-16777216)"}}
	case typ == "evpn" && r.Params.Get("vlanaware") == "1":
		return []problem{{"vlanaware", "a vnet of " + where + " cannot be VLAN-aware (PVE: vlan-aware option can't be enabled with evpn)"}}
	}
	return nil
}

// subnetIdentities: a vnet has a CIDR once (PVE's subnet id is the zone
// and the CIDR).
func subnetIdentities(r *Resource) []identity {
	v, s := r.Params.Get("vnet"), r.Params.Get("subnet")
	if v == "" || s == "" {
		return nil
	}
	return []identity{{ns: r.Kind, key: fmt.Sprintf("subnet %s on vnet %s", s, v), what: "subnet"}}
}

// checkSdnSubnet is SubnetPlugin's on_update_hook and validate_dhcp_ranges
// offline: a CIDR PVE takes, the gateway inside it (an IPv4 /32 may have
// one outside), each DHCP range inside it, start before end, no two
// ranges overlapping.
func checkSdnSubnet(r *Resource, report func(key, format string, args ...any)) {
	s := r.Params.Get("subnet")
	if s == "" {
		return
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Bits() < 8 {
		report("subnet", "%q is not a CIDR PVE takes (an address and a mask of 8 or more: 10.0.0.0/24)", s)
		return
	}
	net := p.Masked()
	if gw := r.Params.Get("gateway"); gw != "" {
		a, err := netip.ParseAddr(gw)
		if err != nil || (!net.Contains(a) && !(a.Is4() && p.Bits() == 32)) {
			report("gateway", "gateway %s is not in subnet %s (PVE refuses it)", gw, s)
		}
	}
	type span struct{ a, b netip.Addr }
	var seen []span
	for _, line := range strings.Split(r.Params.Get("dhcp-range"), "\n") {
		if line == "" {
			continue
		}
		var start, end netip.Addr
		for _, kv := range strings.Split(line, ",") {
			k, v, _ := strings.Cut(kv, "=")
			a, _ := netip.ParseAddr(strings.TrimSpace(v))
			switch k {
			case "start-address":
				start = a
			case "end-address":
				end = a
			}
		}
		switch {
		case !start.IsValid() || !end.IsValid():
			report("dhcp-range", "%q: a DHCP range is start-address=IP,end-address=IP", line)
		case start.Compare(end) > 0:
			report("dhcp-range", "%q: start-address %s is after end-address %s", line, start, end)
		case !net.Contains(start) || !net.Contains(end):
			report("dhcp-range", "%q is not inside subnet %s (PVE refuses it)", line, s)
		default:
			for _, o := range seen {
				if start.Compare(o.b) <= 0 && o.a.Compare(end) <= 0 {
					report("dhcp-range", "%q overlaps another DHCP range of the subnet (PVE: dhcp ranges must not overlap)", line)
				}
			}
			seen = append(seen, span{start, end})
		}
	}
}

// checkSubnetInVnet: PVE refuses a subnet on a VLAN-aware vnet
// (SubnetPlugin on_update_hook), and pvectl refuses two subnets of one
// vnet that overlap (PVE keeps both, and routes neither reliably:
// docs/decisions.md).
func checkSubnetInVnet(vnetKind, subnetKind string) func(r *Resource, find func(kind, value string) []*Resource) []problem {
	return func(r *Resource, find func(kind, value string) []*Resource) []problem {
		if r.State != Present {
			return nil
		}
		return subnetInVnet(r, find(vnetKind, r.Params.Get("vnet")), find(subnetKind, r.Params.Get("vnet")))
	}
}

func subnetInVnet(r *Resource, vnets, siblings []*Resource) []problem {
	var out []problem
	for _, v := range vnets {
		if v.Params.Get("vlanaware") == "1" {
			out = append(out, problem{"vnet", fmt.Sprintf("vnet %s (%s) is VLAN-aware: PVE refuses a subnet on it (you can't add a subnet on a vlanaware vnet)", r.Params.Get("vnet"), v.Address())})
		}
	}
	mine, err := netip.ParsePrefix(r.Params.Get("subnet"))
	if err != nil {
		return out
	}
	for _, o := range siblings {
		if o == r || o.State != Present {
			continue
		}
		other, err := netip.ParsePrefix(o.Params.Get("subnet"))
		if err == nil && other.Masked() != mine.Masked() && mine.Masked().Overlaps(other.Masked()) {
			out = append(out, problem{"subnet", fmt.Sprintf("subnet %s overlaps %s of %s on the same vnet %s: give the vnet subnets that do not overlap", r.Params.Get("subnet"), o.Params.Get("subnet"), o.Address(), r.Params.Get("vnet"))})
		}
	}
	return out
}

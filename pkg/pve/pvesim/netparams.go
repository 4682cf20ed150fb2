package pvesim

import (
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// ifaceFromParams is what pve-manager Network.pm create_network (old nil)
// and update_network do with a call before the file is written: PUT
// deletes the keys in delete, then the keys sent overwrite and the keys not
// sent stay - except method, method6 and families, which come from whether
// the call sent an address (a PUT without cidr keeps the old address under
// "method manual", and drops an IPv6 address: send the full definition).
// cfg is the file as the call read it, for the checks against the other
// interfaces.
func ifaceFromParams(q *request, cfg map[string]*iface, name string, old *iface) (*iface, error) {
	i := &iface{Name: name}
	if old != nil {
		c := *old
		i = &c
		for _, d := range schema.SplitList(q.get("delete")) {
			i.clear(d)
		}
	}
	addr, err := checkIfaceCall(q, cfg, name, old == nil)
	if err != nil {
		return nil, err
	}
	i.Type = q.get("type")
	i.setParams(q)
	i.setAddresses(addr)
	if q.has("bridge_vids") {
		vids := schema.SplitList(q.get("bridge_vids"))
		if len(vids) == 0 {
			return nil, paramErr1("bridge_vids", "VLAN list items are empty")
		}
		if old == nil {
			// create_network stores the list space separated; update_network
			// normalises only its own copy after the merge, so a PUT keeps
			// the separators it was sent (and writes them to the file).
			i.BridgeVids = strings.Join(vids, " ")
		}
	}
	return i, nil
}

// checkIfaceCall is the checks of create_network (create) and
// update_network against the call and the other interfaces in cfg, in
// PVE's order; it answers the call's addresses.
func checkIfaceCall(q *request, cfg map[string]*iface, name string, create bool) (addrs, error) {
	addr, err := addresses(q)
	if err != nil {
		return addr, err
	}
	if !create && addr.err != nil {
		// update_network maps cidr before its other checks.
		return addr, addr.err
	}
	// Network.pm check_duplicate_gateway(6), in this order, before the
	// ports and the address checks.
	for _, g := range []struct{ key, what string }{{"gateway", "Default gateway"}, {"gateway6", "Default ipv6 gateway"}} {
		if q.get(g.key) == "" {
			continue
		}
		if holder := holding(cfg, name, g.key); holder != "" {
			return addr, paramErr1(g.key, "%s already exists on interface '%s'.", g.what, holder)
		}
	}
	if err := checkDuplicatePorts(q, cfg, name); err != nil {
		return addr, err
	}
	if addr.err != nil {
		return addr, addr.err
	}
	if addr.v6 != "" {
		if err := checkIPv6Host(addr.v6); err != nil {
			return addr, err
		}
	}
	if create && strings.HasPrefix(q.get("type"), "OVS") {
		// create_network: a PVE node has no Open vSwitch unless it is
		// installed (update_network does not look).
		return addr, fail(http.StatusInternalServerError, "Open VSwitch is not installed (need package 'openvswitch-switch')")
	}
	return addr, nil
}

// strSettings are an interface's string settings by their API names.
func (i *iface) strSettings() map[string]*string {
	return map[string]*string{"comments": &i.Comments, "comments6": &i.Comments6, "gateway": &i.Gateway,
		"gateway6": &i.Gateway6, "bond_mode": &i.BondMode, "bond-primary": &i.BondPrimary,
		"bond_xmit_hash_policy": &i.BondXmitHashPolicy, "vlan-raw-device": &i.VlanRawDevice,
		"bridge_ports": &i.BridgePorts, "slaves": &i.Slaves, "bridge_vids": &i.BridgeVids}
}

// setParams overwrites the settings the call sent, addresses aside.
func (i *iface) setParams(q *request) {
	for k, f := range i.strSettings() {
		if q.has(k) {
			*f = q.get(k)
		}
	}
	if q.has("autostart") {
		i.Autostart = q.bool("autostart")
	}
	if q.has("bridge_vlan_aware") {
		// Any value defines the key, and the writer enables VLAN awareness
		// for a defined key (pve-common Network/Interfaces.pm
		// __interface_to_string: `if (defined($d->{bridge_vlan_aware}))`):
		// bridge_vlan_aware=0 turns it ON. Only delete turns it off. Other
		// types print it among their other settings, and only when true
		// (`next if !$d->{$k}`), so there 0 is off.
		i.BridgeVlanAware = i.Type == "bridge" || q.bool("bridge_vlan_aware")
	}
	if q.has("mtu") {
		i.MTU = q.int("mtu", 0)
	}
	if q.has("vlan-id") {
		i.VlanID = q.int("vlan-id", 0)
	}
}

// setAddresses sets the address families and methods from the call's
// addresses: static for one it sent, manual else.
func (i *iface) setAddresses(addr addrs) {
	i.Families = nil
	i.Method, i.Method6 = "manual", "manual"
	if addr.v4 != "" {
		i.CIDR, i.Method, i.NoMask = addr.v4, "static", false
		i.Families = append(i.Families, "inet")
	}
	if addr.v6 != "" {
		i.CIDR6, i.Method6 = addr.v6, "static"
		i.Families = append(i.Families, "inet6")
	}
	if len(i.Families) == 0 {
		i.Families = []string{"inet"}
	}
}

// addrs are the addresses of a call, cidr and address/netmask merged as
// Network.pm map_cidr_to_address_netmask does; err is a conflict between
// the two spellings, which create_network finds after its gateway and port
// checks.
type addrs struct {
	v4, v6 string
	err    error
}

func addresses(q *request) (addrs, error) {
	var a addrs
	switch {
	case q.get("cidr") != "":
		if q.get("address") != "" {
			a.err = paramErr1("address", "address conflicts with cidr")
		} else if q.get("netmask") != "" {
			a.err = paramErr1("netmask", "netmask conflicts with cidr")
		}
		a.v4 = q.get("cidr")
	case q.get("address") != "":
		bits := q.get("netmask")
		if mask := net.ParseIP(bits); mask != nil {
			ones, _ := net.IPMask(mask.To4()).Size()
			bits = strconv.Itoa(ones)
		}
		if bits == "" {
			// Interfaces.pm: an address without a mask reads back as a /32.
			bits = "32"
		}
		a.v4 = q.get("address") + "/" + bits
	}
	switch {
	case q.get("cidr6") != "":
		if q.get("address6") != "" && a.err == nil {
			a.err = paramErr1("address6", "address6 conflicts with cidr6")
		} else if q.get("netmask6") != "" && a.err == nil {
			a.err = paramErr1("netmask6", "netmask6 conflicts with cidr6")
		}
		a.v6 = q.get("cidr6")
	case q.get("address6") != "":
		bits := q.get("netmask6")
		if bits == "" {
			bits = "128"
		}
		a.v6 = q.get("address6") + "/" + bits
	}
	if a.v4 != "" {
		if _, _, err := net.ParseCIDR(a.v4); err != nil {
			return a, paramErr1("cidr", "invalid format - value does not look like a valid IPv4 network configuration")
		}
	}
	return a, nil
}

// holding names the interface other than self that has key (gateway or
// gateway6) set, as Network.pm check_duplicate looks for one.
func holding(cfg map[string]*iface, self, key string) string {
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		if name == self {
			continue
		}
		i := cfg[name]
		if (key == "gateway" && i.Gateway != "") || (key == "gateway6" && i.Gateway6 != "") {
			return name
		}
	}
	return ""
}

// checkDuplicatePorts is Network.pm check_duplicate_ports: a port, slave
// or VLAN port named by the call that another interface already uses is a
// 400 on the first list parameter the call sent.
func checkDuplicatePorts(q *request, cfg map[string]*iface, self string) error {
	param := ""
	var ports []string
	for _, k := range []string{"bridge_ports", "ovs_ports", "slaves", "ovs_bonds"} {
		if v := q.get(k); v != "" {
			ports = append(ports, schema.SplitList(v)...)
			if param == "" {
				param = k
			}
		}
	}
	if len(ports) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		if name == self {
			continue
		}
		for _, p := range portsOf(cfg[name]) {
			if slices.Contains(ports, p) {
				return paramErr1(param, "%s is already used on interface '%s'.", p, name)
			}
		}
	}
	return nil
}

// portsOf lists the bridge ports and bond slaves an interface holds.
func portsOf(i *iface) []string {
	return schema.SplitList(i.BridgePorts + " " + i.Slaves)
}

// clear removes one setting named as in the API (PUT's delete list): the
// key leaves the interface's hash; cidr also takes address and netmask.
// The hash update_network changes is the reader's, which holds cidr beside
// address and netmask, and the writer writes address, or else cidr
// (pve-common Network/Interfaces.pm __write_etc_network_interfaces:
// `$d->{address} //= $cidr`): deleting address alone leaves cidr to be
// written, so the address stays; deleting netmask leaves the bare address
// written, read back as a /32.
func (i *iface) clear(key string) {
	if f, ok := i.strSettings()[key]; ok {
		*f = ""
		return
	}
	switch key {
	case "address":
	case "netmask":
		if addr, _, ok := strings.Cut(i.CIDR, "/"); ok {
			i.CIDR, i.NoMask = addr+"/32", true
		}
	case "cidr":
		i.CIDR, i.NoMask = "", false
	case "cidr6", "address6":
		i.CIDR6 = ""
	case "mtu":
		i.MTU = 0
	case "autostart":
		i.Autostart = false
	case "bridge_vlan_aware":
		i.BridgeVlanAware = false
	case "vlan-id":
		i.VlanID = 0
	}
}

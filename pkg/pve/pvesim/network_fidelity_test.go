package pvesim_test

import (
	"strings"
	"testing"
)

// pve-manager PVE/API2/Network.pm check_ipv6_settings: create_network and
// update_network take only a global, unique-local or link-local unicast
// address as a host's IPv6 address (Net::IP's types; 2001:db8::/32 is
// DOCUMENTATION), and refuse the others with a 400 on "address".
func TestIfaceIPv6AddressType(t *testing.T) {
	e := newNetEnv(t)
	tests := []struct {
		name, method, path string
		kv                 []string
		msg                string
	}{
		{"documentation prefix", "POST", "/nodes/pve/network", []string{"iface", "vmbr1", "type", "bridge", "cidr6", "2001:db8::2/64"},
			"2001:db8::2 with type 'DOCUMENTATION', cannot be used as host IPv6 address."},
		{"loopback", "POST", "/nodes/pve/network", []string{"iface", "vmbr1", "type", "bridge", "cidr6", "::1/128"},
			"::1 with type 'LOOPBACK', cannot be used as host IPv6 address."},
		{"multicast by address6", "PUT", "/nodes/pve/network/eno2", []string{"type", "eth", "address6", "ff02::1", "netmask6", "64"},
			"ff02::1 with type 'MULTICAST', cannot be used as host IPv6 address."},
		{"the netmask itself", "PUT", "/nodes/pve/network/eno2", []string{"type", "eth", "cidr6", "ffff:ffff:ffff:ffff::/64"},
			"ffff:ffff:ffff:ffff:: with type 'ANYCAST', cannot be used as host IPv6 address."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, tc.kv...)
			if r.Status != 400 || r.Errors["address"] != tc.msg {
				t.Errorf("got %d %q %v, want 400 errors.address %q", r.Status, r.Message, r.Errors, tc.msg)
			}
		})
	}
	if ch := e.changes(); ch != "" {
		t.Errorf("got staged changes %q after refused calls, want none", ch)
	}
	for _, cidr6 := range []string{"fd00::2/64", "fe80::2/64", "2a01:4f8::2/64"} {
		e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "cidr6", cidr6)
	}
}

// `active` is the kernel's IFF_UP (pve-common ProcFSTools.pm
// get_active_network_interfaces): an unused NIC is down, a port of an
// auto bridge is up once applied, a NIC the host lacks never is.
func TestIfaceActiveIsUp(t *testing.T) {
	e := newNetEnv(t)
	if m := e.iface("eno2"); m["active"] != nil {
		t.Errorf("unused eno2: got active %v, want none", m["active"])
	}
	if m := e.iface("eno1"); m["active"] != 1.0 {
		t.Errorf("eno1, port of vmbr0: got active %v, want 1", m["active"])
	}
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "bridge_ports", "eno2", "autostart", "1")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "eno9", "type", "eth", "autostart", "1")
	e.run("PUT", "/nodes/pve/network")
	if m := e.iface("eno2"); m["active"] != 1.0 {
		t.Errorf("eno2, port of vmbr1: got active %v, want 1", m["active"])
	}
	if m := e.iface("eno9"); m["active"] != nil {
		t.Errorf("missing eno9: got active %v, want none", m["active"])
	}
}

// update_network deletes only the key named; the reader's hash keeps cidr
// beside address and netmask, and the writer writes cidr when address is
// gone (pve-common Network/Interfaces.pm __write_etc_network_interfaces).
func TestIfaceDeleteAddressKeepsCIDR(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr0", "type", "bridge", "delete", "address")
	if m := e.iface("vmbr0"); m["cidr"] != "192.168.100.2/24" || m["method"] != "manual" {
		t.Errorf("after delete=address: got cidr %v method %v, want 192.168.100.2/24 manual", m["cidr"], m["method"])
	}
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr0", "type", "bridge", "delete", "netmask")
	if m := e.iface("vmbr0"); m["cidr"] != "192.168.100.2/32" || m["netmask"] != nil {
		t.Errorf("after delete=netmask: got cidr %v netmask %v, want 192.168.100.2/32 and none", m["cidr"], m["netmask"])
	}
	if ch := e.changes(); !strings.Contains(ch, "+\taddress 192.168.100.2\n") {
		t.Errorf("after delete=netmask: got changes %q, want the bare address", ch)
	}
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr0", "type", "bridge", "delete", "cidr")
	if m := e.iface("vmbr0"); m["cidr"] != nil {
		t.Errorf("after delete=cidr: got cidr %v, want none", m["cidr"])
	}
}

// What the reader makes of settings on other types (pve-common
// Network/Interfaces.pm): bridge_vlan_aware=0 on a NIC is not written (the
// writer prints a non-bridge's other settings only when true), and an
// alias exists as its parent does.
func TestIfaceOtherTypesReadBack(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "bridge_vlan_aware", "0")
	if m := e.iface("eno2"); m["bridge_vlan_aware"] != nil {
		t.Errorf("eno2 after bridge_vlan_aware=0: got %v, want none", m["bridge_vlan_aware"])
	}
	e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "bridge_vlan_aware", "1")
	if m := e.iface("eno2"); m["bridge_vlan_aware"] != 1.0 {
		t.Errorf("eno2 after bridge_vlan_aware=1: got %v, want 1", m["bridge_vlan_aware"])
	}
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "eno3:1", "type", "alias", "cidr", "10.9.0.2/24")
	if m := e.iface("eno3:1"); m["type"] != "alias" || m["exists"] != 1.0 {
		t.Errorf("eno3:1: got type %v exists %v, want alias 1", m["type"], m["exists"])
	}
}

// A NIC given bridge_ports has the writer print "bridge_ports" among its
// other settings, and the reader types anything with bridge ports a
// bridge (pve-common Network/Interfaces.pm __read_etc_network_interfaces).
func TestIfaceBridgePortsMakeABridge(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "bridge_ports", "eno4 eno3")
	m := e.iface("eno2")
	if m["type"] != "bridge" || m["bridge_ports"] != "eno3 eno4" || m["bridge_stp"] != "off" {
		t.Errorf("eno2 after bridge_ports: got type %v ports %v stp %v, want bridge, eno3 eno4, off", m["type"], m["bridge_ports"], m["bridge_stp"])
	}
}

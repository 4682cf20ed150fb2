package pvesim_test

import "testing"

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

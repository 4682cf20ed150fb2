package pvesim_test

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// The formats PVE verifies before a firewall handler runs (pve-firewall
// src/PVE/Firewall.pm: IPorCIDRorAlias and IPorCIDR,
// pve_verify_ip_or_cidr; pve-fw-conntrack-helper,
// pve_fw_verify_conntrack_helper): a 400 naming the parameter, the
// entry's {cidr} of read_ip, update_ip and remove_ip included
// (API2/Firewall/IPSet.pm $api_properties); the message after
// "invalid format - " (pve-common JSONSchema.pm check_prop).
func TestFirewallFormatRefusals(t *testing.T) {
	e := startEnv(t, simtest.Options{})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "admins")
	e.ok(nil, "POST", "/cluster/firewall/ipset/admins", "cidr", "10.0.0.1")
	e.ok(nil, "POST", "/cluster/firewall/aliases", "name", "gw", "cidr", "10.0.0.1")
	const entry = "/cluster/firewall/ipset/admins/bad!"
	const notIP = "invalid format - value does not look like a valid IP address or CIDR network"
	cases := []fwRefusal{
		{"read_ip cidr", "GET", entry, nil, 400, "cidr", notIP},
		{"update_ip cidr", "PUT", entry, []string{"comment", "x"}, 400, "cidr", notIP},
		{"remove_ip cidr", "DELETE", entry, nil, 400, "cidr", notIP},
		{"create_ip leading zero", "POST", "/cluster/firewall/ipset/admins", []string{"cidr", "010.0.0.2"}, 400, "cidr", notIP},
		{"alias zone", "POST", "/cluster/firewall/aliases", []string{"name", "ll", "cidr", "fe80::1%eth0"}, 400, "cidr", notIP},
		{"alias leading zero", "POST", "/cluster/firewall/aliases", []string{"name", "lz", "cidr", "10.0.0.010"}, 400, "cidr", notIP},
		{"alias update zone", "PUT", "/cluster/firewall/aliases/gw", []string{"cidr", "fe80::1%eth0"}, 400, "cidr", notIP},
		{"helper unknown", "PUT", "/nodes/pve/firewall/options", []string{"nf_conntrack_helpers", "ftp,bogus"}, 400, "nf_conntrack_helpers", "invalid format - unknown helper bogus"},
		{"helper case", "PUT", "/nodes/pve/firewall/options", []string{"nf_conntrack_helpers", "FTP"}, 400, "nf_conntrack_helpers", "invalid format - unknown helper FTP"},
		{"helper empty element", "PUT", "/nodes/pve/firewall/options", []string{"nf_conntrack_helpers", "ftp,,sip"}, 400, "nf_conntrack_helpers", "invalid format - unknown helper"},
		{"helper trailing comma", "PUT", "/nodes/pve/firewall/options", []string{"nf_conntrack_helpers", "ftp,"}, 400, "nf_conntrack_helpers", "invalid format - extraneous commas in list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, e) })
	}
	if rows := e.rows("/cluster/firewall/ipset/admins"); len(rows) != 1 {
		t.Errorf("entries after refusals: %v", rows)
	}
	if a := e.object("/cluster/firewall/aliases/gw"); a["cidr"] != "10.0.0.1" {
		t.Errorf("alias after refusals: %v", a)
	}
	e.ok(nil, "PUT", "/nodes/pve/firewall/options", "nf_conntrack_helpers", "ftp,sip")
	if o := e.object("/nodes/pve/firewall/options"); o["nf_conntrack_helpers"] != "ftp,sip" {
		t.Errorf("helpers: got %v", o)
	}
}

package pvesim_test

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// A comment "0" is false to Perl: $format_rules, $format_aliases,
// $format_ipsets and save_clusterfw_conf write a comment only when it is
// true, so "0" does not read back (pve-firewall src/PVE/Firewall.pm).
func TestFirewallZeroComment(t *testing.T) {
	e := startEnv(t, simtest.Options{})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "admins", "comment", "0")
	e.ok(nil, "POST", "/cluster/firewall/ipset/admins", "cidr", "10.0.0.1", "comment", "0")
	e.ok(nil, "POST", "/cluster/firewall/aliases", "name", "gw", "cidr", "10.0.0.1", "comment", "0")
	e.ok(nil, "POST", "/cluster/firewall/groups", "group", "web", "comment", "0")
	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "comment", "0")
	for _, p := range []string{"/cluster/firewall/ipset", "/cluster/firewall/ipset/admins",
		"/cluster/firewall/aliases", "/cluster/firewall/groups", "/cluster/firewall/rules"} {
		for _, row := range e.rows(p) {
			if _, ok := row["comment"]; ok {
				t.Errorf("%s: a comment \"0\" reads back: %v", p, row)
			}
		}
	}
}

package pvesim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// TestVnetFirewall: a vnet's firewall is served only once the vnet is
// committed (check_vnet_access reads the running config: "invalid vnet
// specified", 500); then its options and forward rules are written and
// read back, and an "in" rule is refused (env vnet).
func TestVnetFirewall(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "lan", "type", "vlan", "bridge", "vmbr0")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "web", "zone", "lan", "tag", "10")
	r := e.call("GET", "/cluster/sdn/vnets/web/firewall/rules")
	if r.Status != http.StatusInternalServerError || !strings.Contains(r.Message, "invalid vnet specified") {
		t.Fatalf("rules of a pending vnet: %d %s", r.Status, r.Message)
	}
	e.sdnApply()
	e.ok(nil, "PUT", "/cluster/sdn/vnets/web/firewall/options", "enable", "1", "policy_forward", "DROP")
	e.ok(nil, "POST", "/cluster/sdn/vnets/web/firewall/rules", "type", "forward", "action", "ACCEPT", "proto", "tcp", "dport", "443", "enable", "1")
	rules := e.rows("/cluster/sdn/vnets/web/firewall/rules")
	if len(rules) != 1 || rules[0]["dport"] != "443" || rules[0]["type"] != "forward" {
		t.Fatalf("vnet rules: %v", rules)
	}
	opts := e.object("/cluster/sdn/vnets/web/firewall/options")
	if opts["policy_forward"] != "DROP" {
		t.Fatalf("vnet options: %v", opts)
	}
	if r := e.call("POST", "/cluster/sdn/vnets/web/firewall/rules", "type", "in", "action", "ACCEPT"); r.Status != http.StatusBadRequest {
		t.Fatalf("an in rule on a vnet: %d %s %v", r.Status, r.Message, r.Errors)
	}
}

package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// TestSDNRefusals: the plugins' and handlers' checks, each answered
// with PVE's status and message (inside lock_sdn_config a parameter
// exception is died again as text: a 500 whose message holds
// "400 Parameter verification failed." and the parameter's line).
func TestSDNRefusals(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "lan", "type", "vlan", "bridge", "vmbr0")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "q1", "type", "qinq", "bridge", "vmbr0", "tag", "100")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "vx", "type", "vxlan", "peers", "127.0.0.1,127.0.0.2")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "web", "zone", "lan", "tag", "10")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "tl", "zone", "q1")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "ov1", "zone", "vx", "tag", "5000")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "aware", "zone", "lan", "tag", "30", "vlanaware", "1")
	e.ok(nil, "POST", "/cluster/sdn/vnets/web/subnets", "subnet", "10.0.0.0/24", "type", "subnet", "gateway", "10.0.0.1")
	const pe = "400 Parameter verification failed.\n"
	tests := []refusal{
		{"zone missing bridge", "POST", "/cluster/sdn/zones", []string{"zone", "z2", "type", "vlan"}, 500,
			"missing value for required option 'bridge'"},
		{"zone foreign option", "POST", "/cluster/sdn/zones", []string{"zone", "z2", "type", "simple", "bridge", "vmbr0"}, 500,
			"unexpected property 'bridge'"},
		{"zone twice", "POST", "/cluster/sdn/zones", []string{"zone", "lan", "type", "simple"}, 500,
			"create sdn zone object failed: sdn zone object ID 'lan' already defined"},
		{"zone unknown ipam", "POST", "/cluster/sdn/zones", []string{"zone", "z2", "type", "simple", "ipam", "netbox"}, 500,
			"create sdn zone object failed: " + pe + "ipam: netbox not existing"},
		{"vxlan peers and fabric", "POST", "/cluster/sdn/zones", []string{"zone", "z2", "type", "vxlan"}, 500,
			"create sdn zone object failed: " + pe + "fabric: must have exactly one of peers / fabric defined\npeers: must have exactly one of peers / fabric defined"},
		{"evpn without controller", "POST", "/cluster/sdn/zones", []string{"zone", "z2", "type", "evpn", "controller", "c1", "vrf-vxlan", "100"}, 500,
			"create sdn zone object failed: controller c1 don't exist"},
		{"zone in use", "DELETE", "/cluster/sdn/zones/lan", nil, 500,
			"delete sdn zone object failed: zone lan is used by vnet aware"},
		{"zone missing", "PUT", "/cluster/sdn/zones/nope", []string{"mtu", "1400"}, 500,
			"update sdn zone object failed: sdn 'nope' does not exist"},
		{"zone digest", "PUT", "/cluster/sdn/zones/lan", []string{"mtu", "1400", "digest", strings.Repeat("0", 40)}, 500,
			"update sdn zone object failed: detected modified configuration - file changed by other user? Try again."},
		{"zone delete required", "PUT", "/cluster/sdn/zones/lan", []string{"delete", "bridge"}, 500,
			"update sdn zone object failed: unable to delete required option 'bridge'"},
		{"set empty and delete", "PUT", "/cluster/sdn/vnets/web", []string{"alias", "", "delete", "alias"}, 500,
			"update sdn vnet object failed: cannot set and delete property 'alias' at the same time!"},
		{"zone value with a line feed", "POST", "/cluster/sdn/zones", []string{"zone", "z2", "type", "simple", "dns", "a\nb"}, 500,
			"property contains a line feed"},
		{"vnet alias with a line feed", "POST", "/cluster/sdn/vnets", []string{"vnet", "lf", "zone", "flat", "alias", "a\nb"}, 500,
			"create sdn vnet object failed: property contains a line feed"},
		{"vlan vnet without tag", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "lan"}, 500,
			"create sdn vnet object failed: " + pe + "tag: missing vlan tag"},
		{"vlan tag too high", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "lan", "tag", "4097"}, 500,
			"create sdn vnet object failed: " + pe + "tag: vlan tag max value is 4096"},
		{"vlan tag twice", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "lan", "tag", "10"}, 500,
			"create sdn vnet object failed: " + pe + "tag: tag 10 already exist in vnet web"},
		{"simple zone tag", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "flat", "tag", "10"}, 500,
			"create sdn vnet object failed: " + pe + "tag: vlan tag is not allowed on simple zone"},
		{"qinq second tag-less", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "q1"}, 500,
			"create sdn vnet object failed: " + pe + "tag: tag-less vnet already exists in zone q1 vnet tl"},
		{"vxlan without tag", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "vx"}, 500,
			"create sdn vnet object failed: " + pe + "tag: missing vxlan tag"},
		{"vxlan tag twice", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "vx", "tag", "5000"}, 500,
			"create sdn vnet object failed: " + pe + "tag: vxlan tag 5000 already exist in vnet ov1 in zone vx "},
		{"vnet without zone", "POST", "/cluster/sdn/vnets", []string{"vnet", "v2", "zone", "nozone", "tag", "3"}, 500,
			"create sdn vnet object failed: cannot lookup undefined type!"},
		{"vnet with subnets", "DELETE", "/cluster/sdn/vnets/web", nil, 500,
			"delete sdn vnet object failed: " + pe + "vnet: Can't delete vnet if subnets exists"},
		{"vnet zone change with subnets", "PUT", "/cluster/sdn/vnets/web", []string{"zone", "flat", "delete", "tag"}, 500,
			"update sdn vnet object failed: " + pe + "zone: can't change zone if subnets exist"},
		{"vlanaware with subnets", "PUT", "/cluster/sdn/vnets/web", []string{"vlanaware", "1"}, 500,
			"update sdn vnet object failed: " + pe + "vlanaware: vlanaware vnet is not compatible with subnets"},
		{"vnet missing", "GET", "/cluster/sdn/vnets/nope", nil, 500, "sdn vnet 'nope' does not exist"},
		{"subnet twice", "POST", "/cluster/sdn/vnets/web/subnets", []string{"subnet", "10.0.0.0/24", "type", "subnet"}, 500,
			"create sdn subnet object failed: sdn subnet object ID 'lan-10.0.0.0-24' already defined"},
		{"gateway outside", "POST", "/cluster/sdn/vnets/web/subnets", []string{"subnet", "10.1.0.0/24", "type", "subnet", "gateway", "10.2.0.1"}, 500,
			"create sdn subnet object failed: " + pe + "gateway: 10.2.0.1 is not in subnet 10.1.0.0/24"},
		{"dhcp range outside", "POST", "/cluster/sdn/vnets/web/subnets", []string{"subnet", "10.1.0.0/24", "type", "subnet",
			"dhcp-range", "start-address=10.1.0.10,end-address=10.1.1.10"}, 500,
			"create sdn subnet object failed: " + pe + "dhcp-range: end-address 10.1.1.10 is not in subnet 10.1.0.0/24"},
		{"dhcp ranges overlap", "POST", "/cluster/sdn/vnets/web/subnets", []string{"subnet", "10.1.0.0/24", "type", "subnet",
			"dhcp-range", "start-address=10.1.0.10,end-address=10.1.0.20", "dhcp-range", "start-address=10.1.0.15,end-address=10.1.0.30"}, 500,
			"create sdn subnet object failed: " + pe + "dhcp-range: dhcp ranges must not overlap"},
		{"dhcp range backwards", "POST", "/cluster/sdn/vnets/web/subnets", []string{"subnet", "10.1.0.0/24", "type", "subnet",
			"dhcp-range", "start-address=10.1.0.20,end-address=10.1.0.10"}, 500,
			"create sdn subnet object failed: " + pe + "dhcp-range: start-address 10.1.0.20 must be smaller than end-address 10.1.0.10"},
		{"subnet on vlanaware vnet", "POST", "/cluster/sdn/vnets/aware/subnets", []string{"subnet", "10.3.0.0/24", "type", "subnet"}, 500,
			"create sdn subnet object failed: " + pe + "vnet: you can't add a subnet on a vlanaware vnet"},
		{"subnet not a cidr", "POST", "/cluster/sdn/vnets/web/subnets", []string{"subnet", "10.1.0.0/4", "type", "subnet"}, 400,
			"Parameter verification failed."},
		{"subnet wrong vnet", "GET", "/cluster/sdn/vnets/aware/subnets/lan-10.0.0.0-24", nil, 400,
			"Parameter verification failed."},
		{"subnet of a missing vnet", "POST", "/cluster/sdn/vnets/nope/subnets", []string{"subnet", "10.1.0.0/24", "type", "subnet"}, 500,
			"sdn vnet 'nope' does not exist"},
		{"evpn controller without peers", "POST", "/cluster/sdn/controllers", []string{"controller", "c1", "type", "evpn", "asn", "65000"}, 500,
			"create sdn controller object failed: must have exactly one of peers / fabric defined"},
		{"bgp controller missing node", "POST", "/cluster/sdn/controllers", []string{"controller", "c1", "type", "bgp", "asn", "65000", "peers", "127.0.0.1"}, 500,
			"missing value for required option 'node'"},
	}
	e.refuses(t, tests)
	// Overlapping (not equal) subnets in one zone: PVE compares neither.
	e.ok(nil, "POST", "/cluster/sdn/vnets/web/subnets", "subnet", "10.0.0.0/16", "type", "subnet")
	subnets := e.rows("/cluster/sdn/vnets/web/subnets")
	if len(subnets) != 2 {
		t.Errorf("subnets: got %v", subnets)
	}
}

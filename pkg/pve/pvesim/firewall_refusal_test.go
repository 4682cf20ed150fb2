package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// What PVE refuses of firewall writes, with its status and message
// (pve-firewall src/PVE/Firewall.pm verify_rule, the pve-fw-* formats,
// parse_address_list, parse_port_name_number_or_range; API2/Firewall/
// Rules.pm, Groups.pm, IPSet.pm, Aliases.pm, Cluster.pm). Param errors
// are 400 "Parameter verification failed." naming the parameter (a
// pve-fw-* format's message after "invalid format - ", JSONSchema.pm
// check_prop; verify_rule's bare); dies are 500 with the message.
func TestFirewallRefusals(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "admins")
	e.ok(nil, "POST", "/cluster/firewall/ipset/admins", "cidr", "10.0.0.1")
	e.ok(nil, "POST", "/cluster/firewall/aliases", "name", "gw6", "cidr", "2001:db8::1")
	e.ok(nil, "POST", "/cluster/firewall/groups", "group", "web")
	e.ok(nil, "POST", "/cluster/firewall/groups/web", "type", "in", "action", "ACCEPT", "macro", "SSH")
	e.ok(nil, "POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "macro", "SSH")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "net0", "virtio,bridge=vmbr0")

	const rules = "/cluster/firewall/rules"
	cases := []fwRefusal{
		{"unknown macro", "POST", rules, []string{"type", "in", "action", "ACCEPT", "macro", "Nope"}, 400, "macro", "unknown macro 'Nope'"},
		{"port out of range", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "70000"}, 400, "dport", "invalid format - invalid port '70000'"},
		{"backwards range", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "90:80"}, 400, "dport", "invalid format - backwards range '90:80' not allowed, did you mean '80:90'?"},
		{"unknown service", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "sport", "nosuchservice"}, 400, "sport", "invalid format - invalid port 'nosuchservice'"},
		{"too many ports", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"}, 400, "dport", "invalid format - too many entries in port list (> 15 numbers)"},
		{"dport without proto", "POST", rules, []string{"type", "in", "action", "ACCEPT", "dport", "22"}, 400, "proto", "missing property - 'dport' requires this property"},
		{"protocol without ports", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "gre", "dport", "22"}, 400, "dport", "protocol 'gre' does not support ports"},
		{"unknown protocol", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcpx"}, 400, "proto", "invalid format - unknown protocol 'tcpx'"},
		{"icmp-type with tcp", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "icmp-type", "echo-request"}, 400, "proto", "missing property - 'icmp-type' requires this property"},
		{"bad icmp-type", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "icmp", "icmp-type", "bogus"}, 400, "icmp-type", "invalid format - invalid icmp-type value 'bogus'"},
		{"unknown ipset", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "+nope"}, 400, "source", "no such ipset 'nope'"},
		{"ipset name case", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "+Admins"}, 400, "source", "no such ipset 'Admins'"},
		{"unknown alias", "POST", rules, []string{"type", "in", "action", "ACCEPT", "dest", "nohost"}, 400, "dest", "no such alias 'nohost'"},
		{"bad address", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "10.0.0.5/24"}, 400, "source", "invalid format - invalid IP address: Invalid prefix 00001010000000000000000000000101/24"},
		{"mixed families", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "10.0.0.1", "dest", "2001:db8::2"}, 400, "dest", "detected mixed ipv4/ipv6 addresses in rule"},
		{"mixed with an alias", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "10.0.0.1", "dest", "gw6"}, 500, "", "detected mixed ipv4/ipv6 addresses in rule"},
		{"macro conflict", "POST", rules, []string{"type", "in", "action", "ACCEPT", "macro", "SSH", "proto", "udp"}, 400, "proto", "parameter 'proto' already define in macro (value = 'tcp')"},
		{"trailing comma", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "22,"}, 400, "dport", "invalid format - extraneous commas in list"},
		{"range in a list", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "10.0.0.1-10.0.0.5,10.0.0.9"}, 400, "source", "invalid format - you can't use a range in a list"},
		{"backwards address range", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "10.0.0.9-10.0.0.1"}, 400, "source", "invalid format - invalid IP address: Begin address is greater than End address 10.0.0.9 - 10.0.0.1"},
		{"empty list element", "POST", rules, []string{"type", "in", "action", "ACCEPT", "source", "10.0.0.1,,10.0.0.2"}, 400, "source", "invalid format - invalid IP address: Invalid chars in IP"},
		{"range of two families", "POST", rules, []string{"type", "in", "action", "ACCEPT", "dest", "10.0.0.1-2001:db8::1"}, 400, "dest", "invalid format - invalid IP address: Not a valid IPv4 address 2001:db8::1"},
		{"icmp name and port", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "icmp", "dport", "echo-request,22"}, 400, "dport", "invalid format - ICMP ports not allowed in port range"},
		{"icmp name on tcp", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "echo-request"}, 400, "dport", "invalid port 'echo-request'"},
		{"icmp-type with dport", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "icmp", "dport", "8", "icmp-type", "echo-request"}, 400, "icmp-type", "'icmp-type' cannot be specified together with 'dport'"},
		{"icmpv6 type on icmp", "POST", rules, []string{"type", "in", "action", "ACCEPT", "proto", "icmp", "icmp-type", "neighbor-solicitation"}, 400, "icmp-type", "invalid icmp-type 'neighbor-solicitation' for proto 'icmp'"},
		{"REJECT on forward", "POST", rules, []string{"type", "forward", "action", "REJECT"}, 400, "action", "cannot define REJECT rules on forward chain"},
		{"group in a group", "POST", "/cluster/firewall/groups/web", []string{"type", "group", "action", "other"}, 400, "type", "invalid rule type 'group' for rule_env 'group'"},
		{"iface in a group", "POST", "/cluster/firewall/groups/web", []string{"type", "in", "action", "ACCEPT", "iface", "eth0"}, 400, "type", "parameter -i not allowed for this rule type"},
		{"no such group", "POST", "/cluster/firewall/groups/nope", []string{"type", "in", "action", "ACCEPT"}, 500, "", "no such security group 'nope'"},
		{"forward on a guest", "POST", "/nodes/pve/qemu/100/firewall/rules", []string{"type", "forward", "action", "ACCEPT"}, 400, "type", "invalid rule type 'forward' for rule_env 'vm'"},
		{"guest iface", "POST", "/nodes/pve/qemu/100/firewall/rules", []string{"type", "in", "action", "ACCEPT", "iface", "eth0"}, 400, "iface", `value does not match the regex pattern 'net\d+'`},
		{"no rule at pos", "PUT", rules + "/7", []string{"comment", "x"}, 500, "", "no rule at position 7"},
		{"delete required", "PUT", rules + "/0", []string{"delete", "action"}, 400, "delete", "unable to delete required property 'action'"},
		{"delete unknown", "PUT", rules + "/0", []string{"delete", "bogus"}, 400, "delete", "no such property ('bogus')"},
		{"group exists", "POST", "/cluster/firewall/groups", []string{"group", "web"}, 400, "group", "Security group 'web' already exists"},
		{"group not empty", "DELETE", "/cluster/firewall/groups/web", nil, 500, "", "Security group 'web' is not empty"},
		{"ipset exists", "POST", "/cluster/firewall/ipset", []string{"name", "admins"}, 400, "name", "IPSet 'admins' already exists"},
		{"ipset not empty", "DELETE", "/cluster/firewall/ipset/admins", nil, 500, "", "IPSet 'admins' is not empty"},
		{"no such ipset", "POST", "/cluster/firewall/ipset/nope", []string{"cidr", "10.0.0.2"}, 500, "", "no such IPSet 'nope'"},
		{"duplicate entry", "POST", "/cluster/firewall/ipset/admins", []string{"cidr", "10.0.0.1/32"}, 400, "cidr", "address '10.0.0.1' already exists"},
		{"zero prefix", "POST", "/cluster/firewall/ipset/admins", []string{"cidr", "0.0.0.0/0"}, 400, "cidr", "a zero prefix is not allowed in ipset entries"},
		{"entry alias unknown", "POST", "/cluster/firewall/ipset/admins", []string{"cidr", "dc/nohost"}, 500, "", "no such alias 'nohost'"},
		{"alias exists", "POST", "/cluster/firewall/aliases", []string{"name", "GW6", "cidr", "10.0.0.1"}, 400, "name", "alias 'GW6' already exists"},
		{"no such alias", "PUT", "/cluster/firewall/aliases/nope", []string{"cidr", "10.0.0.1"}, 400, "name", "no such alias"},
		{"option unknown", "PUT", "/cluster/firewall/options", []string{"delete", "nosmurfs"}, 400, "delete", "no such option 'nosmurfs'"},
	}
	// Names the apidoc's patterns and lengths refuse (the checker would
	// flag these requests: they go to a simulator without it).
	badNames := []fwRefusal{
		{"ipset name chars", "POST", "/cluster/firewall/ipset", []string{"name", "ad.mins"}, 400, "name", ""},
		{"ipset name", "POST", "/cluster/firewall/ipset", []string{"name", "a"}, 400, "name", ""},
		{"group name too long", "POST", "/cluster/firewall/groups", []string{"group", "abcdefghijklmnopqrs"}, 400, "group", ""},
		{"group name", "POST", "/cluster/firewall/groups", []string{"group", "1web"}, 400, "group", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, e) })
	}
	plain := startEnv(t, simtest.Options{})
	for _, tc := range badNames {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, plain) })
	}
	// Refusals changed nothing.
	_, short := fwRules(t, e, rules)
	if len(short) != 1 {
		t.Errorf("rules after refusals: got %q", short)
	}
}

// fwRefusal is a call the simulator must refuse as PVE does.
type fwRefusal struct {
	name, method, path string
	kv                 []string
	status             int
	param, msg         string // param "" means a die: msg is the message
}

func (tc fwRefusal) check(t *testing.T, e *env) {
	t.Helper()
	r := e.call(tc.method, tc.path, tc.kv...)
	if r.Status != tc.status {
		t.Fatalf("got %d %q %v, want %d", r.Status, r.Message, r.Errors, tc.status)
	}
	switch {
	case tc.param == "" && r.Message != tc.msg:
		t.Errorf("got message %q, want %q", r.Message, tc.msg)
	case tc.param != "" && r.Errors[tc.param] == "":
		t.Errorf("got errors %v, want one for %s", r.Errors, tc.param)
	case tc.param != "" && tc.msg != "" && strings.TrimSpace(r.Errors[tc.param]) != tc.msg:
		t.Errorf("got %s error %q, want %q", tc.param, r.Errors[tc.param], tc.msg)
	}
}

// What PVE accepts that a stricter simulator might refuse: service names
// and protocol numbers, ICMP names in an ICMP rule's dport, ranges, a
// macro whose IPv6 variant fits an IPv6 rule, "+dc/" references, a group
// rule naming no group (verify_rule checks only the name), 15 port
// numbers, and a guest's firewall for a vmid without a guest (VM.pm does
// not look).
func TestFirewallAccepts(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/firewall/ipset", "name", "admins")
	const rules = "/cluster/firewall/rules"
	accepted := [][]string{
		{"type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "ssh,http,8000:8080"},
		{"type", "in", "action", "ACCEPT", "proto", "6", "sport", "1024:65535"},
		{"type", "in", "action", "ACCEPT", "proto", "icmp", "dport", "echo-request"},
		{"type", "in", "action", "ACCEPT", "source", "10.0.0.1-10.0.0.9"},
		{"type", "in", "action", "ACCEPT", "source", "2001:db8::/64,2001:db8:1::1"},
		{"type", "in", "action", "ACCEPT", "macro", "ping", "source", "2001:db8::1"},
		{"type", "in", "action", "ACCEPT", "macro", "DHCPv6", "source", "10.0.0.1"},
		{"type", "out", "action", "ACCEPT", "dest", "+dc/admins"},
		{"type", "group", "action", "nosuchgroup"},
		{"type", "in", "action", "ACCEPT", "proto", "udp", "dport", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"},
	}
	for _, kv := range accepted {
		if r := e.call("POST", rules, kv...); r.Status != 200 {
			t.Errorf("POST %v: got %d %q %v, want 200", kv, r.Status, r.Message, r.Errors)
		}
	}
	list, _ := fwRules(t, e, rules)
	if len(list) != len(accepted) {
		t.Fatalf("got %d rules, want %d", len(list), len(accepted))
	}
	for _, r := range list {
		if r["errors"] != nil {
			t.Errorf("rule reads back with errors: %v", r)
		}
	}
	if list[4]["macro"] != "Ping" || list[4]["ipversion"] != float64(6) {
		t.Errorf("macro by its preferred name, IPv6: got %v", list[4])
	}
	e.ok(nil, "POST", "/nodes/pve/qemu/4242/firewall/rules", "type", "in", "action", "DROP")
	if _, short := fwRules(t, e, "/nodes/pve/qemu/4242/firewall/rules"); len(short) != 1 {
		t.Errorf("rules of a vmid without a guest: got %q", short)
	}
}

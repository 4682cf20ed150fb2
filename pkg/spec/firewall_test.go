package spec

import (
	"strings"
	"testing"
)

// Firewall bad input: what PVE's verify_rule and its name patterns refuse
// is named at the rule's or key's line, before any API call.
func TestFirewallBadInput(t *testing.T) {
	doc := `kind: Firewall
name: dc
spec:
  scope: cluster
  options: {enable: yes-please, policy_inn: DROP}
  ipsets:
    9admins: [10.0.0.1]
    ok-set: [10.0.0.0/0]
  aliases:
    bad!name: 10.0.0.1
  rules:
    - {type: in, action: ACCEPT, macro: NoSuchMacro}
    - {type: in, action: ACCEPT, proto: tcp, dport: "22:70000"}
    - {type: in, action: ACCEPT, proto: tcp, dport: "90:80"}
    - {type: in, action: ACCEPT, dport: 22}
    - {type: forward, action: REJECT}
    - {type: in, action: ALLOW}
    - {type: in, action: ACCEPT, proto: icmp, sport: 5}
    - {type: in, action: ACCEPT, porto: tcp}
---
kind: Firewall
name: vm
spec:
  scope: QemuVM/app
  rules:
    - {type: forward, action: ACCEPT, iface: eth0}
---
kind: Firewall
name: vnet
spec:
  scope: SdnVnet/v1
  rules:
    - {type: in, action: ACCEPT}
  aliases: {a2: 10.0.0.2}
---
kind: Firewall
name: node
spec:
  scope: node/pve
  aliases: {a1: 10.0.0.1}
---
kind: SecurityGroup
name: a-group-name-that-is-too-long
spec:
  rules:
    - {type: group, action: other}
---
kind: Firewall
name: zeros
spec:
  scope: cluster
  options: {enable: true}
  aliases: {zoned: "fe80::1%eth0", zero: {cidr: 10.0.0.9, comment: "0"}}
  ipsets: {zz: [{cidr: 10.0.0.7, comment: "0"}]}
  rules:
    - {type: in, action: ACCEPT, macro: SSH, comment: "0"}
---
kind: Firewall
name: host
spec:
  scope: node/pve
  options: {nf_conntrack_helpers: "ftp,"}
---
kind: SecurityGroup
name: zero
spec:
  comment: "0"
`
	_, diags := loadFiles(t, map[string]string{"fw.yaml": doc}, nil)
	got := strings.Join(diags, "\n")
	for _, want := range []string{
		"fw.yaml:5: Firewall/dc: options.enable:",
		`fw.yaml:5: Firewall/dc: options.policy_inn: not an option of this scope's firewall — did you mean "policy_in"?`,
		`fw.yaml:6: Firewall/dc: ipsets.9admins: PVE refuses the name "9admins"`,
		"fw.yaml:6: Firewall/dc: ipsets.ok-set[0]: a zero prefix is not allowed in IP set entries",
		`fw.yaml:9: Firewall/dc: aliases.bad!name: PVE refuses the name "bad!name"`,
		`fw.yaml:12: Firewall/dc: rules[0]: unknown macro "NoSuchMacro"`,
		`fw.yaml:13: Firewall/dc: rules[1]: dport "22:70000": port range "22:70000" is out of bounds (ports go up to 65535)`,
		`fw.yaml:14: Firewall/dc: rules[2]: dport "90:80": backwards range '90:80' not allowed, did you mean '80:90'?`,
		"fw.yaml:15: Firewall/dc: rules[3]: dport needs proto",
		"fw.yaml:16: Firewall/dc: rules[4]: REJECT is not allowed on the forward chain",
		`fw.yaml:17: Firewall/dc: rules[5]: action "ALLOW": ACCEPT, DROP or REJECT`,
		`fw.yaml:18: Firewall/dc: rules[6]: sport: protocol "icmp" does not support ports`,
		`fw.yaml:19: Firewall/dc: rules[7].porto: not a rule key — did you mean "proto"?`,
		`fw.yaml:26: Firewall/vm: rules[0]: type "forward" is not allowed here: PVE takes in, out, group`,
		`fw.yaml:26: Firewall/vm: rules[0]: iface "eth0": a guest's rule names its NIC by config key`,
		"fw.yaml:31: Firewall/vnet: a vnet's firewall has no aliases or IP sets in PVE",
		`fw.yaml:33: Firewall/vnet: rules[0]: type "in" is not allowed here: PVE takes forward, group`,
		"fw.yaml:39: Firewall/node: a node's firewall has no aliases or IP sets in PVE",
		`fw.yaml:43: name "a-group-name-that-is-too-long" cannot be the SecurityGroup's group (value may only be 18 characters long)`,
		`fw.yaml:46: SecurityGroup/a-group-name-that-is-too-long: rules[0]: type "group" is not allowed here: PVE takes in, out, forward`,
		`Firewall/zeros: aliases.zoned: "fe80::1%eth0": PVE's firewall takes no zone (%eth0) in an address`,
		`Firewall/zeros: aliases.zero: comment "0": PVE's firewall does not keep a comment that reads 0`,
		`Firewall/zeros: ipsets.zz[0]: comment "0"`,
		`Firewall/zeros: rules[0]: comment "0"`,
		`Firewall/host: options.nf_conntrack_helpers: invalid format - extraneous commas in list`,
		`SecurityGroup/zero: comment "0"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics lack %q; got:\n%s", want, got)
		}
	}
}

// A valid Firewall is normalized into PVE's wire form: macros in PVE's
// spelling, enable defaulting to 1, IP set networks masked, alias names lower
// case, group rules making a dependency on their SecurityGroup.
func TestFirewallWire(t *testing.T) {
	set := mustLoad(t, map[string]string{"fw.yaml": `kind: Firewall
name: dc
spec:
  scope: cluster
  options: {enable: true}
  aliases: {Admin: 10.0.0.5, one: 192.0.2.1/32, six: 2001:db8::1/128, net: 10.0.0.5/24}
  ipsets: {admins: [10.0.0.5/8, {cidr: 10.9.0.0/16, nomatch: true}]}
  rules:
    - {type: in, action: ACCEPT, macro: ssh, enable: false}
    - {type: group, action: web}
---
kind: SecurityGroup
name: web
spec:
  rules: [{type: in, action: ACCEPT, proto: tcp, dport: 443}]
`}, nil)
	r := set.Lookup("Firewall/dc")
	w := FirewallWireOf(r)
	if w == nil {
		t.Fatal("no wire form")
	}
	if w.Options["enable"] != "1" || w.Rules[0]["macro"] != "SSH" || w.Rules[0]["enable"] != "0" || w.Rules[1]["enable"] != "1" {
		t.Errorf("wire = %+v", w)
	}
	// PVE keeps a single address without /32 or /128 (Firewall.pm
	// parse_ip_or_cidr): so does the spec, or the plan never settles.
	if w.Aliases["one"]["cidr"] != "192.0.2.1" || w.Aliases["six"]["cidr"] != "2001:db8::1" {
		t.Errorf("single addresses: %v", w.Aliases)
	}
	// An alias is kept as written (Aliases.pm), an IP set entry masked
	// (IPSet.pm create_ip: clean_cidr).
	if w.Aliases["net"]["cidr"] != "10.0.0.5/24" {
		t.Errorf("alias net: got %q, want 10.0.0.5/24 as written", w.Aliases["net"]["cidr"])
	}
	if w.Aliases["admin"]["cidr"] != "10.0.0.5" || w.IPSets["admins"][0]["cidr"] != "10.0.0.0/8" || w.IPSets["admins"][1]["nomatch"] != "1" {
		t.Errorf("aliases %v ipsets %v", w.Aliases, w.IPSets)
	}
	if deps := set.DepGraph().Deps["Firewall/dc"]; !strings.Contains(strings.Join(deps, ","), "SecurityGroup/web") {
		t.Errorf("deps = %v, want SecurityGroup/web", deps)
	}
	if g := FirewallWireOf(set.Lookup("SecurityGroup/web")); g == nil || g.Rules[0]["dport"] != "443" {
		t.Errorf("group wire = %+v", g)
	}
}

package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The firewall kinds (issue 20): Firewall, the whole firewall of one
// scope (options, ordered rules, aliases, IP sets), and SecurityGroup, a
// cluster security group with its ordered rules. Their facts are
// pve-firewall's (src/PVE/Firewall.pm verify_rule, parse_port_name_number_or_range,
// the name patterns; API2/Firewall/*.pm for the calls).

// FirewallKeys are a Firewall's keys: all pvectl's own, since no one PVE
// call takes them; each rule's, option's and entry's keys are PVE's.
type FirewallKeys struct {
	Scope   string         `json:"scope" doc:"Whose firewall: cluster, node/<node>, QemuVM/<name> or LxcContainer/<name> (a guest of these specs). The document is authoritative for that scope: rules, aliases and IP sets it does not list are removed."`
	Options map[string]any `json:"options,omitempty" doc:"PVE's firewall options of the scope (enable, policy_in, policy_out, log_level_in, dhcp, ipfilter, macfilter, …; PUT …/firewall/options). Only the options written are managed."`
	Rules   []any          `json:"rules,omitempty" doc:"The ordered rules: each a map of PVE's rule keys (type, action, macro, source, dest, proto, dport, sport, iface, icmp-type, log, enable, comment); list position is PVE's pos. enable defaults to 1. Reordering is applied as moves, never by deleting a rule the spec keeps."`
	Aliases map[string]any `json:"aliases,omitempty" doc:"The scope's IP aliases: name → CIDR, or name → {cidr, comment} (cluster and guest scopes)."`
	IPSets  map[string]any `json:"ipsets,omitempty" doc:"The scope's IP sets: name → list of CIDRs or aliases, each optionally {cidr, nomatch, comment} (cluster and guest scopes)."`

	// Wire is the checked, normalized form the planner works from (Check
	// sets it).
	Wire *FirewallWire `json:"wire,omitempty" internal:"true"`
}

// SecurityGroupKeys are a SecurityGroup's own keys (group and comment
// are PVE's parameters of POST /cluster/firewall/groups).
type SecurityGroupKeys struct {
	Rules []any `json:"rules,omitempty" doc:"The group's ordered rules, as a Firewall's rules (type in, out or forward; enable defaults to 1). Reordering is applied as moves."`

	Wire *FirewallWire `json:"wire,omitempty" internal:"true"`
}

// FirewallWire is a firewall document in PVE's wire form.
type FirewallWire struct {
	// Scope is the parsed scope: "cluster", "node", "qemu", "lxc" or
	// "group"; Node and Guest complete it (Guest is "Kind/name").
	Scope string `json:"scope"`
	Node  string `json:"node,omitempty"`
	Guest string `json:"guest,omitempty"`
	// Vnet is the SDN vnet of scope "vnet".
	Vnet string `json:"vnet,omitempty"`
	// Options are written options, rules each rule's parameters.
	Options map[string]string   `json:"options,omitempty"`
	Rules   []map[string]string `json:"rules,omitempty"`
	// Aliases by (lower-case) name: cidr and comment.
	Aliases map[string]map[string]string `json:"aliases,omitempty"`
	// IPSets by name: their entries (cidr, nomatch, comment).
	IPSets map[string][]map[string]string `json:"ipsets,omitempty"`
}

// Firewall scope names (FirewallWire.Scope).
const (
	FirewallCluster = "cluster"
	FirewallNode    = "node"
	FirewallQemu    = "qemu"
	FirewallLxc     = "lxc"
	FirewallVnet    = "vnet" // an SDN vnet's (pve-firewall API2/Firewall/Vnet.pm)
	FirewallGroup   = "group"
)

// FirewallWireOf returns a Firewall's or SecurityGroup's checked wire
// form (nil when Load did not set it).
func FirewallWireOf(r *Resource) *FirewallWire {
	switch k := r.Keys.(type) {
	case *FirewallKeys:
		return k.Wire
	case *SecurityGroupKeys:
		return k.Wire
	}
	return nil
}

// ruleParams are the keys a rule takes (Firewall.pm $rule_properties,
// less pos and digest, which pvectl sends itself).
var ruleParams = []string{"type", "action", "macro", "source", "dest", "proto", "dport", "sport", "iface", "icmp-type", "log", "enable", "comment"}

// RuleParams lists the rule keys a spec writes, in their display order.
func RuleParams() []string { return slices.Clone(ruleParams) }

// ruleTypes are the rule types each scope takes (Firewall.pm
// $rule_env_direction_lookup).
var ruleTypes = map[string][]string{
	FirewallCluster: {"in", "out", "forward", "group"},
	FirewallNode:    {"in", "out", "forward", "group"},
	FirewallQemu:    {"in", "out", "group"},
	FirewallLxc:     {"in", "out", "group"},
	FirewallVnet:    {"forward", "group"},
	FirewallGroup:   {"in", "out", "forward"},
}

// protocolsWithPorts is Firewall.pm's $PROTOCOLS_WITH_PORTS.
var protocolsWithPorts = []string{"udp", "17", "udplite", "136", "tcp", "6", "dccp", "33", "sctp", "132"}

// fwNameRE is the pattern of security group, IP set and alias names
// (Firewall.pm $security_group_name_pattern, $ipset_name_pattern,
// $ip_alias_pattern).
var fwNameRE = lazyre.New(`^[A-Za-z][A-Za-z0-9\-_]+$`)

// A guest rule's NIC (net0, …); a service name in a port list (ssh).
var guestIfaceRE, portNameRE = lazyre.New(`^net\d+$`), lazyre.New(`^[A-Za-z][A-Za-z0-9._+-]*$`)

// maxSetName is the longest IP set or alias name PVE takes (Firewall.pm
// $max_ipset_name_length, $max_alias_name_length).
const maxSetName = 64

// firewallScope parses a scope: cluster, node/<node>, or a guest
// (guests maps the guest kinds to their scope: QemuVM/<name>,
// LxcContainer/<name>).
func firewallScope(s string, guests map[string]string) (w FirewallWire, msg string) {
	if s == "cluster" {
		return FirewallWire{Scope: FirewallCluster}, ""
	}
	kind, name, ok := strings.Cut(s, "/")
	switch {
	case !ok || name == "":
	case kind == "node":
		return FirewallWire{Scope: FirewallNode, Node: name}, ""
	case guests[kind] == FirewallVnet:
		return FirewallWire{Scope: FirewallVnet, Vnet: name}, ""
	case guests[kind] != "":
		return FirewallWire{Scope: guests[kind], Guest: s}, ""
	}
	return w, fmt.Sprintf("scope %q: write cluster, node/<node>, QemuVM/<name> or LxcContainer/<name>", s)
}

// checkFirewall validates a Firewall and sets its wire form; guests maps
// the guest kinds a scope may name to their scope.
func checkFirewall(guests map[string]string) func(r *Resource) []problem {
	return func(r *Resource) []problem { return checkFirewallIn(r, guests) }
}

func checkFirewallIn(r *Resource, guests map[string]string) []problem {
	keys, _ := r.Keys.(*FirewallKeys)
	if keys == nil || keys.Scope == "" {
		return []problem{{"scope", "spec.scope is required: cluster, node/<node>, QemuVM/<name> or LxcContainer/<name>"}}
	}
	w, msg := firewallScope(keys.Scope, guests)
	if msg != "" {
		return []problem{{"scope", msg}}
	}
	var ps []problem
	report := func(key, format string, args ...any) { ps = append(ps, problem{key, fmt.Sprintf(format, args...)}) }
	switch w.Scope {
	case FirewallNode:
		r.Params.Set("node", w.Node)
	case FirewallQemu, FirewallLxc:
		// The guest's vmid is its output: known at plan time when the
		// guest exists, else after it is made; the reference is also the
		// dependency on the guest (outputs.go).
		r.Params.Set("vmid", "${"+w.Guest+".vmid}")
		// Its node too: the guest's firewall paths need both.
		r.Params.Set("node", "${"+w.Guest+".node}")
	}
	w.Options = firewallOptions(r, w.Scope, keys.Options, report)
	w.Rules = firewallRules(r, w.Scope, "rules", keys.Rules, report)
	if (w.Scope == FirewallNode || w.Scope == FirewallVnet) && (len(keys.Aliases) > 0 || len(keys.IPSets) > 0) {
		report("scope", "a %s's firewall has no aliases or IP sets in PVE (only the cluster's and guests' have): write them in the cluster's Firewall", w.Scope)
	} else {
		w.Aliases = firewallAliases(keys.Aliases, report)
		w.IPSets = firewallIPSets(keys.IPSets, report)
	}
	keys.Wire = &w
	return ps
}

// checkSecurityGroup validates a SecurityGroup's rules and sets its wire
// form; group and comment are checked as PVE parameters by Load.
func checkSecurityGroup(r *Resource) []problem {
	keys, _ := r.Keys.(*SecurityGroupKeys)
	if keys == nil {
		keys = &SecurityGroupKeys{}
		r.Keys = keys
	}
	var ps []problem
	report := func(key, format string, args ...any) { ps = append(ps, problem{key, fmt.Sprintf(format, args...)}) }
	keys.Wire = &FirewallWire{Scope: FirewallGroup, Rules: firewallRules(r, FirewallGroup, "rules", keys.Rules, report)}
	if r.Params.Get("comment") == "0" {
		report("comment", "%s", zeroComment)
	}
	return ps
}

// optionsCall is the options call of each scope, whose parameters the
// options are.
var optionsCall = map[string]string{
	FirewallCluster: "/cluster/firewall/options",
	FirewallNode:    "/nodes/{node}/firewall/options",
	FirewallQemu:    "/nodes/{node}/qemu/{vmid}/firewall/options",
	FirewallLxc:     "/nodes/{node}/lxc/{vmid}/firewall/options",
	FirewallVnet:    "/cluster/sdn/vnets/{vnet}/firewall/options",
}

func firewallOptions(r *Resource, scope string, opts map[string]any, report func(string, string, ...any)) map[string]string {
	if len(opts) == 0 {
		return nil
	}
	m, _ := schema.Default().Lookup("PUT", optionsCall[scope])
	out := map[string]string{}
	for _, name := range sortedKeys(opts) {
		v := opts[name]
		var p *schema.Param
		if m != nil && !slices.Contains([]string{"node", "vmid", "digest", "delete"}, name) {
			p, _ = m.Param(name)
		}
		if p == nil {
			report("options", "options.%s: not an option of this scope's firewall%s", name, didYouMean(name, optionNames(m)))
			continue
		}
		s, ok := wireScalar(v)
		if !ok {
			report("options", "options.%s must be a single value, got %v", name, v)
			continue
		}
		if err := p.Check(s); err != nil {
			report("options", "options.%s: %v", name, err)
			continue
		}
		out[name] = s
	}
	return out
}

func optionNames(m *schema.Method) []string {
	if m == nil {
		return nil
	}
	var out []string
	for name := range m.Params {
		if name != "node" && name != "vmid" && name != "digest" && name != "delete" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// wireScalar is a decoded YAML scalar in PVE's wire form: booleans 1/0,
// numbers in decimal, strings as written.
func wireScalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		if x {
			return "1", true
		}
		return "0", true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	}
	return "", false
}

// firewallRules checks each rule as PVE's verify_rule does for the scope
// and returns them in wire form; enable defaults to 1 (PVE's POST leaves
// a rule without enable disabled, which a declarative spec would not
// mean: docs/decisions.md).
func firewallRules(r *Resource, scope, key string, rules []any, report func(string, string, ...any)) []map[string]string {
	m, _ := schema.Default().Lookup("POST", "/cluster/firewall/rules")
	var out []map[string]string
	for i, raw := range rules {
		at := fmt.Sprintf("%s[%d]", key, i)
		if !r.KeyPos.Has(at) {
			at = key
		}
		item, ok := raw.(map[string]any)
		if !ok {
			report(at, "%s[%d] must be a map of rule keys (type, action, proto, dport, …), got %v", key, i, raw)
			continue
		}
		rule := map[string]string{}
		bad := false
		for _, name := range sortedKeys(item) {
			s, ok := wireScalar(item[name])
			var p *schema.Param
			if m != nil && slices.Contains(ruleParams, name) {
				p, _ = m.Param(name)
			}
			switch {
			case p == nil:
				report(at, "%s[%d].%s: not a rule key%s", key, i, name, didYouMean(name, ruleParams))
				bad = true
				continue
			case !ok:
				report(at, "%s[%d].%s must be a single value, got %v", key, i, name, item[name])
				bad = true
				continue
			}
			if err := p.Check(s); err != nil {
				report(at, "%s[%d].%s: %v", key, i, name, err)
				bad = true
				continue
			}
			rule[name] = s
		}
		if bad {
			continue
		}
		if rule["comment"] == "0" {
			report(at, "%s[%d]: %s", key, i, zeroComment)
		}
		if _, set := rule["enable"]; !set {
			rule["enable"] = "1"
		}
		for _, msg := range verifyRule(rule, scope) {
			report(at, "%s[%d]: %s", key, i, msg)
		}
		out = append(out, rule)
	}
	return out
}

// verifyRule finds, offline, what PVE's verify_rule refuses (Firewall.pm):
// the type for the scope, the action, an unknown macro, ports out of range
// or on a protocol without ports, iface on a guest. Macro names take PVE's
// spelling (it stores the preferred one).
func verifyRule(rule map[string]string, scope string) []string {
	var out []string
	typ, action := rule["type"], rule["action"]
	if typ == "" {
		out = append(out, "type is required (in, out, forward or group)")
	} else if !slices.Contains(ruleTypes[scope], typ) {
		out = append(out, fmt.Sprintf("type %q is not allowed here: PVE takes %s", typ, strings.Join(ruleTypes[scope], ", ")))
	}
	switch {
	case action == "":
		out = append(out, "action is required (ACCEPT, DROP, REJECT, or a security group for type group)")
	case typ == "group":
		if !fwNameRE.MatchString(action) {
			out = append(out, fmt.Sprintf("action %q: a security group name (a letter, then letters, digits, - or _)", action))
		}
	case action != "ACCEPT" && action != "DROP" && action != "REJECT":
		out = append(out, fmt.Sprintf("action %q: ACCEPT, DROP or REJECT (or type: group with a security group's name)", action))
	case typ == "forward" && action == "REJECT":
		out = append(out, "REJECT is not allowed on the forward chain (PVE: cannot define REJECT rules on forward chain)")
	}
	if iface := rule["iface"]; iface != "" && (scope == FirewallQemu || scope == FirewallLxc) && !guestIfaceRE.MatchString(iface) {
		out = append(out, fmt.Sprintf("iface %q: a guest's rule names its NIC by config key (net0, net1, …)", iface))
	}
	if mac := rule["macro"]; mac != "" {
		if name, ok := macroName(mac); ok {
			rule["macro"] = name
		} else {
			out = append(out, fmt.Sprintf("unknown macro %q%s (PVE's macros: %s)", mac, didYouMean(mac, fwMacros), strings.Join(fwMacros, ", ")))
		}
	}
	proto := rule["proto"]
	icmp := proto == "icmp" || proto == "icmpv6" || proto == "ipv6-icmp" || proto == "1" || proto == "58"
	for _, port := range []string{"dport", "sport"} {
		v := rule[port]
		if v == "" {
			continue
		}
		if msg := checkPorts(v, port == "dport" && icmp); msg != "" {
			out = append(out, fmt.Sprintf("%s %q: %s", port, v, msg))
		}
		switch {
		case proto == "":
			out = append(out, fmt.Sprintf("%s needs proto (PVE: missing property - '%s' requires this property)", port, port))
		case !slices.Contains(protocolsWithPorts, proto) && !(port == "dport" && icmp):
			out = append(out, fmt.Sprintf("%s: protocol %q does not support ports", port, proto))
		}
	}
	if rule["icmp-type"] != "" && !icmp {
		out = append(out, "icmp-type needs proto icmp, icmpv6 or ipv6-icmp")
	}
	return out
}

// checkPorts is parse_port_name_number_or_range: a comma list of ports
// and first:last ranges, each at most 65535, ranges not backwards, at most
// 15 numbers (a range counts two). Service names are checked by PVE
// against the node's /etc/services.
func checkPorts(s string, icmp bool) string {
	count := 0
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			return "extraneous commas in list"
		}
		if a, b, ok := strings.Cut(item, ":"); ok {
			x, errA := strconv.Atoi(a)
			y, errB := strconv.Atoi(b)
			switch {
			case errA != nil || errB != nil:
				return fmt.Sprintf("invalid port range %q", item)
			case x > 65535 || y > 65535:
				return fmt.Sprintf("port range %q is out of bounds (ports go up to 65535)", item)
			case x > y:
				return fmt.Sprintf("backwards range '%s' not allowed, did you mean '%d:%d'?", item, y, x)
			}
			count += 2
			continue
		}
		if n, err := strconv.Atoi(item); err == nil {
			if n > 65535 || n < 0 {
				return fmt.Sprintf("invalid port '%s' (ports go up to 65535)", item)
			}
			count++
			continue
		}
		if !icmp && !portNameRE.MatchString(item) {
			return fmt.Sprintf("invalid port '%s'", item)
		}
	}
	if count > 15 {
		return "too many entries in port list (> 15 numbers)"
	}
	return ""
}

// firewallIdentities: one Firewall per scope.
func firewallIdentities(r *Resource) []identity {
	keys, _ := r.Keys.(*FirewallKeys)
	if keys == nil || keys.Scope == "" {
		return nil
	}
	return []identity{{ns: r.Kind + "\x00scope", key: fmt.Sprintf("firewall scope %q", keys.Scope), what: "scope"}}
}

// firewallRefValue: a Firewall is named by its scope (a guest's firewall
// depends on the cluster's, whose IP sets and aliases it may use).
func firewallRefValue(r *Resource) string {
	if keys, _ := r.Keys.(*FirewallKeys); keys != nil {
		return keys.Scope
	}
	return ""
}

// vnetScopeRef: a vnet's Firewall names its vnet (by its id) in scope;
// PVE serves the vnet's firewall once the vnet is committed, so the
// Firewall waits for the SDN commit too (the staging engine adds it).
func vnetScopeRef(r *Resource) []refValue {
	if w := FirewallWireOf(r); w != nil && w.Scope == FirewallVnet {
		return []refValue{{Key: "scope", Value: w.Vnet}}
	}
	return nil
}

// clusterFirewallRef: every other scope's Firewall depends on the
// cluster's (dc/ IP sets and aliases, the cluster's enable).
func clusterFirewallRef(r *Resource) []refValue {
	if firewallRefValue(r) == "" || firewallRefValue(r) == "cluster" {
		return nil
	}
	return []refValue{{Key: "scope", Value: "cluster"}}
}

// ruleGroups are the security groups a firewall's rules name.
func ruleGroups(r *Resource) []refValue {
	w := FirewallWireOf(r)
	if w == nil {
		return nil
	}
	var out []refValue
	for _, rule := range w.Rules {
		if rule["type"] == "group" {
			out = append(out, refValue{Key: "rules", Value: rule["action"]})
		}
	}
	return out
}

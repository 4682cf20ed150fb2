package spec

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// A SecurityGroup's rules may use the cluster's IP sets and aliases
// (`source: +admins`, `dest: office`), which PVE checks when the rule is
// written (pve-firewall src/PVE/Firewall.pm verify_rule: "no such ipset").
// When the cluster's Firewall document declares them, the group depends
// on that Firewall, and the Firewall's rules that name the group
// (`type: group`) do not make the Firewall depend on the group: the
// planner writes the Firewall's aliases and IP sets first, lets the group
// go, then writes the Firewall's rules (pkg/planner firewall_late.go).

// ruleSetUsers: a security group whose rules name an IP set or an alias
// references the cluster's Firewall.
func ruleSetUsers(r *Resource) []refValue {
	if sets, aliases := ruleSetNames(r); len(sets)+len(aliases) > 0 {
		return []refValue{{Key: "rules", Value: FirewallCluster}}
	}
	return nil
}

// usesNoSetOf is the group's Skip: no edge to a Firewall that declares
// none of the IP sets and aliases the group's rules name.
func usesNoSetOf(group, fw *Resource) bool { return !GroupUsesFirewallSets(fw, group) }

// GroupUsesFirewallSets reports whether the rules of the SecurityGroup
// group name an IP set or an alias that the cluster Firewall fw declares:
// the group then depends on fw, and fw writes its rules after the group.
func GroupUsesFirewallSets(fw, group *Resource) bool {
	w := FirewallWireOf(fw)
	if _, isGroup := group.Keys.(*SecurityGroupKeys); w == nil || w.Scope != FirewallCluster || !isGroup {
		return false
	}
	sets, aliases := ruleSetNames(group)
	for _, n := range sets {
		if _, ok := w.IPSets[n]; ok {
			return true
		}
	}
	for _, n := range aliases {
		if _, ok := w.Aliases[n]; ok {
			return true
		}
	}
	return false
}

// ruleSetNames are the IP sets (`+name`, `+dc/name`) and aliases (a name
// that is no address, `dc/name`) r's rules use in source and dest.
func ruleSetNames(r *Resource) (sets, aliases []string) {
	w := FirewallWireOf(r)
	if w == nil {
		return nil, nil
	}
	for _, rule := range w.Rules {
		for _, key := range []string{"source", "dest"} {
			for _, item := range strings.Split(rule[key], ",") {
				item = strings.TrimSpace(item)
				switch {
				case item == "":
				case strings.HasPrefix(item, "+"):
					sets = append(sets, strings.TrimPrefix(strings.TrimPrefix(item, "+"), "dc/"))
				case isAddressItem(item):
				default:
					aliases = append(aliases, strings.TrimPrefix(item, "dc/"))
				}
			}
		}
	}
	return sets, aliases
}

// isAddressItem: an address, a CIDR or a range (a-b) rather than a name.
func isAddressItem(s string) bool {
	first, _, _ := strings.Cut(s, "-")
	if _, err := netip.ParseAddr(first); err == nil {
		return true
	}
	_, err := netip.ParsePrefix(first)
	return err == nil
}

// The scopes' aliases and IP sets, in wire form.

func firewallAliases(in map[string]any, report func(string, string, ...any)) map[string]map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := map[string]map[string]string{}
	for _, name := range sortedKeys(in) {
		if msg := setName(name); msg != "" {
			report("aliases", "aliases.%s: %s", name, msg)
			continue
		}
		entry := map[string]string{}
		switch v := in[name].(type) {
		case string:
			entry["cidr"] = v
		case map[string]any:
			for k, x := range v {
				s, ok := wireScalar(x)
				if !ok || (k != "cidr" && k != "comment") {
					report("aliases", "aliases.%s.%s: an alias takes cidr and comment", name, k)
					continue
				}
				entry[k] = s
			}
		default:
			report("aliases", "aliases.%s must be a CIDR or {cidr, comment}", name)
			continue
		}
		cidr, msg := cleanCIDR(entry["cidr"], false)
		if msg == "" && entry["comment"] == "0" {
			msg = zeroComment
		}
		if msg != "" {
			report("aliases", "aliases.%s: %s", name, msg)
			continue
		}
		entry["cidr"] = cidr
		lower := strings.ToLower(name) // PVE keeps alias names in lower case (Aliases.pm)
		if _, dup := out[lower]; dup {
			report("aliases", "aliases.%s: PVE keeps alias names in lower case, and another alias is %q too", name, lower)
			continue
		}
		out[lower] = entry
	}
	return out
}

func firewallIPSets(in map[string]any, report func(string, string, ...any)) map[string][]map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := map[string][]map[string]string{}
	for _, name := range sortedKeys(in) {
		if msg := setName(name); msg != "" {
			report("ipsets", "ipsets.%s: %s", name, msg)
			continue
		}
		list, ok := in[name].([]any)
		if !ok && in[name] != nil {
			report("ipsets", "ipsets.%s must be a list of CIDRs (each a CIDR or {cidr, nomatch, comment})", name)
			continue
		}
		entries := []map[string]string{}
		seen := map[string]bool{}
		for i, item := range list {
			entry := map[string]string{}
			switch v := item.(type) {
			case string:
				entry["cidr"] = v
			case map[string]any:
				for k, x := range v {
					s, ok := wireScalar(x)
					if !ok || (k != "cidr" && k != "comment" && k != "nomatch") {
						report("ipsets", "ipsets.%s[%d].%s: an entry takes cidr, nomatch and comment", name, i, k)
						continue
					}
					entry[k] = s
				}
			default:
				report("ipsets", "ipsets.%s[%d] must be a CIDR or {cidr, nomatch, comment}", name, i)
				continue
			}
			cidr, msg := cleanCIDR(entry["cidr"], true)
			if msg == "" && strings.Contains(cidr, "/") && strings.HasSuffix(cidr, "/0") {
				msg = "a zero prefix is not allowed in IP set entries"
			}
			if msg == "" && entry["comment"] == "0" {
				msg = zeroComment
			}
			if msg != "" {
				report("ipsets", "ipsets.%s[%d]: %s", name, i, msg)
				continue
			}
			if seen[cidr] {
				report("ipsets", "ipsets.%s[%d]: address '%s' already exists in the set", name, i, cidr)
				continue
			}
			seen[cidr] = true
			entry["cidr"] = cidr
			if n, ok := entry["nomatch"]; ok && n != "1" && n != "0" {
				report("ipsets", "ipsets.%s[%d].nomatch must be true or false", name, i)
			}
			if entry["nomatch"] == "0" {
				delete(entry, "nomatch")
			}
			entries = append(entries, entry)
		}
		out[name] = entries
	}
	return out
}

// setName checks an IP set or alias name (the pattern and length PVE's
// schema has).
func setName(name string) string {
	if !fwNameRE.MatchString(name) || len(name) > maxSetName {
		return fmt.Sprintf("PVE refuses the name %q: a letter, then at least one letter, digit, - or _ (at most %d characters)", name, maxSetName)
	}
	return ""
}

// cleanCIDR is an address or network as PVE stores it: an IP set entry's
// network masked to its prefix (API2/Firewall/IPSet.pm create_ip runs
// Firewall.pm clean_cidr), an alias's as written (Aliases.pm keeps the
// value), both without /32 or /128 (parse_ip_or_cidr drops them when the
// file is read); an alias name is kept.
func cleanCIDR(s string, mask bool) (string, string) {
	if s == "" {
		return "", "cidr is required"
	}
	if fwAliasRefRE.MatchString(s) {
		return s, ""
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		if mask {
			p = p.Masked()
		}
		if p.IsSingleIP() {
			// PVE keeps an address alone (pve-firewall Firewall.pm
			// parse_ip_or_cidr drops /32 and /128).
			return p.Addr().String(), ""
		}
		return p.String(), ""
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return "", fmt.Sprintf("%q: PVE's firewall takes no zone (%%%s) in an address (Firewall.pm IPorCIDR): write the address alone", s, a.Zone())
		}
		return a.String(), ""
	}
	return "", fmt.Sprintf("%q is not an IP address, a CIDR or an alias name", s)
}

// zeroComment is why a firewall comment "0" is refused: pve-firewall
// writes a comment only when Perl counts it true (Firewall.pm
// $format_rules, $format_aliases, $format_ipsets, save_clusterfw_conf),
// so a "0" is dropped and the plan would never settle.
const zeroComment = `comment "0": PVE's firewall does not keep a comment that reads 0 (Perl counts it false), so the plan would never settle: write another comment, or none`

var fwAliasRefRE = lazyre.New(`^(dc/|guest/)?[A-Za-z][A-Za-z0-9\-_]+$`)

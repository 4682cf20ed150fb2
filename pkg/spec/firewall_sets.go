package spec

import (
	"net/netip"
	"strings"
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

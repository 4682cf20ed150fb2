package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The feasibility checks of HA rules as pve-ha-manager runs them
// (src/PVE/HA/Rules.pm check_feasibility): every check of every rule
// type, in the order the types are registered (Env/PVE2.pm: node-affinity,
// resource-affinity), then the global (inter-plugin) checks. A check blames
// rules; a write is refused only when the rule it writes is blamed
// (API2/HA/Rules.pm $assert_feasibility), and GET shows every rule's
// errors ($get_api_ha_rule).

// haCheckRule is a rule as the checks read it: decoded sets.
type haCheckRule struct {
	id, affinity string
	resources    map[string]bool
	nodes        map[string]int // node → priority
}

// haRuleErrors are the checks' errors: rule → option → messages.
type haRuleErrors map[string]map[string][]string

func (e haRuleErrors) add(id, msg string) {
	if e[id] == nil {
		e[id] = map[string][]string{}
	}
	e[id]["resources"] = append(e[id]["resources"], msg)
}

// haFeasibility is check_feasibility over the enabled rules (the plugins'
// get_plugin_check_arguments: exclude_disabled_rules) with the cluster's
// nodes.
func (s *Server) haFeasibility() haRuleErrors {
	h := s.ha()
	var na, pos, neg, ra []*haCheckRule
	for _, id := range slices.Sorted(maps.Keys(h.Rules)) {
		rule := h.Rules[id]
		if rule["disable"] == "1" {
			continue
		}
		r := &haCheckRule{id: id, affinity: rule["affinity"], resources: map[string]bool{}, nodes: map[string]int{}}
		for _, sid := range splitKeys(rule["resources"]) {
			r.resources[sid] = true
		}
		for _, n := range splitKeys(rule["nodes"]) {
			name, p, _ := strings.Cut(n, ":")
			r.nodes[name], _ = strconv.Atoi(p)
		}
		switch rule["type"] {
		case "node-affinity":
			na = append(na, r)
		case "resource-affinity":
			ra = append(ra, r)
			if r.affinity == "positive" {
				pos = append(pos, r)
			} else if r.affinity == "negative" {
				neg = append(neg, r)
			}
		}
	}
	errs := haRuleErrors{}
	haCheckSingleReference(na, errs)
	for _, r := range ra {
		// ResourceAffinity.pm check_resource_affinity_resources_count
		if len(r.resources) < 2 {
			errs.add(r.id, "rule is ineffective as there are less than two resources")
		}
	}
	for _, r := range neg {
		// check_negative_resource_affinity_resources_count
		if len(r.resources) > len(s.st.Nodes) {
			errs.add(r.id, "rule defines more resources than available nodes")
		}
	}
	haCheckPositiveNegative(pos, neg, errs)
	haCheckSinglePriority(ra, na, errs)
	haCheckSingleNodeAffinity(pos, na, errs)
	haCheckNegativeNodes(neg, na, errs)
	return errs
}

// haConflict is one blamed rule of a check: its kind and id, sorted as the
// checks sort them (kind, then id).
type haConflict struct{ kind, id string }

func haBlame(conflicts []haConflict, errs haRuleErrors, msgs map[string]string) {
	slices.SortFunc(conflicts, func(a, b haConflict) int {
		return strings.Compare(a.kind+"\x00"+a.id, b.kind+"\x00"+b.id)
	})
	for _, c := range conflicts {
		errs.add(c.id, msgs[c.kind])
	}
}

func haDisjoint(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return false
		}
	}
	return true
}

// haCheckSingleReference is NodeAffinity.pm check_single_resource_reference.
func haCheckSingleReference(na []*haCheckRule, errs haRuleErrors) {
	users := map[string][]string{}
	for _, r := range na {
		for sid := range r.resources {
			users[sid] = append(users[sid], r.id)
		}
	}
	type conflict struct{ id, sid string }
	var cs []conflict
	for sid, ids := range users {
		if len(ids) > 1 {
			for _, id := range ids {
				cs = append(cs, conflict{id, sid})
			}
		}
	}
	slices.SortFunc(cs, func(a, b conflict) int { return strings.Compare(a.id+"\x00"+a.sid, b.id+"\x00"+b.sid) })
	for _, c := range cs {
		errs.add(c.id, fmt.Sprintf("resource '%s' is already used in another node affinity rule", c.sid))
	}
}

// haPositiveSet is an entry of Rules/Helpers.pm
// find_disjoint_rules_resource_sets: connected positive rules and the
// union of their resources.
type haPositiveSet struct {
	ids       []string
	resources map[string]bool
}

func haDisjointPositive(pos []*haCheckRule) []*haPositiveSet {
	lowest := func(r *haCheckRule) string {
		if len(r.resources) == 0 {
			return ""
		}
		return slices.Sorted(maps.Keys(r.resources))[0]
	}
	sorted := slices.Clone(pos) // by id already; then by lowest resource
	slices.SortStableFunc(sorted, func(a, b *haCheckRule) int { return strings.Compare(lowest(a), lowest(b)) })
	var sets []*haPositiveSet
	for _, r := range sorted {
		var found *haPositiveSet
		for _, set := range sets {
			if !haDisjoint(r.resources, set.resources) {
				found = set
				break
			}
		}
		if found == nil {
			sets = append(sets, &haPositiveSet{ids: []string{r.id}, resources: maps.Clone(r.resources)})
			continue
		}
		found.ids = append(found.ids, r.id)
		maps.Copy(found.resources, r.resources)
	}
	return sets
}

// haCheckPositiveNegative is ResourceAffinity.pm
// check_inter_resource_affinity_rules_consistency.
func haCheckPositiveNegative(pos, neg []*haCheckRule, errs haRuleErrors) {
	var cs []haConflict
	for _, set := range haDisjointPositive(pos) {
		for _, n := range neg {
			common := 0
			for sid := range n.resources {
				if set.resources[sid] {
					common++
				}
			}
			if common < 2 {
				continue
			}
			cs = append(cs, haConflict{"negative", n.id})
			for _, id := range set.ids {
				cs = append(cs, haConflict{"positive", id})
			}
		}
	}
	haBlame(cs, errs, map[string]string{
		"positive": "rule shares two or more resources with a negative resource affinity rule",
		"negative": "rule shares two or more resources with a positive resource affinity rule",
	})
}

// haCheckSinglePriority is Rules.pm
// check_single_priority_node_affinity_in_resource_affinity_rules.
func haCheckSinglePriority(ra, na []*haCheckRule, errs haRuleErrors) {
	multiple := func(r *haCheckRule) bool {
		seen := map[int]bool{}
		for _, p := range r.nodes {
			seen[p] = true
		}
		return len(seen) > 1
	}
	var cs []haConflict
	for _, r := range ra {
		conflict := false
		var paired []string
		for _, n := range na {
			if haDisjoint(r.resources, n.resources) {
				continue
			}
			conflict = conflict || multiple(n)
			paired = append(paired, n.id)
		}
		if conflict {
			cs = append(cs, haConflict{"resource-affinity", r.id})
			for _, id := range paired {
				cs = append(cs, haConflict{"node-affinity", id})
			}
		}
	}
	haBlame(cs, errs, map[string]string{
		"node-affinity":     "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities",
		"resource-affinity": "resources are in node affinity rules with multiple priorities",
	})
}

// haCheckSingleNodeAffinity is Rules.pm
// check_single_node_affinity_per_positive_resource_affinity_rule.
func haCheckSingleNodeAffinity(pos, na []*haCheckRule, errs haRuleErrors) {
	var cs []haConflict
	for _, set := range haDisjointPositive(pos) {
		var paired []string
		for _, n := range na {
			if !haDisjoint(set.resources, n.resources) {
				paired = append(paired, n.id)
			}
		}
		if len(paired) > 1 {
			for _, id := range set.ids {
				cs = append(cs, haConflict{"positive", id})
			}
			for _, id := range paired {
				cs = append(cs, haConflict{"node-affinity", id})
			}
		}
	}
	haBlame(cs, errs, map[string]string{
		"positive":      "resources are in multiple node affinity rules",
		"node-affinity": "at least one resource is in a positive resource affinity rule and there are other resources in at least one other node affinity rule already",
	})
}

// haCheckNegativeNodes is Rules.pm
// check_negative_resource_affinity_node_affinity_consistency.
func haCheckNegativeNodes(neg, na []*haCheckRule, errs haRuleErrors) {
	var cs []haConflict
	for _, r := range neg {
		located, allowed := map[string]bool{}, map[string]bool{}
		var paired []string
		for _, n := range na {
			common := false
			for sid := range r.resources {
				if n.resources[sid] {
					located[sid], common = true, true
				}
			}
			if !common {
				continue
			}
			for node := range n.nodes {
				allowed[node] = true
			}
			paired = append(paired, n.id)
		}
		if len(allowed) < len(located) {
			cs = append(cs, haConflict{"negative", r.id})
			for _, id := range paired {
				cs = append(cs, haConflict{"node-affinity", id})
			}
		}
	}
	haBlame(cs, errs, map[string]string{
		"negative":      "two or more resources are restricted to less nodes than available to the resources",
		"node-affinity": "at least one resource is in a negative resource affinity rule and this rule would restrict these to less nodes than available to the resources",
	})
}

// haRuleInfeasible is $assert_feasibility for rule id: a PVE::Exception
// (code 400) that lock_ha_domain stringifies into its die message, so the
// caller answers a 500 whose message carries "400 Rule '…' is invalid."
// and one "option: errors" line per blamed option.
func (s *Server) haRuleInfeasible(id string) error {
	blamed := s.haFeasibility()[id]
	if len(blamed) == 0 {
		return nil
	}
	msg := fmt.Sprintf("400 Rule '%s' is invalid.", id)
	for _, opt := range slices.Sorted(maps.Keys(blamed)) {
		msg += fmt.Sprintf("\n%s: %s", opt, strings.Join(blamed[opt], ", "))
	}
	return fmt.Errorf("%s", msg)
}

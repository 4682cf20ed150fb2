package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// HA rules (PVE 9), as pve-ha-manager src/PVE/API2/HA/Rules.pm writes
// them: section options per type (Rules/NodeAffinity.pm,
// Rules/ResourceAffinity.pm options), resources that must be HA-managed,
// nodes that must exist (the local node is not checked), and the
// feasibility checks a new or changed rule must pass (Rules.pm
// check_feasibility, ha_feasibility.go); a rule that later becomes
// infeasible is kept and GET shows its errors.

// haRuleOpts are the options each rule type takes (the plugins' options).
var haRuleOpts = map[string][]string{
	"node-affinity":     {"resources", "nodes", "strict", "disable", "comment"},
	"resource-affinity": {"resources", "affinity", "disable", "comment"},
}

// haRuleRequired are the options a create must give (optional => 0).
var haRuleRequired = map[string][]string{
	"node-affinity":     {"resources", "nodes"},
	"resource-affinity": {"resources", "affinity"},
}

var haNodePriority = lazyre.New(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)(:(\d+))?$`)

// encodeHANodes is NodeAffinity.pm decode then encode: node[:priority]
// sorted by node, a priority of 0 left out.
func encodeHANodes(v string) string {
	prio := map[string]int{}
	for _, n := range splitKeys(v) {
		m := haNodePriority.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[4])
		prio[m[1]] = p
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(prio)) {
		if prio[n] != 0 {
			out = append(out, fmt.Sprintf("%s:%d", n, prio[n]))
		} else {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// encodeHAResources is Rules.pm decode then encode: a sorted set.
func encodeHAResources(v string) string {
	set := map[string]bool{}
	for _, sid := range splitKeys(v) {
		set[sid] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ",")
}

// haRuleParams is the plugin's check_config: only the type's options, the
// lists encoded as PVE keeps them.
func haRuleParams(q *request, typ string, create bool) (map[string]string, error) {
	allowed := haRuleOpts[typ]
	opts := map[string]string{}
	for _, k := range []string{"resources", "nodes", "affinity", "strict", "disable", "comment"} {
		if !q.has(k) {
			continue
		}
		if !slices.Contains(allowed, k) {
			return nil, fail(http.StatusInternalServerError, "unexpected property '%s'", k)
		}
		v := q.get(k)
		if err := haLineFeed(v); err != nil {
			return nil, err
		}
		switch k {
		case "resources":
			v = encodeHAResources(v)
		case "nodes":
			v = encodeHANodes(v)
		case "strict", "disable":
			v = haBool(v)
		}
		opts[k] = v
	}
	// create and update drop a false disable (Rules.pm).
	if opts["disable"] == "0" {
		delete(opts, "disable")
	}
	if create {
		for _, k := range haRuleRequired[typ] {
			if _, ok := opts[k]; !ok {
				return nil, fail(http.StatusInternalServerError, "missing value for required option '%s'", k)
			}
		}
	}
	return opts, nil
}

// checkHARuleRefs is $assert_valid_resources_param and
// $assert_valid_nodes_param.
func (s *Server) checkHARuleRefs(opts map[string]string) error {
	if v, ok := opts["resources"]; ok {
		sids := splitKeys(v)
		if len(sids) == 0 {
			return fmt.Errorf("no resources were specified")
		}
		var unmanaged []string
		for _, sid := range sids {
			if _, ok := s.ha().Resources[sid]; !ok {
				unmanaged = append(unmanaged, sid)
			}
		}
		if len(unmanaged) > 0 {
			return fmt.Errorf("cannot use unmanaged resource(s) %s.", strings.Join(unmanaged, ", "))
		}
	}
	if v, ok := opts["nodes"]; ok {
		nodes := splitKeys(v)
		if len(nodes) == 0 {
			return fmt.Errorf("no nodes were specified")
		}
		var missing []string
		for _, n := range nodes {
			name, _, _ := strings.Cut(n, ":")
			if !s.st.hasNode(name) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("cannot use non-existent node(s) %s.", strings.Join(missing, ", "))
		}
	}
	return nil
}

func (s *Server) haRuleAnswer(id string, errs haRuleErrors) map[string]any {
	h := s.ha()
	out := typedSection(h.Rules[id], haNumeric...)
	out["rule"], out["digest"], out["order"] = id, sectionDigest(h.Rules), h.Order[id]
	// $get_api_ha_rule: the errors check_feasibility blames the rule for,
	// by option, each a list of messages (only $assert_feasibility joins
	// them).
	if blamed := errs[id]; len(blamed) > 0 {
		out["errors"] = blamed
	}
	return out
}

func (s *Server) listHARules(q *request) (any, error) {
	h := s.ha()
	ids := slices.SortedFunc(maps.Keys(h.Rules), func(a, b string) int { return h.Order[a] - h.Order[b] })
	out := []map[string]any{}
	errs := s.haFeasibility()
	for _, id := range ids {
		rule := h.Rules[id]
		if t := q.get("type"); t != "" && rule["type"] != t {
			continue
		}
		if res := q.get("resource"); res != "" && !slices.Contains(splitKeys(rule["resources"]), res) {
			continue
		}
		out = append(out, s.haRuleAnswer(id, errs))
	}
	return out, nil
}

func (s *Server) getHARule(q *request) (any, error) {
	id := q.vars["rule"]
	if _, ok := s.ha().Rules[id]; !ok {
		return nil, fail(http.StatusInternalServerError, "no such ha rule '%s'", id)
	}
	return s.haRuleAnswer(id, s.haFeasibility()), nil
}

func (s *Server) createHARule(q *request) (any, error) {
	const failed = "create ha rule failed: "
	typ, id := q.get("type"), q.get("rule")
	opts, err := haRuleParams(q, typ, true)
	if err != nil {
		return nil, err
	}
	h := s.ha()
	if _, dup := h.Rules[id]; dup {
		return nil, fail(http.StatusInternalServerError, failed+"HA rule '%s' already defined", id)
	}
	if err := s.checkHARuleRefs(opts); err != nil {
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	opts["type"] = typ
	h.Rules[id] = opts
	if err := s.haRuleInfeasible(id); err != nil {
		delete(h.Rules, id)
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	h.Order[id] = haNextOrdinal(h.Order)
	h.renumberRules(id)
	return nil, s.saveLocked()
}

// haNextOrdinal is Rules.pm get_next_ordinal as written: the lowest
// ordinal plus one (not the highest), 1 for the first rule.
func haNextOrdinal(order map[string]int) int {
	if len(order) == 0 {
		return 1
	}
	return slices.Min(slices.Collect(maps.Values(order))) + 1
}

// renumberRules is write_config then parse_config: sections are written
// by ordinal and read back numbered 1, 2, … by position. A new rule ties
// with the one at its ordinal; Perl sorts the tie in hash order, which
// the simulator fixes as the older rule first.
func (h *haConfig) renumberRules(newID string) {
	for id := range h.Order {
		if _, ok := h.Rules[id]; !ok {
			delete(h.Order, id)
		}
	}
	ids := slices.SortedFunc(maps.Keys(h.Order), func(a, b string) int {
		if d := h.Order[a] - h.Order[b]; d != 0 {
			return d
		}
		if a == newID || b == newID {
			return map[bool]int{true: 1, false: -1}[a == newID]
		}
		return strings.Compare(a, b)
	})
	for i, id := range ids {
		h.Order[id] = i + 1
	}
}

func (s *Server) updateHARule(q *request) (any, error) {
	const failed = "update HA rules failed: "
	id := q.vars["rule"]
	h := s.ha()
	if d := q.get("digest"); d != "" && d != sectionDigest(h.Rules) {
		return nil, fail(http.StatusInternalServerError, failed+"detected modified configuration - file changed by other user? Try again.")
	}
	rule, ok := h.Rules[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, failed+"HA rule '%s' does not exist", id)
	}
	typ := rule["type"]
	// check_config($ruleid, $param, 0, 1) gets the type parameter too:
	// SectionConfig.pm check_value passes it only if it is the rule's.
	if t := q.get("type"); t != "" && t != typ {
		return nil, fail(http.StatusInternalServerError, failed+"unexpected property 'type'")
	}
	opts, err := haRuleParams(q, typ, false)
	if err != nil {
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	if err := s.checkHARuleRefs(opts); err != nil {
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	old := maps.Clone(rule)
	for _, k := range splitKeys(q.get("delete")) {
		// SectionConfig.pm delete_from_config
		if !slices.Contains(haRuleOpts[typ], k) {
			h.Rules[id] = old
			return nil, fail(http.StatusInternalServerError, failed+"no such option '%s'", k)
		}
		if slices.Contains(haRuleRequired[typ], k) {
			h.Rules[id] = old
			return nil, fail(http.StatusInternalServerError, failed+"unable to delete required option '%s'", k)
		}
		if _, set := opts[k]; set {
			h.Rules[id] = old
			return nil, fail(http.StatusInternalServerError, failed+"cannot set and delete property '%s' at the same time!", k)
		}
		delete(rule, k)
	}
	maps.Copy(rule, opts)
	if err := s.haRuleInfeasible(id); err != nil {
		h.Rules[id] = old
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	return nil, s.saveLocked()
}

// deleteHARule: PVE deletes without looking (a missing rule is no error).
func (s *Server) deleteHARule(q *request) (any, error) {
	id := q.vars["rule"]
	h := s.ha()
	delete(h.Rules, id)
	h.renumberRules("")
	return nil, s.saveLocked()
}

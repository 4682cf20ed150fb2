package pvesim

import (
	"net/http"
	"strconv"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Rule lists of any scope (pve-firewall src/PVE/API2/Firewall/Rules.pm,
// RulesBase): GET lists with pos and the list's digest; POST verifies the
// rule and puts it FIRST whatever pos says (unshift), disabled unless
// enable is given, and checks no digest; PUT {pos} with moveto moves (the
// other parameters ignored), else updates and re-verifies; DELETE
// removes. PUT and DELETE check the digest.

// fwRuleRoutes are the list and item routes of a scope's rules.
func (s *Server) fwRuleRoutes(base, item string, scope func(*request) fwScope) []route {
	return crudRoutes(base, item,
		s.fwRulesGet(scope), s.fwRuleCreate(scope), s.fwRuleGet(scope), s.fwRuleUpdate(scope), s.fwRuleDelete(scope))
}

// fwRuleFields are the rule parameters copy_rule_data copies.
var fwRuleFields = []string{"type", "action", "macro", "iface", "source", "dest", "proto",
	"enable", "log", "sport", "dport", "comment", "icmp-type"}

// fwScopeRules loads a scope and its rule list; a group that does not
// exist is GroupRules load_config's die.
func (s *Server) fwScopeRules(sc fwScope) (cluster, conf *fwConf, rules []*fwRule, err error) {
	cluster, conf = s.fwLoadScope(sc)
	if sc.env != "group" {
		return cluster, conf, conf.Rules, nil
	}
	rules, ok := conf.Groups[sc.group]
	if !ok {
		return nil, nil, nil, fail(http.StatusInternalServerError, "no such security group '%s'", sc.group)
	}
	return cluster, conf, rules, nil
}

// setRules puts a scope's rule list back.
func setRules(sc fwScope, conf *fwConf, rules []*fwRule) {
	if sc.env == "group" {
		conf.Groups[sc.group] = rules
		return
	}
	conf.Rules = rules
}

func (s *Server) fwRulesGet(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		_, _, rules, err := s.fwScopeRules(scope(q))
		if err != nil {
			return nil, err
		}
		out, _ := rulesAnswer(rules)
		return out, nil
	}
}

func (s *Server) fwRuleGet(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		_, _, rules, err := s.fwScopeRules(scope(q))
		if err != nil {
			return nil, err
		}
		pos, err := rulePos(q, rules)
		if err != nil {
			return nil, err
		}
		out, _ := rulesAnswer(rules)
		return out[pos], nil
	}
}

// copyRuleData is copy_rule_data: each given field set, "" or "-"
// removing it.
func copyRuleData(r *fwRule, q *request) {
	for _, k := range fwRuleFields {
		if !q.has(k) {
			continue
		}
		v := q.get(k)
		if v == "-" {
			v = ""
		}
		r.set(k, v)
	}
}

// set writes one field ("" removes it).
func (r *fwRule) set(k, v string) {
	switch k {
	case "enable":
		if v == "" {
			r.Enable = nil
			return
		}
		n, _ := strconv.Atoi(v)
		r.Enable = &n
	default:
		if p, _ := r.field(k); p != nil {
			*p = v
		}
	}
}

// fwCheckFormats is the parameter verification of the pve-fw-* formats,
// which the schema facts leave to PVE's registered checks.
func fwCheckFormats(q *request) error {
	if errs := fwFormatErrors(q); len(errs) > 0 {
		return paramErr(errs)
	}
	return nil
}

func (s *Server) fwRuleCreate(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCheckFormats(q); err != nil {
			return nil, err
		}
		sc := scope(q)
		cluster, conf, rules, err := s.fwScopeRules(sc)
		if err != nil {
			return nil, err
		}
		r := &fwRule{}
		copyRuleData(r, q)
		vc, vf := fwVerifyConfs(sc, cluster, conf)
		if err := verifyFWRule(r, vc, vf, sc.env, false); err != nil {
			return nil, err
		}
		if !q.has("enable") {
			zero := 0
			r.Enable = &zero
		}
		setRules(sc, conf, append([]*fwRule{r}, rules...))
		return nil, s.fwSave(sc, conf)
	}
}

// rulePos is a rule call's {pos}, which must name a rule of the list.
func rulePos(q *request, rules []*fwRule) (int, error) {
	pos, _ := strconv.Atoi(q.vars["pos"])
	if pos >= len(rules) {
		return 0, fail(http.StatusInternalServerError, "no rule at position %d", pos)
	}
	return pos, nil
}

// fwRuleAt loads the scope's rules for a change of the one at {pos}: the
// call's digest must be the list's, pos must name a rule.
func (s *Server) fwRuleAt(q *request, sc fwScope) (cluster, conf *fwConf, rules []*fwRule, pos int, err error) {
	cluster, conf, rules, err = s.fwScopeRules(sc)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	_, digest := rulesAnswer(rules)
	if err := assertIfModified(q, digest); err != nil {
		return nil, nil, nil, 0, err
	}
	pos, err = rulePos(q, rules)
	return cluster, conf, rules, pos, err
}

func (s *Server) fwRuleUpdate(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		if err := fwCheckFormats(q); err != nil {
			return nil, err
		}
		sc := scope(q)
		cluster, conf, rules, pos, err := s.fwRuleAt(q, sc)
		if err != nil {
			return nil, err
		}
		if q.has("moveto") && q.int("moveto", pos) != pos {
			setRules(sc, conf, moveRule(rules, pos, q.int("moveto", pos)))
			return nil, s.fwSave(sc, conf)
		}
		r := rules[pos]
		copyRuleData(r, q)
		if err := deleteRuleProps(r, q.get("delete")); err != nil {
			return nil, err
		}
		vc, vf := fwVerifyConfs(sc, cluster, conf)
		if err := verifyFWRule(r, vc, vf, sc.env, false); err != nil {
			return nil, err
		}
		return nil, s.fwSave(sc, conf)
	}
}

// moveRule is update_rule's move: the rule leaves pos and goes before
// the rule now at moveto (counted in the list before the move), or last
// when moveto is past the end. Moving down thus lands one above moveto.
func moveRule(rules []*fwRule, pos, moveto int) []*fwRule {
	rule := rules[pos]
	var out []*fwRule
	for i, r := range rules {
		if i == pos {
			continue
		}
		if i == moveto {
			out = append(out, rule)
		}
		out = append(out, r)
	}
	if moveto >= len(rules) {
		out = append(out, rule)
	}
	return out
}

// deleteRuleProps is delete_rule_properties.
func deleteRuleProps(r *fwRule, list string) error {
	for _, k := range schema.SplitList(list) {
		known := k == "pos" || k == "digest"
		for _, f := range fwRuleFields {
			known = known || f == k
		}
		switch {
		case !known:
			return paramErr1("delete", "no such property ('%s')", k)
		case k == "type" || k == "action":
			return paramErr1("delete", "unable to delete required property '%s'", k)
		}
		r.set(k, "")
	}
	return nil
}

func (s *Server) fwRuleDelete(scope func(*request) fwScope) handler {
	return func(q *request) (any, error) {
		sc := scope(q)
		_, conf, rules, pos, err := s.fwRuleAt(q, sc)
		if err != nil {
			return nil, err
		}
		setRules(sc, conf, append(rules[:pos:pos], rules[pos+1:]...))
		return nil, s.fwSave(sc, conf)
	}
}

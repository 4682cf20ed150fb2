package planner

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A rule list of a firewall scope or security group, as read and as
// written (pve-firewall API2/Firewall/Rules.pm). Firewall and
// SecurityGroup share it.

// fwRules is a rule list as PVE answered it: each rule's keys (pos,
// digest and the derived ipversion left out) and the list's digest.
type fwRules struct {
	Rules  []map[string]string `json:"rules"`
	Digest string              `json:"digest,omitempty"`
}

// readRules reads GET <path> (a rules list).
func readRules(ctx context.Context, cl *pve.Client, path string) (fwRules, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, path, nil, &rows); err != nil {
		return fwRules{}, fmt.Errorf("read firewall rules %s: %w", path, err)
	}
	out := fwRules{Rules: []map[string]string{}}
	for _, row := range rows {
		rule := map[string]string{}
		for _, k := range spec.RuleParams() {
			if v := row.Get(k); v != "" {
				rule[k] = v
			}
		}
		out.Rules = append(out.Rules, rule)
		out.Digest = row.Get("digest")
	}
	return out, nil
}

// ruleText is a rule's canonical form: equal text, equal rule. enable
// defaults to 1 and log to nolog, as the spec's and PVE's do.
func ruleText(rule map[string]string) string {
	var parts []string
	for _, k := range spec.RuleParams() {
		v := rule[k]
		switch {
		case k == "enable" && v == "":
			v = "1"
		case k == "log" && v == "nolog":
			v = ""
		}
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func ruleTexts(rules []map[string]string) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = ruleText(r)
	}
	return out
}

// ruleLine is a rule as the plan shows it: "in ACCEPT tcp 22 from
// +admins", "group webservers", "in SSH(ACCEPT)".
func ruleLine(rule map[string]string) string {
	action := rule["action"]
	if m := rule["macro"]; m != "" {
		action = m + "(" + action + ")"
	}
	parts := []string{rule["type"], action}
	add := func(prefix, k string) {
		if v := rule[k]; v != "" {
			parts = append(parts, prefix+v)
		}
	}
	add("", "proto")
	add("", "dport")
	add("sport ", "sport")
	add("from ", "source")
	add("to ", "dest")
	add("iface ", "iface")
	add("icmp-type ", "icmp-type")
	if l := rule["log"]; l != "" && l != "nolog" {
		parts = append(parts, "log "+l)
	}
	if rule["enable"] == "0" {
		parts = append(parts, "(disabled)")
	}
	if c := rule["comment"]; c != "" {
		parts = append(parts, "# "+c)
	}
	return strings.Join(parts, " ")
}

// ruleDiffs are a rule list's changes as list items: new rules, edited
// ones, moved ones (only those the plan moves), and removed ones.
func ruleDiffs(path string, live, want []map[string]string) []engine.FieldDiff {
	ops, src := planRuleOrder(ruleTexts(live), ruleTexts(want))
	moved := map[int]bool{}
	for _, op := range ops {
		if op.Kind == ruleMove {
			moved[op.Want] = true
		}
	}
	var out []engine.FieldDiff
	for j, s := range src {
		at := fmt.Sprintf("%s[%d]", path, j)
		switch {
		case s.live < 0:
			out = append(out, engine.FieldDiff{Path: at, After: ruleLine(want[j]), Line: fmt.Sprintf("[%d] %s", j, ruleLine(want[j]))})
		case s.changed:
			line := fmt.Sprintf("[%d] %s → %s", j, ruleLine(live[s.live]), ruleLine(want[j]))
			if s.live != j {
				line += fmt.Sprintf(" (from %d)", s.live)
			}
			out = append(out, engine.FieldDiff{Path: at, Before: ruleLine(live[s.live]), After: ruleLine(want[j]), Line: line})
		case moved[j]:
			out = append(out, engine.FieldDiff{Path: at, Before: fmt.Sprintf("[%d] %s", s.live, ruleLine(want[j])), After: fmt.Sprintf("[%d] %s", j, ruleLine(want[j])),
				Line: fmt.Sprintf("[%d] moved from %d: %s", j, s.live, ruleLine(want[j]))})
		}
	}
	kept := map[int]bool{}
	for _, s := range src {
		kept[s.live] = true
	}
	for i, r := range live {
		if !kept[i] {
			out = append(out, engine.FieldDiff{Path: fmt.Sprintf("%s[%d]", path, i), Before: ruleLine(r), Line: fmt.Sprintf("[%d] %s", i, ruleLine(r))})
		}
	}
	return out
}

// ruleParamsOf are a rule's keys as a write sends them.
func ruleParamsOf(rule map[string]string) url.Values {
	v := url.Values{}
	for _, k := range spec.RuleParams() {
		if x := rule[k]; x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// applyRules turns the rule list at path (…/rules, or a group's path)
// from planned into want with the writes planRuleOrder gives. Before
// each write it reads the list again: the first read must show the
// digest the plan saw (a hand edit since is refused, not overwritten —
// PVE's POST does not check a digest itself), each later one the list
// the writes so far made; every write sends the digest just read.
func applyRules(ctx context.Context, x *engine.Execution, path string, planned fwRules, want []map[string]string) error {
	cur := ruleTexts(planned.Rules)
	wantTexts := ruleTexts(want)
	ops, _ := planRuleOrder(cur, wantTexts)
	for i, op := range ops {
		if op.Kind == ruleEdit && op.Enable && want[op.Want]["enable"] == "0" {
			continue // inserted disabled, as the spec has it
		}
		now, err := readRules(ctx, x.Client, path)
		if err != nil {
			return err
		}
		switch {
		case i == 0 && planned.Digest != "" && now.Digest != planned.Digest:
			return fmt.Errorf("firewall rules %s changed since the plan was made (digest %s, planned %s): plan again", path, now.Digest, planned.Digest)
		case !slices.Equal(ruleTexts(now.Rules), cur):
			return fmt.Errorf("firewall rules %s changed by someone else during the apply (after %d of %d writes): plan again", path, i, len(ops))
		}
		text, err := writeRuleOp(ctx, x, path, op, now, want, cur)
		if err != nil {
			return err
		}
		cur = applyRuleOp(cur, op, text)
	}
	return nil
}

// writeRuleOp sends one write and returns the rule's text after it.
// An unsure answer is read back against cur, the list's texts before it
// (firewall_unsure.go).
func writeRuleOp(ctx context.Context, x *engine.Execution, path string, op ruleOp, now fwRules, want []map[string]string, cur []string) (string, error) {
	pos := path + "/" + strconv.Itoa(op.Pos)
	var params url.Values
	var method, target, what string
	text := ""
	switch op.Kind {
	case ruleInsert:
		rule := withEnable(want[op.Want], "0")
		params, method, target, what = ruleParamsOf(rule), http.MethodPost, path, "create rule (disabled, at the top)"
		text = ruleText(rule)
	case ruleMove:
		params, method, target, what = url.Values{"moveto": {strconv.Itoa(op.MoveTo)}}, http.MethodPut, pos, fmt.Sprintf("move rule %d (moveto %d)", op.Pos, op.MoveTo)
	case ruleEdit:
		rule := want[op.Want]
		params, method, target, what = ruleParamsOf(rule), http.MethodPut, pos, fmt.Sprintf("change rule %d", op.Pos)
		if op.Enable {
			params, what = url.Values{"enable": {"1"}}, fmt.Sprintf("enable new rule %d", op.Pos)
		} else if del := removedRuleKeys(now.Rules[op.Pos], rule); del != "" {
			params.Set("delete", del)
		}
		text = ruleText(rule)
	case ruleDelete:
		params, method, target, what = url.Values{}, http.MethodDelete, pos, fmt.Sprintf("delete rule %d", op.Pos)
	}
	if now.Digest != "" {
		params.Set("digest", now.Digest)
	}
	send := func() error { return x.Client.Do(ctx, method, target, params, nil) }
	look := lookRules(x, path, cur, applyRuleOp(cur, op, text))
	if err := unsureStep(ctx, x, op.Kind != ruleInsert, send, look); err != nil {
		return "", fmt.Errorf("%s of %s: %w", what, path, err)
	}
	x.Msg("%s", what)
	return text, nil
}

func withEnable(rule map[string]string, v string) map[string]string {
	out := map[string]string{"enable": v}
	for k, x := range rule {
		if k != "enable" {
			out[k] = x
		}
	}
	return out
}

// removedRuleKeys are the keys a live rule has that the wanted one does
// not (PUT … delete=): type and action are always set.
func removedRuleKeys(live, want map[string]string) string {
	var out []string
	for _, k := range spec.RuleParams() {
		if live[k] != "" && want[k] == "" && k != "type" && k != "action" {
			out = append(out, k)
		}
	}
	return strings.Join(out, ",")
}

package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

const fwLateSpec = `kind: SecurityGroup
name: web
spec:
  rules:
    - {type: in, action: ACCEPT, macro: HTTPS, source: +admins}
    - {type: in, action: ACCEPT, proto: tcp, dport: 8080, source: office}
---
kind: Firewall
name: dc
spec:
  scope: cluster
  aliases:
    office: 192.0.2.0/24
  ipsets:
    admins: [127.0.0.1]
  rules:
    - {type: group, action: web}
    - {type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins}
`

// A SecurityGroup whose rules use the cluster's IP set and alias, named
// by a group rule of the cluster's Firewall, in one apply: the sets are
// written first, then the group, then the firewall's rules; the next plan
// is clean, and destroy removes both.
func TestSimFirewallSetsBeforeGroupRules(t *testing.T) {
	sim := newSim(t)
	set := loadSpec(t, fwLateSpec)
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"update Firewall/dc", "create SecurityGroup/web <- Firewall/dc"})
	// Through a plan file, as `plan --out` and `apply FILE` do.
	_, p = marshalled(t, p)
	h := &recHooks{}
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: h}); err != nil {
		t.Fatalf("apply: %v\n%s", err, strings.Join(h.messages, "\n"))
	}
	wantConverged(t, t.Errorf, sim, set, "next plan")
	rules, err := readRules(context.Background(), sim.cl, "/cluster/firewall/rules")
	if err != nil || len(rules.Rules) != 2 || rules.Rules[0]["action"] != "web" {
		t.Errorf("cluster rules: %v (%v), want the group rule first of two", rules.Rules, err)
	}
	d := planFor(t, sim, set, engine.Options{Destroy: true})
	if _, err := engine.Apply(context.Background(), sim, d, engine.ApplyOptions{Hooks: &recHooks{}}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if p := planFor(t, sim, set, engine.Options{}); countAction(p, engine.Create) != 1 {
		t.Errorf("after destroy: %v, want the group to create again", summary(p))
	}
}

// When the group fails, the firewall's rules, which name it, are not
// written, and the apply says so.
func TestSimFirewallGroupFailsRulesHeld(t *testing.T) {
	sim := newSim(t)
	bad := strings.Replace(fwLateSpec, "dport: 8080", "dport: 8080, dest: +missing", 1)
	h := &recHooks{}
	_, err := engine.Apply(context.Background(), sim, planFor(t, sim, loadSpec(t, bad), engine.Options{}), engine.ApplyOptions{Hooks: h})
	if err == nil {
		t.Fatal("apply: no error, want the group refused")
	}
	if !strings.Contains(strings.Join(h.messages, "\n"), "left its rules and options unwritten") {
		t.Errorf("messages:\n%s\nwant the firewall's held rules named", strings.Join(h.messages, "\n"))
	}
	rules, _ := readRules(context.Background(), sim.cl, "/cluster/firewall/rules")
	if len(rules.Rules) != 0 {
		t.Errorf("cluster rules: %v, want none written", rules.Rules)
	}
}

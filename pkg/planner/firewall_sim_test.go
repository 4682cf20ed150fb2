package planner

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
)

const fwSpec = `kind: SecurityGroup
name: web
spec:
  comment: web servers
  rules:
    - {type: in, action: ACCEPT, macro: HTTPS}
    - {type: in, action: ACCEPT, proto: tcp, dport: 8080}
---
kind: Firewall
name: dc
spec:
  scope: cluster
  options: {enable: 1, policy_in: DROP}
  aliases:
    office: {cidr: 192.0.2.0/24, comment: the office}
  ipsets:
    admins: [127.0.0.1, 198.51.100.7]
  rules:
    - {type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins}
    - {type: in, action: ACCEPT, proto: tcp, dport: 8006, source: +admins}
    - {type: group, action: web}
`

// TestSimFirewallLifecycle: a cluster Firewall and a SecurityGroup are
// applied as written, the next plan is clean; swapping two rules plans
// one move (no delete, no create) and ends in the spec's order; a hand
// edit after the plan makes the apply refuse; destroy empties both.
func TestSimFirewallLifecycle(t *testing.T) {
	sim, calls := newCountingSim(t)
	set := loadSpec(t, fwSpec)
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"create SecurityGroup/web", "update Firewall/dc <- SecurityGroup/web"})
	applyPlan(t, sim, p)
	rules, err := readRules(context.Background(), sim.cl, "/cluster/firewall/rules")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"type=in action=ACCEPT source=+admins proto=tcp dport=22 enable=1",
		"type=in action=ACCEPT source=+admins proto=tcp dport=8006 enable=1",
		"type=group action=web enable=1",
	}
	if diff := cmp.Diff(want, ruleTexts(rules.Rules)); diff != "" {
		t.Fatalf("cluster rules (-want +got):\n%s", diff)
	}
	if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
		t.Fatalf("plan after apply: %q %+v", summary(p), p.Changes)
	}

	// Swap the first two rules: one move.
	swapped := strings.Replace(fwSpec, "    - {type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins}\n    - {type: in, action: ACCEPT, proto: tcp, dport: 8006, source: +admins}\n",
		"    - {type: in, action: ACCEPT, proto: tcp, dport: 8006, source: +admins}\n    - {type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins}\n", 1)
	set = loadSpec(t, swapped)
	p = planFor(t, sim, set, engine.Options{})
	c := p.Change("Firewall/dc")
	if c == nil || c.Action != engine.Update || len(c.Diff) != 1 || !strings.Contains(c.Diff[0].Line, "moved from") {
		t.Fatalf("swap plan: %+v", c)
	}
	calls.reset()
	applyPlan(t, sim, p)
	got := calls.reset()
	for k, n := range got {
		if strings.HasPrefix(k, "DELETE") || strings.HasPrefix(k, "POST") {
			t.Errorf("swap sent %d %s", n, k)
		}
	}
	puts := 0
	for k, n := range got {
		if strings.HasPrefix(k, "PUT /cluster/firewall/rules/") {
			puts += n
		}
	}
	if n := puts; n != 1 {
		t.Errorf("swap sent %d rule PUTs, want 1 move: %v", n, got)
	}
	rules, _ = readRules(context.Background(), sim.cl, "/cluster/firewall/rules")
	if diff := cmp.Diff([]string{want[1], want[0], want[2]}, ruleTexts(rules.Rules)); diff != "" {
		t.Fatalf("rules after the swap (-want +got):\n%s", diff)
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after the swap")

	// A hand edit between plan and apply is refused, not overwritten.
	set = loadSpec(t, fwSpec)
	p = planFor(t, sim, set, engine.Options{})
	if err := sim.cl.Do(context.Background(), http.MethodPut, "/cluster/firewall/rules/2", map[string][]string{"comment": {"by hand"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: &recHooks{}}); err == nil || !strings.Contains(err.Error(), "changed since the plan was made") {
		t.Fatalf("apply after a hand edit: %v, want a refusal naming the change", err)
	}

	// Destroy empties the scope and removes the group.
	set = loadSpec(t, fwSpec)
	p = planFor(t, sim, set, engine.Options{Destroy: true})
	applyPlan(t, sim, p)
	rules, _ = readRules(context.Background(), sim.cl, "/cluster/firewall/rules")
	if len(rules.Rules) != 0 {
		t.Errorf("rules after destroy: %v", rules.Rules)
	}
	if lo, _ := readGroup(context.Background(), sim.cl, "web"); lo.Exists {
		t.Error("security group web still exists after destroy")
	}
}

// TestSimFirewallLockout: enabling the cluster firewall with a DROP
// policy and no rule for the address pvectl connects from (127.0.0.1)
// warns in the plan and is refused at apply unless allowed; the
// management IP set counts.
func TestSimFirewallLockout(t *testing.T) {
	sim := newSim(t)
	spec := strings.Replace(fwSpec, "[127.0.0.1, 198.51.100.7]", "[198.51.100.7]", 1)
	p := planFor(t, sim, loadSpec(t, spec), engine.Options{})
	c := p.Change("Firewall/dc")
	if c == nil || !strings.Contains(strings.Join(c.Reasons, "\n"), "lockout: the firewall is enabled with inbound policy DROP and no rule accepts tcp port 8006 and 22 from 127.0.0.1") {
		t.Fatalf("plan reasons: %+v", c)
	}
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: &recHooks{}}); err == nil || !strings.Contains(err.Error(), "may lock pvectl out") {
		t.Fatalf("apply: %v, want the lockout refusal", err)
	}
	if rules, _ := readRules(context.Background(), sim.cl, "/cluster/firewall/rules"); len(rules.Rules) != 0 {
		t.Fatalf("the refused apply wrote rules: %v", rules.Rules)
	}
	withMgmt := strings.Replace(spec, "    admins: [198.51.100.7]", "    admins: [198.51.100.7]\n    management: [127.0.0.0/8]", 1)
	if c := planFor(t, sim, loadSpec(t, withMgmt), engine.Options{}).Change("Firewall/dc"); strings.Contains(strings.Join(c.Reasons, "\n"), "lockout") {
		t.Fatalf("management set holds the client, still warned: %v", c.Reasons)
	}
	if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: &recHooks{}, AllowLockout: true}); err != nil {
		t.Fatalf("apply with AllowLockout: %v", err)
	}
}

// TestSimFirewallImport: import writes the cluster's firewall and its
// security groups as documents that plan clean, reading the groups' list
// once.
func TestSimFirewallImport(t *testing.T) {
	sim, calls := newCountingSim(t)
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, fwSpec), engine.Options{}))
	calls.reset()
	res, err := engine.Import(context.Background(), sim, engine.ImportOptions{Refs: []string{"Firewall/cluster", "SecurityGroup/web"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.reset()["GET "+fwGroupsPath]; n != 1 {
		t.Errorf("import read the security groups' list %d times, want once", n)
	}
	if len(res.Rejected) > 0 || len(res.Docs) != 2 {
		t.Fatalf("docs %d, rejected %+v", len(res.Docs), res.Rejected)
	}
	var b strings.Builder
	if err := res.Encode(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: Firewall", "scope: cluster", "policy_in: DROP", "- 198.51.100.7", "action: web", "kind: SecurityGroup", "macro: HTTPS"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("imported YAML lacks %q:\n%s", want, b.String())
		}
	}
	if p := planFor(t, sim, loadSpec(t, b.String()), engine.Options{}); p.HasChanges() {
		t.Fatalf("imported documents do not plan clean: %q\n%s", summary(p), b.String())
	}
}

package main

import (
	"strings"
	"testing"
)

// Issue 20 acceptance for the firewall: examples/05-firewall.yaml (a
// cluster Firewall with options, an IP set, an alias and rules, one of
// them type group, and a SecurityGroup) applies; the next plan is clean;
// swapping two rules plans a move, the apply creates and deletes no rule
// and leaves the spec's order; destroy empties the firewall.
func TestE2EFirewall(t *testing.T) {
	e := startSim(t)
	spec := example(t, "05-firewall.yaml", nil)
	e.mustRun(0, "apply", "-f", spec, "--auto-approve")
	e.mustRun(0, "plan", "-f", spec, "--detailed-exitcode")
	var rules []map[string]any
	if err := e.client.Do(t.Context(), "GET", "/cluster/firewall/rules", nil, &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules) != 4 || rules[0]["dport"] != "22" || rules[3]["action"] != "webservers" || rules[3]["type"] != "group" {
		t.Fatalf("cluster rules as PVE has them: %v", rules)
	}

	ssh := "    - {type: in, action: ACCEPT, proto: tcp, dport: 22, source: +admins, comment: SSH}\n"
	api := "    - {type: in, action: ACCEPT, proto: tcp, dport: 8006, source: +admins, comment: PVE API}\n"
	swapped := example(t, "05-firewall.yaml", func(s string) string { return strings.Replace(s, ssh+api, api+ssh, 1) })
	r := e.mustRun(2, "plan", "-f", swapped, "--detailed-exitcode")
	if !strings.Contains(r.stdout, "moved from") || strings.Contains(r.stdout, "\n      - [") || strings.Contains(r.stdout, "\n      + [") {
		t.Fatalf("swap plan shows no single move:\n%s", r.stdout)
	}
	e.requests.Reset()
	e.mustRun(0, "apply", "-f", swapped, "--auto-approve")
	for k, n := range e.requests.Reset() {
		if strings.Contains(k, "/firewall/rules") && (strings.HasPrefix(k, "DELETE") || strings.HasPrefix(k, "POST")) {
			t.Errorf("the swap sent %d× %s", n, k)
		}
	}
	if err := e.client.Do(t.Context(), "GET", "/cluster/firewall/rules", nil, &rules); err != nil {
		t.Fatal(err)
	}
	if rules[0]["dport"] != "8006" || rules[1]["dport"] != "22" {
		t.Fatalf("order after the swap: %v", rules)
	}
	e.mustRun(0, "plan", "-f", swapped, "--detailed-exitcode")

	e.mustRun(0, "destroy", "-f", swapped, "--auto-approve")
	if err := e.client.Do(t.Context(), "GET", "/cluster/firewall/rules", nil, &rules); err != nil {
		t.Fatal(err)
	}
	var groups []map[string]any
	if err := e.client.Do(t.Context(), "GET", "/cluster/firewall/groups", nil, &groups); err != nil {
		t.Fatal(err)
	}
	if len(rules) != 0 || len(groups) != 0 {
		t.Fatalf("after destroy: rules %v, groups %v", rules, groups)
	}
}

// The lockout guard: enabling the cluster firewall with a DROP policy
// and no rule for the address pvectl connects from warns in the plan and
// is refused at apply, changing nothing, unless --allow-lockout.
func TestE2EFirewallLockout(t *testing.T) {
	e := startSim(t)
	spec := example(t, "05-firewall.yaml", func(s string) string {
		return strings.Replace(s, "[127.0.0.1, 198.51.100.7]", "[198.51.100.7]", 1)
	})
	r := e.mustRun(2, "plan", "-f", spec, "--detailed-exitcode")
	if !strings.Contains(r.stdout, "lockout: the firewall is enabled with inbound policy DROP") {
		t.Fatalf("plan does not warn:\n%s", r.stdout)
	}
	r = e.mustRun(1, "apply", "-f", spec, "--auto-approve")
	if !strings.Contains(r.stderr, "may lock pvectl out") || !strings.Contains(r.stderr, "--allow-lockout") {
		t.Fatalf("apply refusal:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	var rules []map[string]any
	if err := e.client.Do(t.Context(), "GET", "/cluster/firewall/rules", nil, &rules); err != nil || len(rules) != 0 {
		t.Fatalf("the refused apply wrote rules: %v %v", rules, err)
	}
	e.mustRun(0, "apply", "-f", spec, "--auto-approve", "--allow-lockout")
}

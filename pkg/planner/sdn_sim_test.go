package planner

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

const sdnSpec = `kind: SdnZone
name: lan
spec: {type: vlan, bridge: vmbr0}
---
kind: SdnVnet
name: web
spec: {zone: lan, tag: 10, alias: web tier}
---
kind: SdnSubnet
name: web-v4
spec: {vnet: web, subnet: 10.10.0.0/24, gateway: 10.10.0.1, snat: true}
---
kind: SdnApply
name: sdn
---
kind: QemuVM
name: web1
spec:
  vmid: 130
  memory: 512
  net0: virtio,bridge=web
  running: true
`

// sdnPendingNow is the cluster's pending SDN entries.
func sdnPendingNow(sim *simClients) ([]sdnPending, error) {
	return readPending(func(path string) ([]*pve.Config, error) { return engine.ReadSDN(context.Background(), sim.cl, path) })
}

// wantPendingOnly checks that key is the one pending SDN entry; when
// names the moment.
func wantPendingOnly(t *testing.T, sim *simClients, key, when string) {
	t.Helper()
	if pend, _ := sdnPendingNow(sim); len(pend) != 1 || pend[0].Key != key {
		t.Errorf("pending after %s: %v", when, pend)
	}
}

// TestSimSdnLifecycle: one apply writes the zone, vnet and subnet as
// pending, commits them (nothing stays pending, the lock is released)
// and starts a VM on the vnet; the next plan is clean; destroy removes
// subnet, vnet and zone, then commits, leaving nothing pending.
func TestSimSdnLifecycle(t *testing.T) {
	sim := newSim(t, "pve")
	set := loadSpec(t, sdnSpec)
	p := planFor(t, sim, set, engine.Options{})
	want := []string{
		"create SdnZone/lan",
		"create SdnVnet/web <- SdnZone/lan",
		"create SdnSubnet/web-v4 <- SdnVnet/web",
		"apply SdnApply/sdn <- SdnSubnet/web-v4,SdnVnet/web,SdnZone/lan",
		"create QemuVM/web1 <- SdnApply/sdn,SdnVnet/web",
	}
	wantPlan(t, "plan", p, want)
	applyPlan(t, sim, p)
	ctx := context.Background()
	pend, err := sdnPendingNow(sim)
	if err != nil || len(pend) != 0 {
		t.Fatalf("pending after apply: %v %v", pend, err)
	}
	if r := sectionRow(t, sim.cl, "/cluster/sdn/vnets", "vnet", "web"); r == nil || r.Get("tag") != "10" || r.Get("alias") != "web tier" {
		t.Errorf("vnet: %v", r)
	}
	// The lock is free again: taking it without a token works.
	var tok string
	if err := sim.cl.Do(ctx, http.MethodPost, "/cluster/sdn/lock", nil, &tok); err != nil {
		t.Fatalf("lock after apply: %v", err)
	}
	if err := sim.cl.Do(ctx, http.MethodDelete, "/cluster/sdn/lock", url.Values{"lock-token": {tok}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, g := range guestsNow(t, sim, pve.QEMU, "pve") {
		if g.VMID == 130 && g.Status != "running" {
			t.Errorf("VM on the vnet: status %q, want running", g.Status)
		}
	}
	if got := summary(planFor(t, sim, set, engine.Options{})); !allNoop(got) {
		t.Errorf("second plan: got %v, want no changes", got)
	}

	p = planFor(t, sim, set, engine.Options{Destroy: true})
	// Reverse order: subnet, vnet (after the VM on it), zone; the commit
	// last.
	for _, e := range [][2]string{{"SdnVnet/web", "SdnSubnet/web-v4"}, {"SdnVnet/web", "QemuVM/web1"},
		{"SdnZone/lan", "SdnVnet/web"}, {"SdnApply/sdn", "SdnVnet/web"}, {"SdnApply/sdn", "SdnZone/lan"}} {
		if c := p.Change(e[0]); c == nil || !slices.Contains(c.DependsOn, e[1]) {
			t.Errorf("destroy: %s does not wait for %s: %v", e[0], e[1], summary(p))
		}
	}
	applyPlan(t, sim, p)
	pend, err = sdnPendingNow(sim)
	if err != nil || len(pend) != 0 {
		t.Fatalf("pending after destroy: %v %v", pend, err)
	}
	if rows, _ := engine.ReadSDN(ctx, sim.cl, "/cluster/sdn/zones"); len(rows) != 0 {
		t.Errorf("zones after destroy: %v", rows)
	}
}

// TestSimSdnForeignPending: a zone someone else left pending is listed
// by the plan and refused by apply without the flag; it stays pending.
func TestSimSdnForeignPending(t *testing.T) {
	sim := newSim(t, "pve")
	ctx := context.Background()
	if err := sim.cl.Do(ctx, http.MethodPost, "/cluster/sdn/zones", url.Values{"zone": {"other"}, "type": {"simple"}}, nil); err != nil {
		t.Fatal(err)
	}
	set := loadSpec(t, sdnSpec)
	p := planFor(t, sim, set, engine.Options{})
	c := p.Change("SdnApply/sdn")
	if c == nil || !strings.Contains(strings.Join(c.Reasons, "\n"), "zone other: new") {
		t.Fatalf("plan does not list the foreign zone: %+v", c)
	}
	_, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "zone other: new") || !strings.Contains(err.Error(), "--allow-foreign-sdn-changes") {
		t.Fatalf("apply: got %v, want a refusal naming the zone and the flag", err)
	}
	wantPendingOnly(t, sim, "zones/other", "the refusal")
}

// TestSimSdnLockReleasedOnFailure: a write PVE refuses (a vnet of a zone
// that does not exist) fails the apply after the zone was written under
// SDN's lock; the lock is given back all the same, and the zone stays
// pending (nothing commits it).
func TestSimSdnLockReleasedOnFailure(t *testing.T) {
	sim := newSim(t, "pve")
	set := loadSpec(t, `kind: SdnZone
name: lan
spec: {type: vlan, bridge: vmbr0}
---
kind: SdnVnet
name: web
dependsOn: [SdnZone/lan]
spec: {zone: nozone, tag: 10}
---
kind: SdnApply
name: sdn
`)
	p := planFor(t, sim, set, engine.Options{})
	ctx := context.Background()
	if _, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "create sdn vnet object failed") {
		t.Fatalf("apply: got %v, want PVE's refusal of the vnet", err)
	}
	var tok string
	if err := sim.cl.Do(ctx, http.MethodPost, "/cluster/sdn/lock", url.Values{"allow-pending": {"1"}}, &tok); err != nil {
		t.Fatalf("the lock after the failed apply: %v", err)
	}
	wantPendingOnly(t, sim, "zones/lan", "the failure")
}

// TestSimSdnVnetFirewall: a vnet's Firewall (scope SdnVnet/<vnet>) waits
// for the SDN commit (PVE serves a vnet's firewall only once the vnet
// runs), writes its options and forward rules, plans clean, and is
// emptied by destroy before the vnet goes.
func TestSimSdnVnetFirewall(t *testing.T) {
	sim := newSim(t, "pve")
	set := loadSpec(t, sdnSpec+`---
kind: Firewall
name: web-fw
spec:
  scope: SdnVnet/web
  options: {enable: 1, policy_forward: DROP}
  rules:
    - {type: forward, action: ACCEPT, proto: tcp, dport: 443, comment: https}
    - {type: forward, action: ACCEPT, macro: Ping}
`)
	p := planFor(t, sim, set, engine.Options{})
	if c := p.Change("Firewall/web-fw"); c == nil || c.Action != engine.Create || !slices.Contains(c.DependsOn, "SdnApply/sdn") {
		t.Fatalf("the vnet's firewall: %+v", c)
	}
	applyPlan(t, sim, p)
	ctx := context.Background()
	var rules []*pve.Config
	if err := sim.cl.Do(ctx, http.MethodGet, "/cluster/sdn/vnets/web/firewall/rules", nil, &rules); err != nil || len(rules) != 2 || rules[0].Get("dport") != "443" || rules[1].Get("macro") != "Ping" {
		t.Fatalf("vnet rules: %v %v", rules, err)
	}
	var opts *pve.Config
	if err := sim.cl.Do(ctx, http.MethodGet, "/cluster/sdn/vnets/web/firewall/options", nil, &opts); err != nil || opts.Get("policy_forward") != "DROP" || opts.Get("enable") != "1" {
		t.Fatalf("vnet options: %v %v", opts, err)
	}
	if got := summary(planFor(t, sim, set, engine.Options{})); !allNoop(got) {
		t.Errorf("second plan: got %v, want no changes", got)
	}
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{Destroy: true}))
	if rows, _ := engine.ReadSDN(ctx, sim.cl, "/cluster/sdn/vnets"); len(rows) != 0 {
		t.Errorf("vnets after destroy: %v", rows)
	}
}

// TestSimSdnPendingChangedSincePlan: a zone someone else writes after
// the plan (which saw nothing pending) is found by the commit's re-read
// under the lock: nothing is committed, this plan's writes stay pending
// beside it, and the lock is given back.
func TestSimSdnPendingChangedSincePlan(t *testing.T) {
	sim := newSim(t, "pve")
	set := loadSpec(t, sdnSpec)
	p := planFor(t, sim, set, engine.Options{})
	ctx := context.Background()
	if err := sim.cl.Do(ctx, http.MethodPost, "/cluster/sdn/zones", url.Values{"zone": {"late"}, "type": {"simple"}}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{AllowForeignSDNChanges: true})
	if err == nil || !strings.Contains(err.Error(), "not those the plan showed") || !strings.Contains(err.Error(), "zone late: new") {
		t.Fatalf("apply: got %v, want the commit refused naming the late zone", err)
	}
	pend, _ := sdnPendingNow(sim)
	keys := []string{}
	for _, p := range pend {
		keys = append(keys, p.Key)
	}
	if want := []string{"subnets/web/10.10.0.0/24", "vnets/web", "zones/lan", "zones/late"}; !slices.Equal(keys, want) {
		t.Errorf("pending after the refusal: %v, want %v", keys, want)
	}
	var tok string
	if err := sim.cl.Do(ctx, http.MethodPost, "/cluster/sdn/lock", url.Values{"allow-pending": {"1"}}, &tok); err != nil {
		t.Errorf("the lock after the refused commit: %v", err)
	}
}

// TestSimSdnEvpn: the design's EVPN example (testdata/examples) applies
// in order — controller, zone, vnet, subnet, commit — and plans clean.
func TestSimSdnEvpn(t *testing.T) {
	sim := newSim(t, "pve")
	b, err := os.ReadFile("../../testdata/examples/06-sdn-evpn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set := loadSpec(t, string(b))
	p := planFor(t, sim, set, engine.Options{})
	if c := p.Change("SdnZone/evpnz"); c == nil || !slices.Contains(c.DependsOn, "SdnController/evpnctl") {
		t.Fatalf("the evpn zone does not depend on its controller: %+v", c)
	}
	applyPlan(t, sim, p)
	if got := summary(planFor(t, sim, set, engine.Options{})); !allNoop(got) {
		t.Errorf("second plan: got %v, want no changes", got)
	}
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{Destroy: true}))
	pend, _ := readPending(func(path string) ([]*pve.Config, error) { return engine.ReadSDN(context.Background(), sim.cl, path) })
	if len(pend) != 0 {
		t.Errorf("pending after destroy: %v", pend)
	}
}

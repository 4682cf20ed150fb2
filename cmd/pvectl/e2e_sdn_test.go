package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
)

// sdnAcceptance is issue 20's one-apply scenario beside the cluster
// firewall of examples/05-firewall.yaml: a VM without vmid with a
// Firewall scoped to it, a vlan zone, a vnet, a subnet, the SDN commit,
// and a second VM on the vnet, running.
const sdnAcceptance = `
---
kind: QemuVM
name: fw-guest
spec:
  memory: 512
  scsi0: local-lvm:4
  net0: virtio,bridge=vmbr0,firewall=1
---
kind: Firewall
name: fw-guest
spec:
  scope: QemuVM/fw-guest
  options: {enable: 1, policy_in: DROP}
  rules:
    - {type: in, action: ACCEPT, proto: tcp, dport: 443}
    - {type: group, action: webservers}
---
kind: SdnZone
name: acc
spec: {type: vlan, bridge: vmbr0}
---
kind: SdnVnet
name: accnet
spec: {zone: acc, tag: 42, alias: acceptance}
---
kind: SdnSubnet
name: accnet-v4
spec: {vnet: accnet, subnet: 10.42.0.0/24, gateway: 10.42.0.1}
---
kind: SdnApply
name: sdn
---
kind: QemuVM
name: on-vnet
spec:
  memory: 512
  scsi0: local-lvm:4
  net0: virtio,bridge=accnet
  running: true
`

// sdnPendingNow lists the SDN entries that are pending (their state), by
// "file/id", as PVE's pending views show them.
func (e *simEnv) sdnPendingNow() []string {
	e.t.Helper()
	var out []string
	for _, file := range []string{"zones", "vnets", "controllers"} {
		var rows []map[string]any
		if err := e.client.Do(context.Background(), "GET", "/cluster/sdn/"+file, url.Values{"pending": {"1"}}, &rows); err != nil {
			e.t.Fatal(err)
		}
		for _, r := range rows {
			if st, ok := r["state"]; ok {
				out = append(out, fmt.Sprintf("%s/%v:%v", file, r[strings.TrimSuffix(file, "s")], st))
			}
		}
	}
	return out
}

// Issue 20 acceptance for SDN: one apply makes everything as specified,
// the vnet's configuration is applied (nothing pending), the VM on the
// vnet runs, the next plan is clean; SDN's lock token never shows in a
// --debug trace; destroy removes it all and leaves nothing pending.
func TestE2ESdnAcceptance(t *testing.T) {
	e := startSim(t)
	fw, err := os.ReadFile(example(t, "05-firewall.yaml", nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := writeSpec(t, "sdn.yaml", string(fw)+sdnAcceptance)
	r := e.mustRun(0, "apply", "-f", spec, "--auto-approve", "--debug")
	if !strings.Contains(r.stderr, "POST /cluster/sdn/lock\n    REDACTED") || !strings.Contains(r.stderr, "lock-token=REDACTED&release-lock=1") {
		t.Fatalf("the trace shows no SDN lock:\n%s", r.stderr)
	}
	uuid7 := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}`)
	if m := uuid7.FindString(r.stdout + r.stderr); m != "" {
		t.Errorf("a lock token (%s) shows in apply's output", m)
	}
	if p := e.sdnPendingNow(); len(p) != 0 {
		t.Errorf("pending after apply: %v", p)
	}
	var vnet map[string]any
	if err := e.client.Do(t.Context(), "GET", "/cluster/sdn/vnets/accnet", nil, &vnet); err != nil || fmt.Sprint(vnet["tag"]) != "42" || vnet["zone"] != "acc" {
		t.Errorf("vnet as PVE has it: %v %v", vnet, err)
	}
	var subnets []map[string]any
	if err := e.client.Do(t.Context(), "GET", "/cluster/sdn/vnets/accnet/subnets", nil, &subnets); err != nil || len(subnets) != 1 || subnets[0]["gateway"] != "10.42.0.1" {
		t.Errorf("subnets as PVE has them: %v %v", subnets, err)
	}
	if vm, ok := e.vmByName("on-vnet"); !ok || vm.Status != "running" {
		t.Errorf("the VM on the vnet: %+v (found %v), want running", vm, ok)
	}
	guest, ok := e.vmByName("fw-guest")
	if !ok {
		t.Fatal("no VM fw-guest")
	}
	var rules []map[string]any
	if err := e.client.Do(t.Context(), "GET", fmt.Sprintf("/nodes/pve/qemu/%d/firewall/rules", guest.VMID), nil, &rules); err != nil || len(rules) != 2 {
		t.Errorf("the guest's rules: %v %v", rules, err)
	}
	if err := e.client.Do(t.Context(), "GET", "/cluster/firewall/rules", nil, &rules); err != nil || len(rules) != 4 {
		t.Errorf("the cluster's rules: %v %v", rules, err)
	}
	e.mustRun(0, "plan", "-f", spec, "--detailed-exitcode")

	r = e.mustRun(0, "destroy", "-f", spec, "--auto-approve")
	if p := e.sdnPendingNow(); len(p) != 0 {
		t.Errorf("pending after destroy: %v\n%s", p, r.stdout)
	}
	var zones []map[string]any
	if err := e.client.Do(t.Context(), "GET", "/cluster/sdn/zones", nil, &zones); err != nil || len(zones) != 0 {
		t.Errorf("zones after destroy: %v %v", zones, err)
	}
	// The lock is free: someone else can take it.
	var token string
	if err := e.client.Do(t.Context(), "POST", "/cluster/sdn/lock", nil, &token); err != nil {
		t.Errorf("the SDN lock after destroy: %v", err)
	}
}

// A pending zone someone else made: the plan lists it, apply refuses
// naming it and the flag, changes nothing, and the zone stays pending.
func TestE2ESdnForeignPending(t *testing.T) {
	e := startSim(t)
	if err := e.client.Do(t.Context(), "POST", "/cluster/sdn/zones", url.Values{"zone": {"theirs"}, "type": {"simple"}}, nil); err != nil {
		t.Fatal(err)
	}
	spec := example(t, "06-sdn.yaml", nil)
	r := e.mustRun(2, "plan", "-f", spec, "--detailed-exitcode")
	if !strings.Contains(r.stdout, "zone theirs: new") {
		t.Fatalf("plan does not list the foreign zone:\n%s", r.stdout)
	}
	r = e.mustRun(1, "apply", "-f", spec, "--auto-approve")
	if !strings.Contains(r.stderr, "zone theirs: new") || !strings.Contains(r.stderr, "--allow-foreign-sdn-changes") || !strings.Contains(r.stderr, "Nothing was changed") {
		t.Fatalf("apply refusal:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if p := e.sdnPendingNow(); len(p) != 1 || p[0] != "zones/theirs:new" {
		t.Errorf("pending after the refusal: %v, want only the foreign zone", p)
	}
	if _, ok := e.vmByName("sdn-web-1"); ok {
		t.Error("the refused apply made a VM")
	}
}

// import --all writes the cluster's SDN (zones, vnets, subnets and the
// commit), and the imported documents plan clean.
func TestE2ESdnImport(t *testing.T) {
	e := startSim(t)
	spec := writeSpec(t, "sdn.yaml", `kind: SdnZone
name: imp
spec: {type: vlan, bridge: vmbr0, mtu: 1450}
---
kind: SdnVnet
name: impa
spec: {zone: imp, tag: 7, alias: first}
---
kind: SdnVnet
name: impb
spec: {zone: imp, tag: 8, vlanaware: true}
---
kind: SdnSubnet
name: impa-v4
spec: {vnet: impa, subnet: 10.7.0.0/24, gateway: 10.7.0.1, snat: true, dhcp-range: "start-address=10.7.0.100,end-address=10.7.0.199"}
---
kind: SdnApply
name: sdn
`)
	e.mustRun(0, "apply", "-f", spec, "--auto-approve")
	e.mustRun(0, "plan", "-f", spec, "--detailed-exitcode")
	r := e.mustRun(0, "import", "--all")
	containsAll(t, "import output", r.stdout, "kind: SdnZone\nname: imp\n", "kind: SdnVnet\nname: impa\n", "kind: SdnVnet\nname: impb\n",
		"kind: SdnSubnet\nname: impa-10.7.0.0-24\n", "kind: SdnApply\nname: sdn\n", "dhcp-range: start-address=10.7.0.100,end-address=10.7.0.199")
	imported := writeSpec(t, "imported.yaml", r.stdout)
	e.mustRun(0, "plan", "-f", imported, "--detailed-exitcode")
}

// A saved plan of the SDN example applies as planned (the commit's state
// round-trips the plan file), and plans clean afterwards.
func TestE2ESdnSavedPlan(t *testing.T) {
	e := startSim(t)
	spec := example(t, "06-sdn.yaml", nil)
	plan := spec + ".plan"
	e.mustRun(2, "plan", "-f", spec, "--out", plan, "--detailed-exitcode")
	e.mustRun(0, "apply", plan)
	if p := e.sdnPendingNow(); len(p) != 0 {
		t.Errorf("pending after applying the saved plan: %v", p)
	}
	e.mustRun(0, "plan", "-f", spec, "--detailed-exitcode")
}

package planner

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// An ACL on a VM that pins no vmid: the plan shows the path as known
// after apply, one apply (from a saved plan) makes both with the grant on
// the VM's real vmid, and the next plan is clean.
func TestSimOutputRefACLOnNewVM(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpecIn(t, t.TempDir(), `kind: QemuVM
name: app
spec: {memory: 512, cores: 1}
---
kind: User
name: ops@pve
---
kind: ACL
name: app-ops
spec:
  path: /vms/${QemuVM/app.vmid}
  users: ops@pve
  roles: PVEVMUser
`)
	p := planFor(t, sim, set, engine.Options{})
	acl := changesOf(p)["ACL/app-ops"]
	if acl == nil || acl.Action != engine.Create {
		t.Fatalf("ACL/app-ops: got %+v, want a create", acl)
	}
	if !strings.Contains(strings.Join(acl.DependsOn, ","), "QemuVM/app") {
		t.Errorf("ACL/app-ops depends on %v, want QemuVM/app", acl.DependsOn)
	}
	var shown string
	for _, d := range acl.Diff {
		if d.Path == "path" {
			shown, _ = d.After.(string)
		}
	}
	if shown != "/vms/${QemuVM/app.vmid}" {
		t.Errorf("plan shows path %q, want the reference (known after apply)", shown)
	}
	// A saved plan keeps the reference and applies as well.
	data, saved := marshalled(t, p)
	if !strings.Contains(string(data), `/vms/${QemuVM/app.vmid}`) {
		t.Errorf("the saved plan lost the reference")
	}
	applyPlan(t, sim, saved)

	entries, err := sim.cl.ACL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var grants []string
	for _, e := range entries {
		if e.UGID == "ops@pve" {
			grants = append(grants, e.Path+" "+e.Role)
		}
	}
	if len(grants) != 1 || !strings.HasPrefix(grants[0], "/vms/") || !strings.HasSuffix(grants[0], " PVEVMUser") {
		t.Fatalf("grants of ops@pve: %q, want one PVEVMUser on /vms/<vmid>", grants)
	}
	vmid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(grants[0], "/vms/"), " PVEVMUser"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.cl.GuestConfig(ctx, pve.QEMU, "pve", vmid)
	if err != nil || cfg.Get("name") != "app" {
		t.Errorf("the grant's guest %d: config %v, %v; want the VM app", vmid, cfg, err)
	}
	wantClean(t, planFor(t, sim, set, engine.Options{}), "plan after apply")
}

// A guest's Firewall on a VM that pins no vmid: one apply makes the VM
// and its rules (the vmid and node are the VM's outputs), and the next
// plan is clean.
func TestSimOutputRefGuestFirewall(t *testing.T) {
	sim := newSim(t)
	set := loadSpecIn(t, t.TempDir(), `kind: QemuVM
name: app
spec: {memory: 512, cores: 1}
---
kind: Firewall
name: app-fw
spec:
  scope: QemuVM/app
  options: {enable: true}
  rules:
    - {type: in, action: ACCEPT, proto: tcp, dport: "22"}
`)
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	wantClean(t, planFor(t, sim, set, engine.Options{}), "plan after apply")
}

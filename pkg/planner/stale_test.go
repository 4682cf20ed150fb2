package planner

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// Issue 10 part 4: a VM edited by hand between plan and apply: PVE
// refuses the plan's digest, and the failure says what to do.
func TestSimVMChangedSincePlan(t *testing.T) {
	sim := newSim(t)
	const doc = "kind: QemuVM\nname: dg\nspec:\n  vmid: 140\n  memory: 512\n"
	p := planEdit(t, sim, doc, "512", "1024", engine.Options{})
	ctx := context.Background()
	if err := sim.cl.UpdateGuest(ctx, pve.QEMU, "pve", 140, url.Values{"cores": {"3"}}); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{})
	if err == nil {
		t.Fatal("Apply: no error, want the stale update refused")
	}
	var se *engine.StaleError
	got := res.Failed["QemuVM/dg"]
	if !errors.As(got, &se) || got.Error() != "QemuVM/dg changed since the plan (digest): run plan again" || !pve.IsDigestMismatch(got) {
		t.Errorf("failure: got %v, want QemuVM/dg changed since the plan (digest): run plan again", got)
	}
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 140)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("memory") != "512" || cfg.Get("cores") != "3" {
		t.Errorf("config after the refused update: memory %s cores %s, want the hand edit kept (512, 3)", cfg.Get("memory"), cfg.Get("cores"))
	}
}

// Issue 10 part 4: PVE keeps no digest for an interface, so apply reads
// it again right before its write and refuses one edited since the plan:
// the hand edit is neither overwritten nor committed.
func TestSimBridgeChangedSincePlan(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	const base = "kind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_ports: eno2\n  comments: mine\n---\nkind: NetworkApply\nname: pve\ndependsOn: [LinuxBridge/vmbr1]\n"
	p := planEdit(t, sim, base, "eno2", "eno3", engine.Options{})
	if err := sim.cl.UpdateIface(ctx, "pve", "vmbr1", url.Values{"type": {"bridge"}, "bridge_ports": {"eno2"}, "comments": {"edited by hand"}}); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{AllowForeignNetworkChanges: true})
	if err == nil {
		t.Fatal("Apply: no error, want the stale update refused")
	}
	if got := res.Failed["LinuxBridge/vmbr1"]; got == nil || got.Error() != "LinuxBridge/vmbr1 changed since the plan (vmbr1 on node pve was edited): run plan again" {
		t.Errorf("failure: got %v", got)
	}
	if _, skipped := res.Skipped["NetworkApply/pve"]; !skipped {
		t.Errorf("the commit ran after the refused update: %+v", res)
	}
	if got := liveIface(t, sim, "vmbr1"); strings.TrimSpace(got.Get("comments")) != "edited by hand" || got.Get("bridge_ports") != "eno2" {
		t.Errorf("vmbr1 after the refused update: %v, want the hand edit as it was", got)
	}
}

// A bond's slave that the same run's bond write brought up (autostart)
// was not edited.
func TestSameIfaceIgnoresSlaveAutostart(t *testing.T) {
	before := pve.ConfigOf(map[string]string{"iface": "bond1", "type": "bond", "slaves": "eno3"})
	after := pve.ConfigOf(map[string]string{"iface": "bond1", "type": "bond", "slaves": "eno3", "autostart": "1"})
	others := map[string]*pve.Config{"bond2": pve.ConfigOf(map[string]string{"iface": "bond2", "type": "bond", "slaves": "bond1 eno4"})}
	for _, tc := range []struct {
		name   string
		lo     *engine.LiveObj
		digest string
		want   bool
	}{
		{"unchanged", &engine.LiveObj{Config: before, Digest: engine.FieldsDigest(before), State: &ifaceLive{}}, engine.FieldsDigest(before), true},
		{"a slave brought up", &engine.LiveObj{Config: after, Digest: engine.FieldsDigest(after), State: &ifaceLive{Others: others}}, engine.FieldsDigest(before), true},
		{"brought up, not a slave", &engine.LiveObj{Config: after, Digest: engine.FieldsDigest(after), State: &ifaceLive{}}, engine.FieldsDigest(before), false},
		{"a slave edited", &engine.LiveObj{Config: pve.ConfigOf(map[string]string{"iface": "bond1", "type": "bond", "slaves": "eno5", "autostart": "1"}),
			State: &ifaceLive{Others: others}}, engine.FieldsDigest(before), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lo.Digest == "" {
				tc.lo.Digest = engine.FieldsDigest(tc.lo.Config)
			}
			if got := sameIface(tc.lo, tc.digest); got != tc.want {
				t.Errorf("sameIface: got %v, want %v", got, tc.want)
			}
		})
	}
}

// A VM edited by hand between plan and apply, when the plan grows a disk
// and changes the config: the disk grows first, and that first resize
// carries the plan's digest, so the hand edit is refused before anything
// is written (the grown disk would otherwise change the digest the update
// then checks).
func TestSimVMChangedSincePlanGrowFirst(t *testing.T) {
	sim := newSim(t)
	const doc = "kind: QemuVM\nname: dg\nspec:\n  vmid: 141\n  memory: 512\n  scsi0: local-lvm:4\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	grown := strings.NewReplacer("512", "1024", "local-lvm:4", "local-lvm:6").Replace(doc)
	p := planFor(t, sim, loadSpec(t, grown), engine.Options{})
	ctx := context.Background()
	if err := sim.cl.UpdateGuest(ctx, pve.QEMU, "pve", 141, url.Values{"cores": {"3"}}); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{})
	var se *engine.StaleError
	if got := res.Failed["QemuVM/dg"]; err == nil || !errors.As(got, &se) {
		t.Fatalf("apply: %v (QemuVM/dg: %v), want the stale change refused", err, got)
	}
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 141)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("memory") != "512" || cfg.Get("cores") != "3" || !strings.Contains(cfg.Get("scsi0"), "size=4G") {
		t.Errorf("config after the refused change: memory %s cores %s scsi0 %s, want the hand edit alone (512, 3, 4G)", cfg.Get("memory"), cfg.Get("cores"), cfg.Get("scsi0"))
	}
}

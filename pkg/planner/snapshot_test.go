package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// apply --snapshot: a change that touches a VM's disk takes a pvectl-…
// snapshot first (the plan says so), the change still goes through with
// the snapshot's new digest, and only the newest KeepSnapshots stay. A VM
// whose disk is a raw file on a directory storage is named instead.
func TestSimSnapshotBeforeRiskyChange(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	const base = "kind: QemuVM\nname: db\nspec:\n  vmid: 150\n  memory: 512\n  scsi0: local-lvm:4\n---\n" +
		"kind: Storage\nname: dirimg\nspec: {type: dir, path: /srv/dirimg, content: images}\n---\n" +
		"kind: QemuVM\nname: raw\nspec:\n  vmid: 151\n  memory: 512\n  scsi0: dirimg:4,format=raw\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, base), engine.Options{}))

	snapshots := func(vmid int) []string {
		t.Helper()
		snaps, err := sim.cl.Snapshots(ctx, pve.QEMU, "pve", vmid)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range snaps {
			names = append(names, s.Name)
		}
		return names
	}
	for i, size := range []string{"6", "8"} {
		spec := strings.NewReplacer("local-lvm:4", "local-lvm:"+size, "dirimg:4,", "dirimg:"+size+",").Replace(base)
		p := planFor(t, sim, loadSpec(t, spec), engine.Options{Snapshot: true})
		db, raw := changesOf(p)["QemuVM/db"], changesOf(p)["QemuVM/raw"]
		if db.Snapshot == nil || db.Snapshot.VMID != 150 || !strings.Contains(strings.Join(db.Reasons, "\n"), "takes a snapshot pvectl-<time> of qemu 150 first (it changes scsi0)") {
			t.Fatalf("db: snapshot %+v, reasons %q; want one planned, said in the plan", db.Snapshot, db.Reasons)
		}
		if raw.Snapshot != nil || !strings.Contains(strings.Join(raw.Reasons, "\n"), "no snapshot first (it changes scsi0): scsi0 (dirimg:151/vm-151-disk-0.raw) is raw on storage dirimg (dir)") {
			t.Errorf("raw: snapshot %+v, reasons %q; want it named as one that cannot snapshot", raw.Snapshot, raw.Reasons)
		}
		res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{KeepSnapshots: 1})
		if err != nil {
			t.Fatalf("apply %d: %v (%+v)", i, err, res.Failed)
		}
		got := snapshots(150)
		if len(got) != 1 || !strings.HasPrefix(got[0], SnapshotPrefix) {
			t.Errorf("apply %d: snapshots of vm 150: %q, want the newest pvectl one only", i, got)
		}
		if len(snapshots(151)) != 0 {
			t.Errorf("apply %d: vm 151 has snapshots", i)
		}
		cfg, err := sim.cl.GuestConfig(ctx, pve.QEMU, "pve", 150)
		if err != nil || !strings.Contains(cfg.Get("scsi0"), "size="+size+"G") {
			t.Errorf("apply %d: scsi0 = %q (%v), want the change made after the snapshot", i, cfg.Get("scsi0"), err)
		}
		wantClean(t, planFor(t, sim, loadSpec(t, spec), engine.Options{Snapshot: true}), "plan after the apply")
	}
}

// A change that fails after its snapshot (a hand edit between plan and
// apply makes PVE refuse the update's digest): with RollbackOnFailure the
// guest is rolled back, and the error says so.
func TestSimSnapshotRollbackOnFailure(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	const base = "kind: QemuVM\nname: db\nspec:\n  vmid: 150\n  memory: 512\n  scsi0: local-lvm:4\n"
	p := planEdit(t, sim, base, "memory: 512", "memory: 1024", engine.Options{Snapshot: true})
	if c := changesOf(p)["QemuVM/db"]; c.Snapshot != nil {
		t.Fatalf("a memory change planned a snapshot: %q", c.Reasons)
	}
	p = planFor(t, sim, loadSpec(t, strings.Replace(base, "local-lvm:4", "local-lvm:4,cache=writeback", 1)), engine.Options{Snapshot: true})
	if c := changesOf(p)["QemuVM/db"]; c.Snapshot == nil {
		t.Fatalf("no snapshot planned for a disk change: %q", c.Reasons)
	}
	// The hand edit.
	if err := sim.cl.UpdateQemuSync(ctx, "pve", 150, map[string][]string{"cores": {"2"}}); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{RollbackOnFailure: true})
	if err == nil {
		t.Fatal("apply succeeded over a hand edit")
	}
	msg := res.Failed["QemuVM/db"].Error()
	if !strings.Contains(msg, "qemu 150 was rolled back to snapshot pvectl-") {
		t.Errorf("error: %s\nwant it to say the guest was rolled back", msg)
	}
	cfg, err := sim.cl.GuestConfig(ctx, pve.QEMU, "pve", 150)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot was taken after the hand edit, which stays.
	if cfg.Get("cores") != "2" || cfg.Get("scsi0") != "local-lvm:vm-150-disk-0,size=4G" {
		t.Errorf("after the rollback: cores %q, scsi0 %q; want the config of right before the change (cores 2, size=4G)", cfg.Get("cores"), cfg.Get("scsi0"))
	}
}

func TestRollbackAfterSaysHow(t *testing.T) {
	x := &engine.Execution{Hooks: engine.NopHooks{}, Change: &engine.Change{}}
	err := rollbackAfter(context.Background(), nil, x, &engine.SnapshotStep{Type: pve.LXC, VMID: 200, Node: "pve"}, "pvectl-20261204-190000", false, errTest)
	if want := "boom; lxc 200 has snapshot pvectl-20261204-190000 from right before the change: roll back with `pct rollback 200 pvectl-20261204-190000 (on node pve)`"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

var errTest = errString("boom")

type errString string

func (e errString) Error() string { return string(e) }

package interop

import (
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestGoProxmoxSnapshotsAndRealms drives the snapshot and realm endpoints
// with go-proxmox's own calls, unchanged: a VM's snapshot created, listed
// (with `current` and its parent), its config read and its description
// updated, its sub-resources, a rollback and a delete; the realms listed
// and read.
func TestGoProxmoxSnapshotsAndRealms(t *testing.T) {
	ctx, c, w := goProxmox(t, pvesim.Options{TaskDuration: 10 * time.Millisecond})
	node, err := c.Node(ctx, "pve")
	if err != nil {
		t.Fatal(err)
	}
	task, err := node.NewVirtualMachine(ctx, 100,
		proxmox.VirtualMachineOption{Name: "memory", Value: 512},
		proxmox.VirtualMachineOption{Name: "scsi0", Value: "local-lvm:4"})
	w.ok("create VM", task, err)
	vm, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	task, err = vm.NewSnapshot(ctx, "s1")
	w.ok("NewSnapshot", task, err)
	snaps, err := vm.Snapshots(ctx)
	if err != nil || len(snaps) != 2 || snaps[0].Name != "s1" || snaps[0].Snaptime == 0 || snaps[1].Name != "current" || snaps[1].Parent != "s1" {
		t.Fatalf("Snapshots: %+v, %v", snaps, err)
	}
	s1 := vm.Snapshot("s1")
	if err := s1.UpdateConfig(ctx, &proxmox.VirtualMachineSnapshotUpdateOptions{Description: "first"}); err != nil {
		t.Fatalf("UpdateConfig: %v", err)
	}
	conf, err := s1.Config(ctx)
	if err != nil || conf["description"] != "first" || conf["scsi0"] == nil || conf["snaptime"] == nil {
		t.Fatalf("Config: %v, %v", conf, err)
	}
	subs, err := s1.SubResources(ctx)
	if err != nil || len(subs) != 2 {
		t.Fatalf("SubResources: %+v, %v", subs, err)
	}
	task, err = s1.Rollback(ctx)
	w.ok("Rollback", task, err)
	task, err = s1.Delete(ctx)
	w.ok("Delete", task, err)
	if snaps, err = vm.Snapshots(ctx); err != nil || len(snaps) != 1 || snaps[0].Parent != "" {
		t.Fatalf("Snapshots after the delete: %+v, %v", snaps, err)
	}

	domains, err := c.Domains(ctx)
	if err != nil || len(domains) != 2 || domains[0].Realm != "pam" || domains[1].Type != "pve" {
		t.Fatalf("Domains: %+v, %v", domains, err)
	}
	pve, err := c.Domain(ctx, "pve")
	if err != nil || pve.Type != "pve" || pve.Digest == "" {
		t.Fatalf("Domain(pve): %+v, %v", pve, err)
	}
}

package planner

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// What a VM does its own way in the code guests share: the funcs of the
// qemu literal (qemu.go) that a container's differ from (lxc.go).

// qemuFindNeeds: finding a VM needs nothing beyond the guest lists.
func qemuFindNeeds(*spec.Resource) []engine.PermNeed { return nil }

// qemuCreateNeeds: qemu-server's create_vm checks only the settings; new
// disks without a storage go where PVE's default puts them.
func qemuCreateNeeds(_ *spec.Resource, _ map[string]string, storage string) ([]engine.PermNeed, string) {
	return nil, storage
}

// qemuCreatePrereqs: a new VM needs nothing beyond its settings.
func qemuCreatePrereqs(*spec.Resource, string) []engine.Prereq { return nil }

// qemuDefaultStorage: a VM's new disk names its storage.
func qemuDefaultStorage(*spec.Resource) string { return "" }

// qemuValuePerms are what a VM's drives, serial ports and devices need
// (qemu-server API2/Qemu.pm: check_drive_perms, check_storage_access,
// the device checks).
func qemuValuePerms(key, val, old string, deleting bool, sc setting) []engine.PermNeed {
	why := "to set " + key
	onGuest := sc.onGuest
	var needs []engine.PermNeed
	switch {
	case acl.IsQemuDrive(key) || key == "cdrom":
		// A create checks only the storage; a change what the old and the
		// new drive are.
		if !sc.creating && old != "" {
			needs = append(needs, onGuest(why, acl.DrivePrivs(old)...))
		}
		if !sc.creating && !deleting {
			needs = append(needs, onGuest(why, acl.DrivePrivs(val)...))
		}
		if !deleting {
			needs = append(needs, driveStorage(val, why, sc.storage)...)
		}
	case strings.HasPrefix(key, "serial"):
		if val != "" && val != "socket" {
			return []engine.PermNeed{{RootOnly: true, Why: "connect a real serial device (" + key + ")"}}
		}
		needs = append(needs, onGuest(why, "VM.Config.HWType"))
	case strings.HasPrefix(key, "usb"), strings.HasPrefix(key, "hostpci"), key == "rng0", strings.HasPrefix(key, "virtiofs"):
		needs = append(needs, devicePerms(key, val, onGuest)...)
	}
	return needs
}

// qemuPending is what qemu-server keeps pending beyond pve.GuestLiveRule:
// turning the balloon device on or off; a CD-ROM that changes its medium
// is not (vmconfig_hotplug_pending, vmconfig_update_disk).
func qemuPending(key string, live *pve.Config, val string, deleting bool) (pends, decided bool) {
	old, had := live.Lookup(key)
	switch {
	case key == "balloon" && !deleting:
		// Turning the balloon device on or off is not hot-pluggable.
		if (had && old == "0") != (val == "0") {
			return true, true
		}
	case qemuDriveKey(key) && had && !deleting && isCDROMValue(old) && isCDROMValue(val):
		return false, true // a CD-ROM changes its medium (vmconfig_update_disk)
	}
	return false, false
}

func qemuDriveKey(key string) bool {
	for _, bus := range []string{"ide", "sata", "scsi", "virtio"} {
		if n, ok := strings.CutPrefix(key, bus); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

func isCDROMValue(val string) bool {
	return slices.ContainsFunc(splitProps(val), func(kv schema.KV) bool { return kv.Key == "media" && kv.Value == "cdrom" })
}

// qemuMigrationBlockers is what PVE would refuse in the migration, from
// what GET …/migrate said (qemu-server migrate_vm_precondition,
// QemuMigrate.pm prepare and scan_local_volumes).
func qemuMigrationBlockers(r *spec.Resource, lo *engine.LiveObj, target string, running bool) error {
	addr, vmid := r.Address(), liveOf(lo).VMID
	mc := liveOf(lo).more().Migration
	if mc == nil {
		return nil // not readable (the permission check reports why)
	}
	why := mc.NotAllowed[target]
	if len(why.UnavailableStorages) > 0 {
		return fmt.Errorf("%s: PVE cannot migrate vm %d to %s: its storage %s is not available there", addr, vmid, target, strings.Join(why.UnavailableStorages, ", "))
	}
	if len(why.UnavailableResources) > 0 {
		return fmt.Errorf("%s: PVE cannot migrate vm %d to %s: the resource mapping of %s has no device of that node; add %s's device to the mapping (Datacenter → Resource Mappings)",
			addr, vmid, target, strings.Join(why.UnavailableResources, ", "), target)
	}
	var local, notLive []string
	for _, res := range mc.LocalResources {
		if m, ok := mc.Mapped[res]; ok {
			if !m.LiveMigration {
				notLive = append(notLive, res+" (mapping "+m.Name+")")
			}
			continue
		}
		local = append(local, res)
	}
	if len(local) > 0 {
		return fmt.Errorf("%s: PVE cannot migrate vm %d: it uses devices of node %s (%s); pass host devices through a resource mapping (hostpciN: mapping=NAME) that has an entry for %s",
			addr, vmid, lo.Node, strings.Join(local, ", "), target)
	}
	if running && len(notLive) > 0 {
		return fmt.Errorf("%s: PVE cannot migrate vm %d while it runs: %s cannot move live; set running: false to migrate it stopped, or mark the mapping live-migration-capable",
			addr, vmid, strings.Join(notLive, ", "))
	}
	for _, d := range mc.LocalDisks {
		if d.CDROM && !cloudinitRe.MatchString(d.Volid) {
			return fmt.Errorf("%s: PVE cannot migrate vm %d: %s holds %s, an image on a storage of node %s only; eject it (%s: none,media=cdrom) or keep the image on a shared storage",
				addr, vmid, d.DriveName, d.Volid, lo.Node, d.DriveName)
		}
	}
	return nil
}

// qemuRebootCheck: qemu-server's reboot task ends when the VM has
// stopped, and qmeventd's qmstart task starts it again (QemuServer.pm
// vm_reboot, CLI/qm.pm cleanup): a VM not running yet is waited on
// unless that task failed.
func qemuRebootCheck(ctx context.Context, x *engine.Execution, g guest, node string, vmid int, _ string, since *int64) error {
	if *since < 0 {
		var err error
		if *since, err = g.lastTaskStart(ctx, x, node, vmid, "qmreboot"); err != nil {
			return err
		}
	}
	return restartFailed(ctx, x, g, node, vmid, *since)
}

// restartFailed reports the qmstart task that qmeventd ran after the
// reboot (started at or after since) if it failed.
func restartFailed(ctx context.Context, x *engine.Execution, g guest, node string, vmid int, since int64) error {
	rows, err := x.Client.NodeTasks(ctx, node, url.Values{"vmid": {strconv.Itoa(vmid)}, "typefilter": {"qmstart"}, "source": {"all"}, "limit": {"1"}})
	if err != nil {
		return fmt.Errorf("%s %d after its reboot: %w", g.noun, vmid, err)
	}
	if len(rows) == 1 && rows[0].StartTime >= since && !rows[0].Running() && !rows[0].Succeeded() {
		return fmt.Errorf("%s %d did not start again after its reboot: task %s failed: %s", g.noun, vmid, rows[0].UPID, rows[0].Status)
	}
	return nil
}

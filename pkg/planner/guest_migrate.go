package planner

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A guest whose spec names another node than the one it is on migrates
// there (POST …/migrate) and keeps its vmid, disks and power state: a
// running VM live (online=1, with-local-disks=1 when it has disks on
// storages of its node), a running container in restart mode (PVE has
// no live migration for containers: it is shut down, moved and started
// on the target), a stopped guest offline. What PVE would refuse is
// found at plan time from GET …/qemu/{vmid}/migrate (qemu-server
// migrate_vm_precondition, QemuMigrate.pm prepare and scan_local_volumes;
// pve-container LXC/Migrate.pm prepare).

// planMigration makes c move the guest from lo.Node to the spec's node,
// or says why PVE would refuse.
func (g guest) planMigration(r *spec.Resource, lo *liveObj, c *Change, target string) error {
	gl := liveOf(lo)
	stateOf(c).PrevNode, c.Node = lo.Node, target
	c.Diff = append(c.Diff, FieldDiff{Path: "node", Before: lo.Node, After: target})
	running := gl.Status == "running"
	if want := spec.Guest(r).Running; want != nil && !*want {
		running = false // shut down first (see update)
	}
	if err := g.migrationBlockers(r, lo, target, running); err != nil {
		return err
	}
	how := "offline"
	switch {
	case running && g.typ == pve.LXC:
		how = "in restart mode: PVE has no live migration for containers, it is shut down, moved and started on " + target
	case running:
		how = "online"
		if mc := gl.Migration; mc != nil && len(attachedLocalDisks(mc)) > 0 {
			how += ", with its local disks " + strings.Join(attachedLocalDisks(mc), ", ")
		}
	}
	// It comes first: the rest of the update happens on the target.
	c.Reasons = append([]string{fmt.Sprintf("migrates %s %d from %s to %s (%s), keeping its vmid", g.noun, gl.VMID, lo.Node, target, how)}, c.Reasons...)
	return nil
}

// attachedLocalDisks are the VM's disks on storages of its node only,
// which a live migration copies with with-local-disks.
func attachedLocalDisks(mc *pve.MigrationCheck) []string {
	var out []string
	for _, d := range mc.LocalDisks {
		if !d.Unused && !d.CDROM {
			out = append(out, d.Volid)
		}
	}
	return out
}

// migrationBlockers is what PVE would refuse in the migration.
func (g guest) migrationBlockers(r *spec.Resource, lo *liveObj, target string, running bool) error {
	addr, vmid := r.Address(), liveOf(lo).VMID
	if g.typ == pve.LXC {
		for key, val := range lo.Config {
			if (key == "rootfs" || strings.HasPrefix(key, "mp")) && strings.HasPrefix(driveFile(val), "/") && !hasProp(val, "shared", "1") {
				return fmt.Errorf("%s: PVE cannot migrate container %d: %s is a bind mount or device of node %s (mark it shared=1 if the path exists on %s too, or remove it)",
					addr, vmid, key, lo.Node, target)
			}
		}
		return nil
	}
	mc := liveOf(lo).Migration
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

func hasProp(val, key, want string) bool {
	for _, kv := range splitProps(val) {
		if kv.Key == key && kv.Value == want {
			return true
		}
	}
	return false
}

// migrate carries out c's move to another node, before the rest of the
// update (which then runs on the target). Whether the guest runs, and so
// how it moves, is read now. A guest the spec wants stopped is shut down
// first.
func (g guest) migrate(ctx context.Context, x *execution, c *Change) error {
	st := stateOf(c)
	from, vmid := st.PrevNode, st.VMID
	if from == "" || from == c.Node {
		return nil
	}
	status, err := x.client.GuestStatus(ctx, g.typ, from, vmid)
	if err != nil {
		return fmt.Errorf("status of %s %d: %w", g.noun, vmid, err)
	}
	running := status.Status == "running"
	if want := spec.Guest(c.Resource).Running; running && want != nil && !*want {
		x.msg("shutting %s %d down before it migrates (running: false)", g.noun, vmid)
		if err := g.shutdown(ctx, x, from, vmid); err != nil {
			return err
		}
		running = false
	}
	params := url.Values{}
	how := "offline"
	switch {
	case running && g.typ == pve.LXC:
		params.Set("restart", "1")
		params.Set("timeout", strconv.Itoa(shutdownTimeout))
		how = "restart mode"
	case running:
		params.Set("online", "1")
		how = "online"
		mc, err := x.client.MigrationCheck(ctx, from, vmid, c.Node)
		if err != nil {
			return fmt.Errorf("migration check of %s %d: %w", g.noun, vmid, err)
		}
		if disks := attachedLocalDisks(mc); len(disks) > 0 {
			params.Set("with-local-disks", "1")
			how += ", with local disks " + strings.Join(disks, ", ")
		}
	}
	x.msg("migrating %s %d from %s to %s (%s)", g.noun, vmid, from, c.Node, how)
	if err := x.client.MigrateGuest(ctx, g.typ, from, vmid, c.Node, params); err != nil {
		return fmt.Errorf("migrate %s %d to %s: %w", g.noun, vmid, c.Node, err)
	}
	return nil
}

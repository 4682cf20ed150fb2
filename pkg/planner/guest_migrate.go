package planner

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/durfmt"
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
func (g guest) planMigration(r *spec.Resource, lo *engine.LiveObj, c *engine.Change, target string) error {
	gl := liveOf(lo)
	stateOf(c).PrevNode, c.Node = lo.Node, target
	c.Diff = append(c.Diff, engine.FieldDiff{Path: "node", Before: lo.Node, After: target})
	running := gl.Status == "running"
	if want := spec.Guest(r).Running; want != nil && !*want {
		running = false // shut down first (see update)
	}
	if err := g.migrationBlockers(r, lo, target, running); err != nil {
		return err
	}
	how := "offline"
	switch {
	case running && g.restartMigrate:
		how = "in restart mode: PVE has no live migration for containers, it is shut down, moved and started on " + target
	case running:
		how = "online"
		if mc := gl.more().Migration; mc != nil && len(attachedLocalDisks(mc)) > 0 {
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
func (g guest) migrate(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	st := stateOf(c)
	from, vmid := st.PrevNode, st.VMID
	if from == "" || from == c.Node {
		return nil
	}
	status, err := x.Client.GuestStatus(ctx, g.typ, from, vmid)
	if err != nil {
		return fmt.Errorf("status of %s %d: %w", g.noun, vmid, err)
	}
	running := status.Status == "running"
	if want := spec.Guest(c.Resource).Running; running && want != nil && !*want {
		x.Msg("shutting %s %d down before it migrates (running: false)", g.noun, vmid)
		if err := g.shutdown(ctx, x, from, vmid); err != nil {
			return err
		}
		running = false
	}
	params := url.Values{}
	how := "offline"
	switch {
	case running && g.restartMigrate:
		params.Set("restart", "1")
		params.Set("timeout", strconv.Itoa(shutdownTimeout))
		how = "restart mode"
	case running:
		params.Set("online", "1")
		how = "online"
		mc, err := x.Client.MigrationCheck(ctx, from, vmid, c.Node)
		if err != nil {
			return fmt.Errorf("migration check of %s %d: %w", g.noun, vmid, err)
		}
		if disks := attachedLocalDisks(mc); len(disks) > 0 {
			params.Set("with-local-disks", "1")
			how += ", with local disks " + strings.Join(disks, ", ")
		}
	}
	x.Msg("migrating %s %d from %s to %s (%s)", g.noun, vmid, from, c.Node, how)
	if err := x.Client.MigrateGuest(ctx, g.typ, from, vmid, c.Node, params); err != nil {
		return fmt.Errorf("migrate %s %d to %s: %w", g.noun, vmid, c.Node, err)
	}
	return g.awaitOn(ctx, x, c.Node, vmid)
}

// migrateWait bounds the wait for a guest the HA manager migrates.
const migrateWait = 30 * time.Minute

// awaitOn returns once guest vmid is on node. A plain migration's task
// ends with the guest there; an HA-managed guest's is an hamigrate task
// that only asks the HA manager to move it (qemu-server API2/Qemu.pm and
// pve-container API2/LXC.pm migrate_vm), which it does afterwards, as
// root@pam, in a migration task of its own: what apply does next on the
// new node waits for that.
func (g guest) awaitOn(ctx context.Context, x *engine.Execution, node string, vmid int) error {
	deadline := time.Now().Add(migrateWait)
	delay := 100 * time.Millisecond
	for said := false; ; said = true {
		_, err := x.Client.GuestStatus(ctx, g.typ, node, vmid)
		switch {
		case err == nil:
			return nil
		case !pve.IsNotFound(err):
			return fmt.Errorf("status of %s %d on %s after its migration: %w", g.noun, vmid, node, err)
		case time.Now().After(deadline):
			return fmt.Errorf("%s %d is not on %s %s after its migration was asked for (the HA manager moves it: see ha-manager status)", g.noun, vmid, node, durfmt.Format(migrateWait))
		case !said:
			x.Msg("waiting for the HA manager to move %s %d to %s", g.noun, vmid, node)
		}
		if err := pve.Sleep(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, 5*time.Second)
	}
}

package planner

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Changes a running guest keeps pending: PVE writes what it cannot
// hot-plug into the config's [PENDING] section, where it waits for the
// guest's next start (qemu-server QemuServer.pm vmconfig_hotplug_pending,
// pve-container LXC/Config.pm vmconfig_hotplug_pending). The plan says
// which of its changes will wait, from PVE's rules (pve.GuestLiveRule);
// apply says which did, and rebootOnPending reboots the guest for them.

// pendingUntilReboot predicts which keys of c's config update a running
// guest with config live keeps pending.
func (g guest) pendingUntilReboot(c *engine.Change, live *pve.Config) []string {
	subs := map[string][]string{}
	for _, d := range c.Diff {
		k, sub, _ := strings.Cut(d.Path, ".")
		subs[k] = append(subs[k], sub)
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(c.Params)) {
		if key == "delete" || key == "digest" {
			continue
		}
		if g.pends(key, subs[key], live, c.Params[key], false) {
			out = append(out, key)
		}
	}
	for _, key := range schema.SplitList(c.Params["delete"]) {
		if g.pends(key, []string{""}, live, "", true) {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pends reports whether changing key (its sub-keys subs) to val, or
// deleting it, stays pending on the running guest.
func (g guest) pends(key string, subs []string, live *pve.Config, val string, deleting bool) bool {
	if pends, decided := g.ownPending(key, live, val, deleting); decided {
		return pends
	}
	_, had := live.Lookup(key)
	if len(subs) == 0 {
		subs = []string{""}
	}
	for _, sub := range subs {
		rule := pve.GuestLiveRule(g.typ, key, sub)
		switch rule.When {
		case pve.LivePending:
			return true
		case pve.LiveNewOnly:
			if had || deleting {
				return true
			}
		case pve.LiveHotplug:
			if !hotplugFeatures(live.Get("hotplug"))[rule.Feature] {
				return true
			}
		}
	}
	return false
}

// hotplugFeatures is qemu-server's parse_hotplug_features: unset or "1"
// means network, disk and usb; "0" none.
func hotplugFeatures(v string) map[string]bool {
	if v == "" || v == "1" {
		v = "network,disk,usb"
	}
	out := map[string]bool{}
	if v == "0" {
		return out
	}
	for _, f := range schema.SplitList(v) {
		out[f] = true
	}
	return out
}

// notePending adds to c what its update will leave pending on a running
// guest, and, with rebootOnPending, the reboot that applies it — also
// for changes an earlier run left pending (a change of its own then).
func (g guest) notePending(r *spec.Resource, lo *engine.LiveObj, c *engine.Change) {
	gl := liveOf(lo)
	if gl.Status != "running" {
		return
	}
	if want := spec.Guest(r).Running; want != nil && !*want {
		return // the shutdown applies them when it next starts
	}
	reboot := spec.Guest(r).RebootOnPending != nil && *spec.Guest(r).RebootOnPending
	noun := fmt.Sprintf("%s %d", g.noun, gl.VMID)
	if keys := g.pendingUntilReboot(c, lo.Config); len(keys) > 0 {
		c.Reasons = append(c.Reasons, fmt.Sprintf("pending until reboot: %s (the running %s cannot take them at once)", strings.Join(keys, ", "), g.noun))
		if reboot {
			stateOf(c).Reboot = true
			c.Reasons = append(c.Reasons, fmt.Sprintf("rebootOnPending: %s will be rebooted to apply them", noun))
		}
	}
	if reboot && len(gl.more().Pending) > 0 {
		stateOf(c).Reboot = true
		c.Reasons = append(c.Reasons, fmt.Sprintf("pending until reboot since an earlier change: %s; rebootOnPending: %s will be rebooted to apply them",
			strings.Join(gl.more().Pending, ", "), noun))
		if c.Action == engine.NoOp {
			c.Action = engine.Update
		}
	}
}

// applyPending is the end of an update for a running guest: it says what
// PVE kept pending and, when the change plans a reboot or the spec asks
// for one, reboots the guest and waits until it runs with nothing
// pending. A power change of the same update (a start or a shutdown)
// applies them instead.
func (g guest) applyPending(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	for _, d := range c.Diff {
		if d.Path == "running" {
			return nil
		}
	}
	vmid := stateOf(c).VMID
	st, err := x.Client.GuestStatus(ctx, g.typ, c.Node, vmid)
	if err != nil {
		return fmt.Errorf("status of %s %d: %w", g.noun, vmid, err)
	}
	if st.Status != "running" {
		return nil
	}
	rop := spec.Guest(c.Resource).RebootOnPending
	reboot := stateOf(c).Reboot || rop != nil && *rop
	keys, err := x.Client.GuestPendingKeys(ctx, g.typ, c.Node, vmid)
	switch {
	case err != nil && reboot:
		return fmt.Errorf("pending changes of %s %d: %w", g.noun, vmid, err)
	case err != nil || len(keys) == 0:
		return nil // nothing pending, or only a message lost
	}
	x.Msg("%s %d: pending until reboot: %s", g.noun, vmid, strings.Join(keys, ", "))
	if !reboot {
		return nil
	}
	return g.rebootAndWait(ctx, x, c.Node, vmid)
}

// rebootTimeout bounds how long rebootAndWait waits for a rebooted guest
// to run again.
const rebootTimeout = 10 * time.Minute

// rebootAndWait reboots a running guest so that its pending changes apply,
// and returns once it runs again with nothing pending. qemu-server's
// reboot task ends when the VM has stopped: the start that applies the
// pending changes is a qmstart task of its own, which qmeventd's cleanup
// runs afterwards (QemuServer.pm vm_reboot, CLI/qm.pm cleanup), so the
// reboot task's end is not the guest's. pve-container's vzreboot starts
// the container itself (LXC.pm vm_reboot). rebootCheck judges a guest
// not running yet by these rules.
func (g guest) rebootAndWait(ctx context.Context, x *engine.Execution, node string, vmid int) error {
	x.Msg("rebooting %s %d", g.noun, vmid)
	if err := x.Client.GuestPower(ctx, g.typ, node, vmid, "reboot", nil); err != nil {
		return fmt.Errorf("reboot %s %d: %w", g.noun, vmid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, rebootTimeout)
	defer cancel()
	var since int64 = -1 // when the reboot task started (server time)
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		st, err := x.Client.GuestStatus(ctx, g.typ, node, vmid)
		if err != nil {
			return fmt.Errorf("%s %d after its reboot: %w", g.noun, vmid, err)
		}
		if st.Status == "running" {
			keys, err := x.Client.GuestPendingKeys(ctx, g.typ, node, vmid)
			if err != nil {
				return fmt.Errorf("%s %d after its reboot: %w", g.noun, vmid, err)
			}
			if len(keys) > 0 {
				return fmt.Errorf("%s %d runs again after its reboot, but still has pending changes: %s", g.noun, vmid, strings.Join(keys, ", "))
			}
			return nil
		}
		if err := g.rebootCheck(ctx, x, g, node, vmid, st.Status, &since); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s %d to run again after its reboot: %w", g.noun, vmid, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// lastTaskStart is when the newest task of typ for the guest started.
func (g guest) lastTaskStart(ctx context.Context, x *engine.Execution, node string, vmid int, typ string) (int64, error) {
	rows, err := x.Client.NodeTasks(ctx, node, url.Values{"vmid": {strconv.Itoa(vmid)}, "typefilter": {typ}, "source": {"all"}, "limit": {"1"}})
	if err != nil {
		return 0, fmt.Errorf("find the %s task of %s %d: %w", typ, g.noun, vmid, err)
	}
	if len(rows) == 0 {
		return 0, fmt.Errorf("find the %s task of %s %d: the node lists none", typ, g.noun, vmid)
	}
	return rows[0].StartTime, nil
}

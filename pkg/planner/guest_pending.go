package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
func (g guest) pendingUntilReboot(c *Change, live pve.Config) []string {
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
func (g guest) pends(key string, subs []string, live pve.Config, val string, deleting bool) bool {
	old, had := live[key]
	if g.typ == pve.QEMU {
		switch {
		case key == "balloon" && !deleting:
			// Turning the balloon device on or off is not hot-pluggable.
			if (had && old == "0") != (val == "0") {
				return true
			}
		case qemuDriveKey(key) && had && !deleting && isCDROMValue(old) && isCDROMValue(val):
			return false // a CD-ROM changes its medium (vmconfig_update_disk)
		}
	}
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
			if !hotplugFeatures(live["hotplug"])[rule.Feature] {
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

// notePending adds to c what its update will leave pending on a running
// guest, and, with rebootOnPending, the reboot that applies it — also
// for changes an earlier run left pending (a change of its own then).
func (g guest) notePending(r *spec.Resource, lo *liveObj, c *Change) {
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
	if reboot && len(gl.Pending) > 0 {
		stateOf(c).Reboot = true
		c.Reasons = append(c.Reasons, fmt.Sprintf("pending until reboot since an earlier change: %s; rebootOnPending: %s will be rebooted to apply them",
			strings.Join(gl.Pending, ", "), noun))
		if c.Action == NoOp {
			c.Action = Update
		}
	}
}

// applyPending is the end of an update for a running guest: it says what
// PVE kept pending and, when the change plans a reboot or the spec asks
// for one, reboots the guest and waits until it runs with nothing
// pending. A power change of the same update (a start or a shutdown)
// applies them instead.
func (g guest) applyPending(ctx context.Context, x *execution, c *Change) error {
	for _, d := range c.Diff {
		if d.Path == "running" {
			return nil
		}
	}
	vmid := stateOf(c).VMID
	st, err := x.client.GuestStatus(ctx, g.typ, c.Node, vmid)
	if err != nil {
		return fmt.Errorf("status of %s %d: %w", g.noun, vmid, err)
	}
	if st.Status != "running" {
		return nil
	}
	rop := spec.Guest(c.Resource).RebootOnPending
	reboot := stateOf(c).Reboot || rop != nil && *rop
	keys, err := x.client.GuestPendingKeys(ctx, g.typ, c.Node, vmid)
	switch {
	case err != nil && reboot:
		return fmt.Errorf("pending changes of %s %d: %w", g.noun, vmid, err)
	case err != nil || len(keys) == 0:
		return nil // nothing pending, or only a message lost
	}
	x.msg("%s %d: pending until reboot: %s", g.noun, vmid, strings.Join(keys, ", "))
	if !reboot {
		return nil
	}
	return g.rebootAndWait(ctx, x, c.Node, vmid)
}

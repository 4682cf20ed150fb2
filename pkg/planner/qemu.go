package planner

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// qemuKind manages QemuVM: identity is vmid if set, else the VM name.
type qemuKind struct{ guest }

const qemuCreatePath = "/nodes/{node}/qemu"

var qemu = qemuKind{guest{
	typ: pve.QEMU, noun: "vm", nameParam: "name", createPath: qemuCreatePath,
	notInConfig: map[string]bool{
		"node": true, "vmid": true, "pool": true, "start": true, "storage": true,
		"unique": true, "archive": true, "live-restore": true, "bwlimit": true,
		"import-working-storage": true, "force": true, "ha-managed": true,
	},
}}

func (k qemuKind) compare(b *builder, r *spec.Resource, lo *liveObj, c *Change) error {
	if lock := lo.Config["lock"]; lock != "" {
		c.Action, c.Reasons = NoOp, []string{"locked (" + lock + "): a task is in progress"}
		return nil
	}
	if want := paramNode(r); want != "" && want != lo.Node {
		stateOf(c).PrevNode, c.Node = lo.Node, want
		c.Diff = []FieldDiff{{Path: "node", Before: lo.Node, After: want}}
		return b.replace(r, c, fmt.Sprintf("node changed: %s → %s", lo.Node, want))
	}
	cmp := comparer{m: b.method("POST", k.createPath)}
	c.Diff = cmp.diffParams(r.Params, r.Remove, lo.Config, k.notInConfig)
	for _, d := range c.Diff {
		if strings.HasSuffix(d.Path, ".storage") {
			return b.replace(r, c, topKey(d.Path)+" moves to another storage")
		}
		if strings.HasSuffix(d.Path, ".size") {
			before, _ := d.Before.(string)
			after, _ := d.After.(string)
			x, ok1 := parseSize(before)
			y, ok2 := parseSize(after)
			if ok1 && ok2 && y < x {
				return fmt.Errorf("%s: %s: PVE cannot shrink a disk (%s → %s)", r.Address(), topKey(d.Path), before, after)
			}
		}
	}
	c.Params = cmp.updateParams(c.Diff, r.Params, lo.Config, isResize)
	if len(c.Params) == 0 {
		c.Params = nil
	}
	k.compareCommon(r, lo, c)
	return nil
}

func isResize(d FieldDiff) bool { return strings.HasSuffix(d.Path, ".size") }

func (k qemuKind) update(ctx context.Context, x *execution, c *Change) error {
	vmid := stateOf(c).VMID
	if len(c.Params) > 0 {
		params := toValues(c.Params)
		if c.Digest != "" {
			params.Set("digest", c.Digest)
		}
		if err := x.client.UpdateGuest(ctx, k.typ, c.Node, vmid, params); err != nil {
			return fmt.Errorf("update vm %d: %w", vmid, err)
		}
		// On a running VM PVE keeps what it cannot hot-plug pending; say so
		// rather than reboot the VM behind the user's back.
		if keys, err := x.client.GuestPendingKeys(ctx, k.typ, c.Node, vmid); err == nil && len(keys) > 0 {
			x.msg("pending until vm %d restarts: %s", vmid, strings.Join(keys, ", "))
		}
	}
	for _, d := range c.Diff {
		if !isResize(d) {
			continue
		}
		size, _ := d.After.(string)
		disk := topKey(d.Path)
		path := fmt.Sprintf("/nodes/%s/qemu/%d/resize", url.PathEscape(c.Node), vmid)
		if err := x.client.RunTask(ctx, "PUT", path, url.Values{"disk": {disk}, "size": {size}}); err != nil {
			return fmt.Errorf("resize %s of vm %d: %w", disk, vmid, err)
		}
	}
	return k.updateCommon(ctx, x, c)
}

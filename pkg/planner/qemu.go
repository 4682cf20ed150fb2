package planner

import (
	"context"

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
	done, err := k.compareConfig(b, r, lo, c)
	if done || err != nil {
		return err
	}
	k.compareCommon(r, lo, c)
	return nil
}

// update migrates the guest if its node changed, changes its config
// and disks, reboots it for pending changes when asked, and reconciles
// pool and power.
func (k qemuKind) update(ctx context.Context, x *execution, c *Change) error {
	if err := k.migrate(ctx, x, c); err != nil {
		return err
	}
	if err := k.updateConfig(ctx, x, c); err != nil {
		return err
	}
	if err := k.applyPending(ctx, x, c); err != nil {
		return err
	}
	return k.updateCommon(ctx, x, c)
}

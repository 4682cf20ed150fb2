package planner

import (
	"context"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// lxcKind manages LxcContainer: identity is vmid if set, else the hostname.
type lxcKind struct{ guest }

var lxc = lxcKind{guest{
	typ: pve.LXC, noun: "container", nameParam: "hostname", createPath: "/nodes/{node}/lxc",
	// Create parameters a container's config does not keep (pve-container
	// src/PVE/API2/LXC.pm create_vm: the template is unpacked, the password
	// and keys are written into the root filesystem).
	notInConfig: map[string]bool{
		"node": true, "vmid": true, "pool": true, "start": true, "storage": true, "ostemplate": true,
		"password": true, "ssh-public-keys": true, "restore": true, "force": true, "unique": true,
		"ignore-unpack-errors": true, "bwlimit": true, "ha-managed": true,
	},
	// PVE refuses to change a container between privileged and
	// unprivileged (pve-container src/PVE/LXC/Config.pm update_pct_config:
	// "unable to modify read-only option").
	replaceKeys: map[string]string{"unprivileged": "PVE cannot convert a container"},
}}

var lxcTraits = lxc.guestTraits()

func (lxcKind) traits() kindTraits { return lxcTraits }

func (k lxcKind) compare(b *builder, r *spec.Resource, lo *liveObj, c *Change) error {
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
func (k lxcKind) update(ctx context.Context, x *execution, c *Change) error {
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

package planner

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
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

	specKind:          spec.KindLxcContainer,
	cli:               "pct",
	configMethod:      "PUT",
	quickConfig:       func(url.Values, bool) bool { return false },
	option:            acl.CTOption,
	ownValuePerms:     lxcValuePerms,
	checksOldBridge:   true,
	findNeeds:         lxcFindNeeds,
	createNeeds:       lxcCreateNeeds,
	createPrereqs:     lxcCreatePrereqs,
	isDisk:            lxcDiskKey,
	isVolumeKey:       lxcVolumeKey,
	diskContent:       "rootdir",
	defaultStorage:    lxcStorage,
	moveSub:           "/move_volume",
	stopsToMove:       true,
	restartMigrate:    true,
	migrateNote:       "a running container migrates in restart mode (PVE has no live migration for containers: shut down, moved, started on the target), a stopped one offline; it keeps its vmid",
	migrationBlockers: lxcMigrationBlockers,
	ownPending:        func(string, *pve.Config, string, bool) (bool, bool) { return false, false },
	rebootCheck:       lxcRebootCheck,
}}

var lxcTraits = lxc.guestTraits()

func (lxcKind) Traits() engine.KindTraits { return lxcTraits }

func (k lxcKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	done, err := k.compareConfig(b, r, lo, c)
	if done || err != nil {
		return err
	}
	k.compareCommon(r, lo, c)
	return nil
}

// Update migrates the guest if its node changed, changes its config
// and disks, reboots it for pending changes when asked, and reconciles
// pool and power.
func (k lxcKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
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

// lxcStorage is a container's default storage (pve-container create_vm).
func lxcStorage(r *spec.Resource) string {
	if s := r.Params.Get("storage"); s != "" {
		return s
	}
	return "local"
}

// lxcDiskKey: a container's root disk and mount points (mpN).
func lxcDiskKey(key string) bool {
	return key == "rootfs" || mpKeyRe.MatchString(key)
}

// lxcVolumeKey: a config key of a container's root disk or a mount point.
func lxcVolumeKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "mp")
	return key == "rootfs" || ok && compare.IsNumber(rest)
}

// lxcFindNeeds: the plan looks the template up on its storage, which the
// resources list shows only with Datastore.Audit (Cluster.pm resources).
func lxcFindNeeds(r *spec.Resource) []engine.PermNeed {
	if sid, _, ok := strings.Cut(r.Params.Get("ostemplate"), ":"); ok && !strings.HasPrefix(sid, "/") {
		return []engine.PermNeed{engine.NeedPriv("/storage/"+sid, "to find the template on its storage (PVE lists only the storages a token may audit)", "Datastore.Audit")}
	}
	return nil
}

// lxcCreateNeeds are what pve-container's create_vm checks beyond the
// settings: a privileged container, the template, the root disk (on
// `storage`, default local, when the spec has no rootfs).
func lxcCreateNeeds(r *spec.Resource, vals map[string]string, storage string) ([]engine.PermNeed, string) {
	delete(vals, "unprivileged") // pve-container's create_vm takes it out before its check
	if storage == "" {
		storage = "local"
	}
	var needs []engine.PermNeed
	if r.Params.Get("unprivileged") == "0" {
		needs = append(needs, engine.NeedPriv("/", "to create a privileged container", "Sys.Modify"))
	}
	if tmpl := r.Params.Get("ostemplate"); tmpl != "" {
		needs = append(needs, volumeNeed(tmpl, "to read the template "+tmpl))
	}
	if _, ok := vals["rootfs"]; !ok {
		needs = append(needs, engine.NeedPriv("/storage/"+storage, "to allocate the root disk", "Datastore.AllocateSpace"))
	}
	return needs, storage
}

// lxcValuePerms are what a container's feature flags and mount points
// (rootfs, mpN) need (LXC.pm check_ct_modify_config_perm).
func lxcValuePerms(key, val, old string, deleting bool, sc setting) []engine.PermNeed {
	if key == "features" {
		feats := map[string]bool{}
		for _, v := range []string{old, val} {
			for _, kv := range splitProps(v) {
				feats[kv.Key] = true
			}
		}
		delete(feats, "nesting")
		if len(feats) > 0 {
			return []engine.PermNeed{{RootOnly: true, Why: "set feature flags other than nesting"}}
		}
		return []engine.PermNeed{sc.onGuest("to change nesting", "VM.Allocate")}
	}
	file := driveFile(val)
	switch m := newDiskRe.FindStringSubmatch(file); {
	case deleting || file == "":
	case strings.HasPrefix(file, "/"):
		return []engine.PermNeed{{RootOnly: true, Why: "bind-mount a host path (" + key + ")"}}
	case m != nil && m[2] != "":
		return []engine.PermNeed{engine.NeedPriv("/storage/"+m[2], "to allocate "+key, "Datastore.AllocateSpace")}
	case m != nil:
		return []engine.PermNeed{engine.NeedPriv("/storage/"+sc.storage, "to allocate "+key, "Datastore.AllocateSpace")}
	default:
		return []engine.PermNeed{volumeNeed(file, "to use "+file+" as "+key)}
	}
	return nil
}

// lxcCreatePrereqs: a new container's template, and the storage of its
// root disk when the spec has no rootfs (pve-container create_vm: a
// 4 GiB one on `storage`, default local).
func lxcCreatePrereqs(r *spec.Resource, node string) []engine.Prereq {
	var out []engine.Prereq
	if tmpl := r.Params.Get("ostemplate"); tmpl != "" && !strings.HasPrefix(tmpl, "/") && strings.Contains(tmpl, ":") {
		out = append(out, volumePrereq("ostemplate", tmpl, "vztmpl", node))
	}
	if _, ok := r.Params.Lookup("rootfs"); !ok {
		out = append(out, storagePrereq("storage", lxcStorage(r), "rootdir", node))
	}
	return out
}

// lxcMigrationBlockers: PVE cannot migrate a container with a bind mount
// or device of its node that is not marked shared (LXC/Migrate.pm
// prepare).
func lxcMigrationBlockers(r *spec.Resource, lo *engine.LiveObj, target string, _ bool) error {
	addr, vmid := r.Address(), liveOf(lo).VMID
	for key, val := range lo.Config.All() {
		if (key == "rootfs" || strings.HasPrefix(key, "mp")) && strings.HasPrefix(driveFile(val), "/") && !hasProp(val, "shared", "1") {
			return fmt.Errorf("%s: PVE cannot migrate container %d: %s is a bind mount or device of node %s (mark it shared=1 if the path exists on %s too, or remove it)",
				addr, vmid, key, lo.Node, target)
		}
	}
	return nil
}

// lxcRebootCheck: pve-container's vzreboot starts the container itself
// (LXC.pm vm_reboot), so one not running once it ended did not start.
func lxcRebootCheck(_ context.Context, _ *engine.Execution, g guest, _ string, vmid int, status string, _ *int64) error {
	return fmt.Errorf("%s %d is %s after its reboot", g.noun, vmid, status)
}

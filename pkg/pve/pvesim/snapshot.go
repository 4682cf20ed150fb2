package pvesim

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Guest snapshots, as qemu-server (src/PVE/API2/Qemu.pm snapshot_list,
// snapshot, rollback, delsnapshot, update_snapshot_config,
// get_snapshot_config; src/PVE/QemuConfig.pm) and pve-container
// (src/PVE/API2/LXC/Snapshot.pm; src/PVE/LXC/Config.pm) run them on top
// of pve-guest-common src/PVE/AbstractConfig.pm (snapshot_create,
// snapshot_rollback, snapshot_delete).
//
// A snapshot is a section of the guest's config file: a copy of the
// config at the time (without lock, digest, description, unused volumes)
// plus snaptime, description, parent, vmstate and, while a task works on
// it, snapstate. The volumes' own snapshots are not modelled apart: the
// storage's ability to take them (volume_has_feature) is.

// snapshotRoutes serves the snapshot paths of both guest types.
func (s *Server) snapshotRoutes() []route {
	var out []route
	// The path segment is spelled out: the kinds may not be built yet
	// when the route table is (router_test.go).
	for api, k := range map[string]*guestKind{"qemu": s.qemu, "lxc": s.lxc} {
		base := "/nodes/{node}/" + api + "/{vmid}/snapshot"
		out = append(out,
			k.route("GET "+base, s.listSnapshots),
			k.route("POST "+base, s.createSnapshot),
			k.route("GET "+base+"/{snapname}", s.snapshotIndex),
			k.route("DELETE "+base+"/{snapname}", s.deleteSnapshot),
			k.route("GET "+base+"/{snapname}/config", s.getSnapshotConfig),
			k.route("PUT "+base+"/{snapname}/config", s.putSnapshotConfig),
			k.route("POST "+base+"/{snapname}/rollback", s.rollbackSnapshot),
		)
	}
	return out
}

// snapshotCopySkips are the keys __snapshot_copy_config leaves out.
var snapshotCopySkips = setOf("snapstate", "snaptime", "vmstate", "lock", "digest", "description")

// copyForSnapshot is AbstractConfig.pm __snapshot_copy_config: the
// config without its snapshot bookkeeping, lock, description and unused
// volumes. Pending changes are not part of a snapshot section (qemu-server
// write_vm_config writes [PENDING] for the current config only).
func copyForSnapshot(conf map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range conf {
		if !snapshotCopySkips[k] && !isUnusedKey(k) {
			out[k] = v
		}
	}
	return out
}

// snapshotNames lists a guest's snapshots oldest first (PVE answers them in
// Perl hash order; this order is stable).
func snapshotNames(v *vm) []string {
	names := slices.Sorted(maps.Keys(v.Snapshots))
	slices.SortStableFunc(names, func(a, b string) int {
		return int(snapshotTime(v.Snapshots[a]) - snapshotTime(v.Snapshots[b]))
	})
	return names
}

// renderSnapshots is the snapshot sections of the config file, part of
// what the digest covers (qemu-server write_vm_config).
func renderSnapshots(v *vm) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(v.Snapshots)) {
		snap := v.Snapshots[name]
		fmt.Fprintf(&b, "\n[%s]\n", name)
		if d := snap["description"]; d != "" {
			for _, line := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
				b.WriteString("#" + line + "\n")
			}
		}
		for _, k := range slices.Sorted(maps.Keys(snap)) {
			if k != "description" {
				fmt.Fprintf(&b, "%s: %s\n", k, snap[k])
			}
		}
	}
	return b.String()
}

// listSnapshots is snapshot_list: a row per snapshot (VMs say whether it
// holds RAM) and the "current" row with the digest and the parent.
func (s *Server) listSnapshots(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, name := range snapshotNames(v) {
		snap := v.Snapshots[name]
		t, _ := strconv.ParseInt(snap["snaptime"], 10, 64)
		row := map[string]any{"name": name, "snaptime": t, "description": snap["description"]}
		if k == s.qemu {
			row["vmstate"] = boolInt(snap["vmstate"] != "")
		}
		if p := snap["parent"]; p != "" {
			row["parent"] = p
		}
		if st := snap["snapstate"]; st != "" {
			row["snapstate"] = st
		}
		out = append(out, row)
	}
	cur := map[string]any{"name": "current", "digest": digest(v), "running": boolInt(v.Running), "description": "You are here!"}
	if p := v.Conf["parent"]; p != "" {
		cur["parent"] = p
	}
	return append(out, cur), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// snapshotIndex is snapshot_cmd_idx: it does not look at the snapshot.
func (s *Server) snapshotIndex(k *guestKind, q *request) (any, error) {
	return []map[string]any{{"cmd": "rollback"}, {"cmd": "config"}}, nil
}

// snapshotOf is load_snapshot_config's lookup.
func snapshotOf(v *vm, name string) (map[string]string, error) {
	snap, ok := v.Snapshots[name]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "snapshot '%s' does not exist", name)
	}
	return snap, nil
}

// lockedSnapshot is a snapshot task's second pass: the guest read again,
// its config lock still the one the first pass set (wrongLock, the task's
// error, otherwise) and the snapshot named.
func (s *Server) lockedSnapshot(k *guestKind, node string, id int, name, lock, wrongLock string) (*vm, map[string]string, error) {
	v, err := s.guestAt(k, node, id)
	if err != nil {
		return nil, nil, err
	}
	if v.Conf["lock"] != lock {
		return nil, nil, errors.New(wrongLock)
	}
	snap, err := snapshotOf(v, name)
	if err != nil {
		return nil, nil, err
	}
	return v, snap, nil
}

// snapshotAnswer types a snapshot section as GET …/config does a config.
func (s *Server) snapshotAnswer(k *guestKind, snap map[string]string) map[string]any {
	out := map[string]any{}
	for key, val := range snap {
		out[key] = k.confValue(key, val)
	}
	if t, err := strconv.ParseInt(snap["snaptime"], 10, 64); err == nil {
		out["snaptime"] = t
	}
	return out
}

// getSnapshotConfig is get_snapshot_config: the section as it is.
func (s *Server) getSnapshotConfig(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	snap, err := snapshotOf(v, q.vars["snapname"])
	if err != nil {
		return nil, err
	}
	return s.snapshotAnswer(k, snap), nil
}

// snapshotConfigAt is GET …/config?snapshot=NAME (load_snapshot_config:
// the section with the file's digest).
func (s *Server) snapshotConfigAt(k *guestKind, v *vm, name string) (any, error) {
	snap, err := snapshotOf(v, name)
	if err != nil {
		return nil, err
	}
	out := s.snapshotAnswer(k, snap)
	out["digest"] = digest(v)
	return out, nil
}

// putSnapshotConfig is update_snapshot_config: without a description it
// does nothing at all; else under the config lock (in the API process) it
// checks the config lock and the snapshot and sets the description.
func (s *Server) putSnapshotConfig(k *guestKind, q *request) (any, error) {
	if !q.has("description") {
		return nil, nil
	}
	if _, err := s.guestOf(k, q); err != nil {
		return nil, err
	}
	if err := s.lockNow(q, s.guestLock(k, vmidOf(q))); err != nil {
		return nil, err
	}
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	if err := s.configLock(v, false); err != nil {
		return nil, err
	}
	snap, err := snapshotOf(v, q.vars["snapname"])
	if err != nil {
		return nil, err
	}
	if d := q.get("description"); d != "" {
		snap["description"] = d
	} else {
		delete(snap, "description")
	}
	return nil, s.saveLocked()
}

// reservedSnapshotName refuses the names the API handlers reserve before
// they fork: "current" for both, "pending" (any case) for a VM, "vzdump"
// for a container (qemu-server API2/Qemu.pm snapshot, pve-container
// API2/LXC/Snapshot.pm snapshot).
func (s *Server) reservedSnapshotName(k *guestKind, name string) error {
	reserved := name == "current" || k == s.qemu && strings.EqualFold(name, "pending") || k == s.lxc && name == "vzdump"
	if reserved {
		return fail(http.StatusInternalServerError, "unable to use snapshot name '%s' (reserved name)", name)
	}
	return nil
}

// createSnapshot is the snapshot call: the name checked in the API
// process, then a qmsnapshot/vzsnapshot worker that prepares (the lock
// "snapshot", the section with snapstate "prepare", a VM's RAM saved to a
// vmstate volume when asked and running), snapshots every volume and
// commits (the lock dropped, parent set) — AbstractConfig.pm
// snapshot_create, __snapshot_prepare, __snapshot_commit.
func (s *Server) createSnapshot(k *guestKind, q *request) (any, error) {
	name := q.get("snapname")
	if err := s.reservedSnapshotName(k, name); err != nil {
		return nil, err
	}
	node, id := q.vars["node"], vmidOf(q)
	vmstate, comment := q.bool("vmstate"), q.get("description")
	if k == s.qemu {
		// qemu-server loads the config before it forks; pve-container
		// does not (a missing CT fails the task).
		v, err := s.guestOf(k, q)
		if err != nil {
			return nil, err
		}
		if err := ramBlockers(v, vmstate); err != nil {
			return nil, err
		}
	}
	return s.snapshotWorker(k, node, id, "snapshot", func(t *task, v *vm) error {
		return s.prepareSnapshot(t, k, v, name, vmstate, comment)
	}, func(t *task) error {
		v, snap, err := s.lockedSnapshot(k, node, id, name, "snapshot", "missing snapshot lock")
		if err != nil {
			return err
		}
		delete(snap, "snapstate")
		delete(v.Conf, "lock")
		v.Conf["parent"] = name
		return nil
	}), nil
}

// snapshotWorker starts a snapshot task (typ snapshot, rollback or
// delsnapshot) under the guest's lock. The worker reads the config: a
// missing guest fails the task; begin is the first pass on it under the
// lock, run the effect.
func (s *Server) snapshotWorker(k *guestKind, node string, id int, typ string, begin func(*task, *vm) error, run taskFunc) string {
	return s.startWorker(node, k.tasks+typ, vmidString(id), worker{
		locks: []lockReq{s.guestLock(k, id)},
		begin: func(t *task) error {
			v, err := s.guestAt(k, node, id)
			if err != nil {
				return err
			}
			return begin(t, v)
		},
		run: run,
	}).UPID
}

// prepareSnapshot is __snapshot_prepare under the lock, and the volume
// snapshots' log lines.
func (s *Server) prepareSnapshot(t *task, k *guestKind, v *vm, name string, vmstate bool, comment string) error {
	if v.Conf["template"] == "1" {
		return fmt.Errorf("you can't take a snapshot if it's a template")
	}
	if err := s.configLock(v, false); err != nil {
		return err
	}
	if err := ramBlockers(v, vmstate && k == s.qemu); err != nil {
		return err
	}
	if _, used := v.Snapshots[name]; used {
		return fmt.Errorf("snapshot name '%s' already used", name)
	}
	if !s.guestHasSnapshotFeature(v) {
		return fmt.Errorf("snapshot feature is not available")
	}
	for _, other := range snapshotNames(v) {
		if v.Snapshots[other]["parent"] == name {
			t.warn("deleting parent '%s' reference from '%s' to avoid bogus snapshot cycle.", name, other)
			delete(v.Snapshots[other], "parent")
		}
	}
	v.Conf["lock"] = "snapshot"
	snap := copyForSnapshot(v.Conf)
	if vmstate && v.Running && k == s.qemu {
		snap["vmstate"] = s.saveVMState(t, v, name)
		snap["runningmachine"] = "pc-i440fx-9.2+pve1"
	}
	snap["snapstate"] = "prepare"
	snap["snaptime"] = strconv.FormatInt(time.Now().Unix(), 10)
	if comment != "" {
		snap["description"] = comment
	}
	ensureMap(&v.Snapshots)
	v.Snapshots[name] = snap
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		if file, ok := s.snapshotVolume(v, key); ok && k == s.qemu {
			t.logf("snapshotting 'drive-%s' (%s)", key, file)
		}
	}
	return nil
}

// snapshotVolume returns the volume of a config key that a snapshot
// covers: a disk or mount point that is no CD-ROM (foreach_volume with
// drive_is_cdrom skipped; cloud-init drives are CD-ROMs).
func (s *Server) snapshotVolume(v *vm, key string) (string, bool) {
	if !isDiskKey(key) {
		return "", false
	}
	file, rest := diskFile(v.Conf[key])
	if m, _ := schema.PropValue(rest, "media"); m == "cdrom" || file == "none" || file == "" {
		return "", false
	}
	return file, true
}

// guestHasSnapshotFeature is has_feature('snapshot', …) over the guest's
// volumes (QemuConfig.pm, LXC/Config.pm has_feature).
func (s *Server) guestHasSnapshotFeature(v *vm) bool {
	for key := range v.Conf {
		if file, ok := s.snapshotVolume(v, key); ok && !s.volumeCanSnapshot(file) {
			return false
		}
	}
	return true
}

// volumeCanSnapshot is pve-storage volume_has_feature($cfg, 'snapshot',
// $volid) for the current state of a volume (src/PVE/Storage.pm and the
// plugins' tables): LVM-thin, ZFS and RBD can; directory-like storages
// and LVM only for qcow2 (Plugin.pm, LVMPlugin.pm), BTRFS for raw and
// qcow2 too; a base volume never (its key is "base", not "current"); a
// path or a volume of an unknown storage cannot.
func (s *Server) volumeCanSnapshot(volid string) bool {
	sid, name, ok := strings.Cut(volid, ":")
	if !ok {
		return false
	}
	st, ok := s.st.Storages[sid]
	if !ok || strings.HasPrefix(path.Base(name), "base-") {
		return false
	}
	format := "raw"
	if vol, ok := s.st.Volumes[volid]; ok && vol.Format != "" {
		format = vol.Format
	} else if strings.HasSuffix(name, ".qcow2") {
		format = "qcow2"
	}
	switch st.Type {
	case "lvmthin", "zfspool", "rbd":
		return true
	case "btrfs":
		return format == "raw" || format == "qcow2" || format == "subvol"
	case "dir", "nfs", "cifs", "glusterfs", "cephfs", "lvm":
		return format == "qcow2"
	}
	return false
}

// saveVMState allocates the RAM state of a running VM's snapshot
// (QemuConfig.pm __snapshot_save_vmstate): on vmstatestorage, else
// find_vmstate_storage's choice, vm-N-state-NAME (.raw on a file
// storage), twice the memory plus 500 MiB.
func (s *Server) saveVMState(t *task, v *vm, name string) string {
	sid := s.vmstateStorage(v)
	st := s.st.Storages[sid]
	file := fmt.Sprintf("vm-%d-state-%s", v.VMID, name)
	if st != nil && isFileStorage(st) {
		file = fmt.Sprintf("%d/%s.raw", v.VMID, file)
	}
	size := 2*vmMaxMem(v.Conf) + 500*mib
	vol := &volume{Storage: sid, Name: file, Content: "images", Format: "raw", Size: size, VMID: v.VMID, Ctime: time.Now().Unix()}
	s.st.addVolume(vol)
	t.logf("saving VM state and RAM using storage '%s'", sid)
	return vol.volid()
}

// vmstateStorage is find_vmstate_storage: vmstatestorage, else a shared
// storage the VM's disks use, else a local one (file storages first),
// else local.
func (s *Server) vmstateStorage(v *vm) string {
	if sid := v.Conf["vmstatestorage"]; sid != "" {
		return sid
	}
	var shared, local string
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		file, ok := s.snapshotVolume(v, key)
		if !ok {
			continue
		}
		sid, _, _ := strings.Cut(file, ":")
		st, ok := s.st.Storages[sid]
		if !ok {
			continue
		}
		dst := &local
		if st.Shared {
			dst = &shared
		}
		if *dst == "" || isFileStorage(st) {
			*dst = sid
		}
	}
	switch {
	case shared != "":
		return shared
	case local != "":
		return local
	}
	return "local"
}

// ramBlockers is qemu-server's check_non_migratable_resources for a
// snapshot with RAM (QemuMigrate/Helpers.pm; before the worker and, as
// __snapshot_assert_no_blockers, in it): AMD SEV, Intel TDX and
// virtiofs devices cannot be saved.
func ramBlockers(v *vm, vmstate bool) error {
	if !vmstate {
		return nil
	}
	var blockers []string
	for _, key := range []string{"amd-sev", "intel-tdx"} {
		if v.Conf[key] != "" {
			blockers = append(blockers, key)
		}
	}
	for key := range v.Conf {
		if strings.HasPrefix(key, "virtiofs") {
			blockers = append(blockers, "virtiofs")
			break
		}
	}
	if len(blockers) == 0 {
		return nil
	}
	return fail(http.StatusInternalServerError, "Cannot live-migrate, snapshot (with RAM), or hibernate a VM with: %s", strings.Join(blockers, ", "))
}

// source is the config a clone copies: the guest's, or that of the
// snapshot it names (qemu-server API2/Qemu.pm clone_vm's $oldconf,
// pve-container API2/LXC.pm clone_vm), without the snapshot's own
// bookkeeping; the snapshot's description is copied like any option.
func (c *cloneSpec) source() *vm {
	snap, ok := c.src.Snapshots[c.snap]
	if c.snap == "" || !ok {
		return c.src
	}
	conf := maps.Clone(snap)
	for _, key := range []string{"snapstate", "snaptime", "vmstate", "parent", "runningmachine", "runningcpu"} {
		delete(conf, key)
	}
	return &vm{VMID: c.src.VMID, Node: c.src.Node, Type: c.src.Type, Conf: conf}
}

// snapshotMigrationProblem is why a migration cannot take a local volume
// that a snapshot names (qemu-server QemuMigrate.pm scan_local_volumes:
// not while the VM runs, and only on ZFS, raw on BTRFS or qcow2 files;
// pve-container LXC/Migrate.pm phase1: only on ZFS and BTRFS), "" when
// it can.
func (s *Server) snapshotMigrationProblem(k *guestKind, v *vm, gv guestVolume) string {
	if gv.vol == nil || !s.snapshotRefers(v, gv.volid) {
		return ""
	}
	st := s.st.Storages[gv.vol.Storage]
	if st == nil {
		return ""
	}
	if k == s.lxc {
		if st.Type == "zfspool" || st.Type == "btrfs" {
			return ""
		}
		return "non-migratable snapshot exists"
	}
	if v.Running {
		return "online storage migration not possible if non-replicated snapshot exists"
	}
	if st.Type == "zfspool" || st.Type == "btrfs" && gv.vol.Format == "raw" || gv.vol.Format == "qcow2" {
		return ""
	}
	return "non-migratable snapshot exists"
}

// snapshotRefers reports whether one of v's snapshots names volid.
func (s *Server) snapshotRefers(v *vm, volid string) bool {
	for _, snap := range v.Snapshots {
		sv := &vm{Conf: snap}
		for key := range snap {
			if f, ok := s.snapshotVolume(sv, key); ok && f == volid {
				return true
			}
		}
	}
	return false
}

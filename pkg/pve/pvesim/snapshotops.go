package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// rollbackSnapshot is the rollback call (qemu-server API2/Qemu.pm
// rollback, pve-container API2/LXC/Snapshot.pm rollback): a VM's `start`
// needs VM.PowerMgmt before the worker forks; the qmrollback/vzrollback worker
// runs AbstractConfig.pm snapshot_rollback: under the lock it checks the
// template, the snapshot, that every volume can roll back, the snapshot's
// state and the config lock, stops a running guest and sets the lock
// "rollback"; once the volumes are rolled back it drops the lock, makes
// the volumes the snapshot does not name unused, takes the snapshot's
// config (the description and unused volumes stay; pending changes are
// gone), sets parent and starts a VM whose snapshot holds its RAM (or
// any guest with `start`).
func (s *Server) rollbackSnapshot(k *guestKind, q *request) (any, error) {
	name := q.vars["snapname"]
	id := vmidOf(q)
	start := q.bool("start")
	if start && k == s.qemu { // pve-container does not check it
		if err := s.check(q.user, "/vms/"+vmidString(id), "VM.PowerMgmt"); err != nil {
			return nil, err
		}
	}
	// The config is read in the worker only: a missing guest fails the task.
	node := q.vars["node"]
	return s.snapshotWorker(k, node, id, "rollback", func(t *task, v *vm) error {
		return s.prepareRollback(t, k, v, name)
	}, func(t *task) error {
		v, snap, err := s.lockedSnapshot(k, node, id, name, "rollback", "got wrong lock")
		if err != nil {
			return err
		}
		s.applySnapshot(k, v, name, snap)
		if snap["vmstate"] != "" || start && !v.Running {
			return s.startEffect(t, k, v, false)
		}
		return nil
	}), nil
}

// prepareRollback is snapshot_rollback's first pass under the lock.
func (s *Server) prepareRollback(t *task, k *guestKind, v *vm, name string) error {
	if v.Conf["template"] == "1" {
		return fmt.Errorf("you can't rollback if vm is a template")
	}
	snap, err := snapshotOf(v, name)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(snap)) {
		if !isDiskKey(key) {
			continue
		}
		if err := s.rollbackPossible(v, snap, key, name); err != nil {
			return err
		}
	}
	if st := snap["snapstate"]; st != "" {
		return fmt.Errorf("unable to rollback to incomplete snapshot (snapstate = %s)", st)
	}
	if err := s.configLock(v, false); err != nil {
		return err
	}
	if v.Running {
		// QemuConfig.pm __snapshot_rollback_vm_stop: vm_stop with a 5 s
		// timeout; LXC/Config.pm: vm_stop($vmid, 1), a kill.
		v.Running, v.StartedAt = false, 0
	}
	v.Conf["lock"] = "rollback"
	return nil
}

// rollbackPossible is volume_rollback_is_possible: ZFS rolls back only to
// its most recent snapshot (ZFSPoolPlugin.pm); LVM-thin and the file
// storages to any (LvmThinPlugin.pm, Plugin.pm without volume chains).
func (s *Server) rollbackPossible(v *vm, snap map[string]string, key, name string) error {
	file, ok := s.snapshotVolume(&vm{Conf: snap}, key)
	if !ok {
		return nil
	}
	sid, _, _ := strings.Cut(file, ":")
	if st := s.st.Storages[sid]; st == nil || st.Type != "zfspool" {
		return nil
	}
	var later []string
	found := false
	for _, other := range snapshotNames(v) {
		if other == name {
			found = true
			continue
		}
		if f, ok := s.snapshotVolume(&vm{Conf: v.Snapshots[other]}, key); found && ok && f == file {
			later = append(later, other)
		}
	}
	if len(later) > 0 {
		return fmt.Errorf("can't rollback, '%s' is not most recent snapshot on '%s'", name, file)
	}
	return nil
}

// applySnapshot is the rollback's second pass: __snapshot_rollback_get_unused,
// __snapshot_apply_config and, for a VM, __snapshot_rollback_hook (a new
// vmgenid, the running machine dropped).
func (s *Server) applySnapshot(k *guestKind, v *vm, name string, snap map[string]string) {
	delete(v.Conf, "lock")
	inSnap := map[string]bool{}
	for key := range snap {
		if f, ok := s.snapshotVolume(&vm{Conf: snap}, key); ok {
			inSnap[f] = true
		}
	}
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		if f, ok := s.snapshotVolume(v, key); ok && !inSnap[f] {
			s.addUnused(v, f)
		}
	}
	conf := map[string]string{}
	for key, val := range v.Conf {
		if isUnusedKey(key) || key == "description" {
			conf[key] = val
		}
	}
	maps.Copy(conf, copyForSnapshot(snap))
	delete(conf, "runningmachine")
	delete(conf, "runningcpu")
	if k == s.qemu && conf["vmgenid"] != "" {
		conf["vmgenid"] = s.newUUID()
	}
	conf["parent"] = name
	v.Conf, v.Pending, v.PendingDel, v.CloudInit = conf, nil, nil, nil
}

// deleteSnapshot is delsnapshot (qemu-server API2/Qemu.pm, pve-container
// API2/LXC/Snapshot.pm): the qmdelsnapshot/vzdelsnapshot worker runs
// AbstractConfig.pm snapshot_delete: the snapshot must exist, set_lock
// "snapshot-delete" (which checks the config lock), then a template is
// refused (the lock stays, as on PVE), snapstate "delete"; the vmstate
// volume is freed, the volume snapshots removed, parent references moved
// to the deleted snapshot's parent and the lock dropped.
func (s *Server) deleteSnapshot(k *guestKind, q *request) (any, error) {
	name := q.vars["snapname"]
	// The config is read in the worker only: a missing guest fails the task.
	node, id := q.vars["node"], vmidOf(q)
	return s.snapshotWorker(k, node, id, "delsnapshot", func(t *task, v *vm) error {
		snap, err := snapshotOf(v, name)
		if err != nil {
			return err
		}
		if err := s.configLock(v, false); err != nil {
			return err
		}
		v.Conf["lock"] = "snapshot-delete"
		if v.Conf["template"] == "1" {
			return fmt.Errorf("you can't delete a snapshot if vm is a template")
		}
		snap["snapstate"] = "delete"
		return nil
	}, func(t *task) error {
		v, snap, err := s.lockedSnapshot(k, node, id, name, "snapshot-delete", "encountered invalid lock, expected 'snapshot-delete'")
		if err != nil {
			return err
		}
		if vs := snap["vmstate"]; vs != "" {
			delete(s.st.Volumes, vs)
		}
		if v.Conf["parent"] == name {
			setOrDelete(v.Conf, "parent", snap["parent"])
		}
		for _, other := range v.Snapshots {
			if other["parent"] == name {
				setOrDelete(other, "parent", snap["parent"])
			}
		}
		delete(v.Snapshots, name)
		if len(v.Snapshots) == 0 {
			v.Snapshots = nil
		}
		delete(v.Conf, "lock")
		return nil
	}), nil
}

func setOrDelete(m map[string]string, key, val string) {
	if val == "" {
		delete(m, key)
		return
	}
	m[key] = val
}

// snapshotTime is a snapshot's snaptime, 0 when it has none.
func snapshotTime(snap map[string]string) int64 {
	t, _ := strconv.ParseInt(snap["snaptime"], 10, 64)
	return t
}

// unusedInSnapshot refuses to free an unused volume that a snapshot
// still names (qemu-server QemuServer.pm try_deallocate_drive, with
// Drive.pm is_volume_in_use), as deleting unusedN does.
func (s *Server) unusedInSnapshot(v *vm, volid string) error {
	if s.snapshotRefers(v, volid) {
		return fail(http.StatusInternalServerError, "unable to delete '%s' - volume is still in use (snapshot?)", volid)
	}
	return nil
}

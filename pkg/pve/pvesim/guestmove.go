package pvesim

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Moving a guest's disk to another storage: qemu-server's move_disk
// (online too, QEMU mirrors the running drive) and pve-container's
// move_volume (stopped containers only). Reassigning a disk to another
// guest (target-vmid) is not simulated: the call says so.

// moveCheck is what both calls have checked about a move: the guest, the
// drive key, its volume and the target storage.
type moveCheck struct {
	v      *vm
	key    string
	vol    *volume
	rest   []schema.KV
	target *storage
}

// moveTargetStorage is storage_check_enabled on the guest's node
// (pve-storage Storage.pm storage_config, storage_check_node,
// storage_check_enabled).
func (s *Server) moveTargetStorage(id, node string) (*storage, error) {
	st, ok := s.st.Storages[id]
	switch {
	case !ok:
		return nil, fail(http.StatusInternalServerError, "storage '%s' does not exist", id)
	case !st.onNode(node):
		return nil, fail(http.StatusInternalServerError, "storage '%s' is not available on node '%s'", id, node)
	case st.Disable:
		return nil, fail(http.StatusInternalServerError, "storage '%s' is disabled", id)
	}
	return st, nil
}

// moveDisk is POST /nodes/{node}/qemu/{vmid}/move_disk to another storage
// (qemu-server API2/Qemu.pm move_vm_disk): Datastore.AllocateSpace on the
// target, $load_and_check_move before the qmmove worker forks and again
// under the config lock in it; the copy is written to the config when it
// is done, the source volume becomes unusedN or, with delete, is freed.
func (s *Server) moveDisk(k *guestKind, q *request) (any, error) {
	storeID, targetVMID := q.get("storage"), q.get("target-vmid")
	switch {
	case storeID != "" && targetVMID != "":
		msg := "either set 'storage' or 'target-vmid', but not both"
		return nil, paramErr(map[string]string{"target-vmid": msg, "storage": msg})
	case targetVMID != "":
		return nil, fail(http.StatusNotImplemented, "moving a disk to another VM (target-vmid) is not supported by the simulator")
	case storeID == "":
		msg := "both 'storage' and 'target-vmid' missing, either needs to be set"
		return nil, paramErr(map[string]string{"target-vmid": msg, "storage": msg})
	}
	if err := s.check(q.user, "/storage/"+storeID, "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	node, id := q.vars["node"], vmidOf(q)
	check := func() (*moveCheck, error) { return s.checkMoveDisk(k, q, node, id, storeID) }
	if _, err := check(); err != nil {
		return nil, err
	}
	return s.startWorker(node, "qmmove", vmidString(id), worker{
		locks: []lockReq{s.guestLock(k, id)},
		begin: func(*task) error { _, err := check(); return err },
		run: func(t *task) error {
			m, err := check()
			if err != nil {
				return err
			}
			s.runMoveDisk(t, m, storeID, q.get("format"), q.bool("delete"))
			return nil
		},
	}).UPID, nil
}

// checkMoveDisk is move_vm_disk's $load_and_check_move: the VM unlocked
// and unchanged, the drive a disk with a volume, the target a different
// storage (or format) that holds images and is enabled on the node.
func (s *Server) checkMoveDisk(k *guestKind, q *request, node string, id int, storeID string) (*moveCheck, error) {
	key := q.get("disk")
	v, err := s.guestAt(k, node, id)
	if err != nil {
		return nil, err
	}
	if err := s.configLock(v, false); err != nil {
		return nil, err
	}
	// pve-common Tools.pm assert_if_modified, not update_vm_api's message.
	if err := assertIfModified(q, digest(v)); err != nil {
		return nil, err
	}
	val, ok := v.Conf[key]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "disk '%s' does not exist", key)
	}
	file, rest := diskFile(val)
	if file == "" {
		return nil, fail(http.StatusInternalServerError, "disk '%s' has no associated volume", key)
	}
	if isCDROM(val, true) {
		return nil, fail(http.StatusInternalServerError, "you can't move a cdrom")
	}
	vol, ok := s.st.Volumes[file]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "volume '%s' does not exist", file)
	}
	if vol.Storage == storeID && (q.get("format") == "" || vol.Format == q.get("format")) {
		return nil, fail(http.StatusInternalServerError, "you can't move to the same storage with same format")
	}
	st, err := s.moveTargetStorage(storeID, node)
	if err != nil {
		return nil, err
	}
	if !st.allows("images") {
		return nil, paramErr1("storage", "storage '%s' does not support vm images", storeID)
	}
	return &moveCheck{v: v, key: key, vol: vol, rest: rest, target: st}, nil
}

// runMoveDisk is the qmmove worker's copy to storage storeID: the drive
// points at the copy (in format, "" for the default), the source is freed
// (del) or becomes unusedN.
func (s *Server) runMoveDisk(t *task, m *moveCheck, storeID, format string, del bool) {
	key := m.key
	t.logf("copying volume '%s' from current storage '%s' to target storage '%s'", m.vol.volid(), m.vol.Storage, storeID)
	if m.v.Running {
		t.logf("drive mirror is starting for drive-%s", key)
		t.logf("drive-%s: transferred %s of %s (100.00%%) in 1s, ready", key, schema.FormatSize(m.vol.Size), schema.FormatSize(m.vol.Size))
	}
	nvol := s.copyVolume(m.vol, m.v, m.target, format)
	t.logf("create full clone of drive %s (%s)", key, m.vol.volid())
	if m.v.Conf["template"] == "1" {
		s.toBase(nvol)
	}
	m.v.Conf[key] = printDrive(nvol.volid(), clonedDriveProps(m.rest, nvol))
	if del {
		t.logf("removing source volume '%s' after successful copy", m.vol.volid())
		delete(s.st.Volumes, m.vol.volid())
	} else {
		unused := s.addUnused(m.v, m.vol.volid())
		t.logf("adding source volume '%s' as '%s' to config", m.vol.volid(), unused)
	}
}

// moveVolume is POST /nodes/{node}/lxc/{vmid}/move_volume to another
// storage (pve-container API2/LXC.pm move_volume): Datastore.AllocateSpace
// on the target; under the config lock in the API process the container
// must be stopped and unlocked, the digest current, and the lock "disk"
// is set; the move_volume worker copies the volume, writes it into the
// config (checking the digest again), frees the source with delete (else
// it becomes unusedN) and removes the lock.
func (s *Server) moveVolume(k *guestKind, q *request) (any, error) {
	storeID, targetVMID := q.get("storage"), q.get("target-vmid")
	switch {
	case storeID != "" && targetVMID != "":
		return nil, fail(http.StatusInternalServerError, "either set storage or target-vmid, but not both")
	case targetVMID != "":
		return nil, fail(http.StatusNotImplemented, "moving a volume to another container (target-vmid) is not supported by the simulator")
	case storeID == "":
		msg := "both 'storage' and 'target-vmid' missing, either needs to be set"
		return nil, paramErr(map[string]string{"target-vmid": msg, "storage": msg})
	}
	if err := s.check(q.user, "/storage/"+storeID, "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	node, id, key := q.vars["node"], vmidOf(q), q.get("volume")
	if _, err := s.guestAt(k, node, id); err != nil {
		return nil, err
	}
	if err := s.lockNow(q, s.guestLock(k, id)); err != nil {
		return nil, err
	}
	v, err := s.guestAt(k, node, id)
	if err != nil {
		return nil, err
	}
	if err := s.configLock(v, false); err != nil {
		return nil, err
	}
	if v.Running {
		return nil, fail(http.StatusInternalServerError, "cannot move volumes of a running container")
	}
	if isUnusedKey(key) {
		return nil, fail(http.StatusInternalServerError, "cannot move volume '%s', only configured volumes can be moved to another storage", key)
	}
	val, ok := v.Conf[key]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "volume '%s' does not exist in the configuration of CT %d", key, id)
	}
	if err := assertIfModified(q, digest(v)); err != nil {
		return nil, err
	}
	file, rest := diskFile(val)
	// nil for a bind mount or device: LXC.pm copy_volume refuses it in
	// the worker.
	vol := s.st.Volumes[file]
	v.Conf["lock"] = "disk"
	seen := digest(v)
	return s.startWorker(node, "move_volume", vmidString(id), worker{
		run: func(t *task) error {
			defer func() {
				if s.st.VMs[id] == v && v.Conf["lock"] == "disk" {
					delete(v.Conf, "lock")
				}
			}()
			if vol == nil {
				return fmt.Errorf("cannot copy volumes of type bind")
			}
			st, err := s.moveTargetStorage(storeID, node)
			if err != nil {
				return err
			}
			nvol := s.copyVolume(vol, v, st, "")
			nvol.Content = "rootdir"
			if v.Conf["template"] == "1" {
				s.toBase(nvol)
			}
			if digest(v) != seen {
				delete(s.st.Volumes, nvol.volid())
				return fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
			}
			v.Conf[key] = printDrive(nvol.volid(), rest)
			if q.bool("delete") {
				delete(s.st.Volumes, vol.volid())
			} else {
				s.addUnused(v, vol.volid())
			}
			return nil
		},
	}).UPID, nil
}

// copyVolume makes the copy of vol on st for guest v, as clone_disk and
// alloc_disk name it: a cloud-init volume keeps its special name, an
// image gets the next free disk number; the format is the one asked for,
// else the source's if the target holds it, else the target's default
// (qemu-server clone_disk, resolve_dst_disk_format).
func (s *Server) copyVolume(vol *volume, v *vm, st *storage, format string) *volume {
	if strings.Contains(vol.Name, "cloudinit") {
		if format == "" {
			format = vol.Format
		}
		name, f := cloudinitName(st, v.VMID, format)
		nvol := &volume{Storage: st.ID, Name: name, Content: vol.Content, Format: f, Size: vol.Size, VMID: v.VMID, Ctime: time.Now().Unix()}
		s.st.addVolume(nvol)
		return nvol
	}
	if format == "" {
		format = vol.Format
	}
	nvol := s.allocImageFormat(st, v.VMID, vol.Size, "vm", format)
	nvol.Content = vol.Content
	return nvol
}

// clonedDriveProps are a copied drive's options as clone_disk writes
// them: without "format", with the new volume's size (qemu-server
// QemuServer.pm clone_disk).
func clonedDriveProps(rest []schema.KV, nvol *volume) []schema.KV {
	return schema.SetProp(schema.DeleteProp(rest, "format"), "size", schema.FormatSize(nvol.Size))
}

// toBase renames a template's copied volume to a base volume
// (template_create for the moved disk).
func (s *Server) toBase(vol *volume) {
	delete(s.st.Volumes, vol.volid())
	vol.Name = strings.Replace(vol.Name, fmt.Sprintf("vm-%d-disk-", vol.VMID), fmt.Sprintf("base-%d-disk-", vol.VMID), 1)
	s.st.addVolume(vol)
}

// addUnused is add_unused_volume: the first free unusedN names volid.
func (s *Server) addUnused(v *vm, volid string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("unused%d", i)
		if _, used := v.Conf[k]; !used {
			v.Conf[k] = volid
			return k
		}
	}
}

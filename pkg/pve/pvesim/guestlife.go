package pvesim

import (
	"errors"
	"fmt"
	"net/http"
)

// Creating and destroying a guest: the locks PVE takes on the way.

// createLock is create_and_lock_config (pve-guest-common
// AbstractConfig.pm): the new vmid's lock, taken in the API process with a
// 5 s timeout; qemu-server and pve-container create_vm prefix its failure
// with "unable to create VM|CT N -". The vmid must still be free after
// the wait (check_vmid_unused runs under the lock).
func (s *Server) createLock(k *guestKind, q *request, id int) error {
	err := s.lockNow(q, lockReq{vmid: id, wait: s.pveWait(5), kind: k})
	if err == nil {
		if old, exists := s.st.VMs[id]; exists {
			err = s.vmidTaken(old)
		}
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusInternalServerError {
		return fail(ae.status, "unable to create %s - %s", k.name(id), ae.msg)
	}
	return err
}

// startCreate registers v as a stub locked "create" and starts the create
// worker: work writes its log (allocations, extraction), then the worker
// installs conf, joins the pool and starts the guest when asked. The
// worker takes the vmid's lock again (qemu-server: lock_config_full for
// 1 s; pve-container: lock_config); if it cannot, qemu-server unlinks the
// config while pve-container leaves the stub locked.
func (s *Server) startCreate(k *guestKind, v *vm, conf map[string]string, poolID string, q *request, work func(t *task)) string {
	start, ha := q.bool("start"), q.bool("ha-managed")
	v.Conf["lock"] = "create"
	s.st.VMs[v.VMID] = v
	id := v.VMID
	return s.startWorker(v.Node, k.tasks+"create", vmidString(id), worker{
		locks:       []lockReq{{vmid: id, wait: s.pveWait(k.createLockWait)}},
		uncontended: true, // rolled at createLock
		abort: func() {
			for _, vol := range s.st.volumesOf(id) {
				delete(s.st.Volumes, vol.volid())
			}
			if !k.createKeepsStub {
				delete(s.st.VMs, id)
			}
		},
		run: func(t *task) error {
			work(t)
			v.Conf = conf
			if poolID != "" {
				if p, ok := s.st.Pools[poolID]; ok {
					p.VMs = append(p.VMs, id)
				}
			}
			// qemu-server adds the HA resource before its autostart,
			// pve-container after (ha_purge.go).
			if ha && k != s.lxc {
				s.haAddCreated(t, k, v, start)
			}
			if start {
				if err := s.startGuest(t, v); err != nil {
					return err
				}
			}
			if ha && k == s.lxc {
				s.haAddCreated(t, k, v, start)
			}
			return nil
		},
	}).UPID
}

func (s *Server) destroyGuest(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	// Checked before the worker forks and again once it holds the lock
	// (qemu-server destroy_vm $early_checks, pve-container destroy_vm):
	// the guest may have changed while the worker waited.
	check := func() (*vm, error) {
		v, err := s.writableGuest(k, q)
		if err != nil {
			return nil, err
		}
		if v.Conf["protection"] == "1" {
			return nil, fail(http.StatusInternalServerError, "can't remove %s - protection mode enabled", k.name(v.VMID))
		}
		if err := s.destroyRefusal(v, q.bool("purge")); err != nil {
			return nil, err // ha_purge.go
		}
		if v.Running {
			return nil, fail(http.StatusInternalServerError, k.destroyRunning, v.VMID)
		}
		return v, nil
	}
	if _, err := check(); err != nil {
		return nil, err
	}
	return s.startWorker(node, k.tasks+"destroy", vmidString(id), worker{
		locks: []lockReq{s.exclusive(id)},
		begin: func(*task) error { _, err := check(); return err },
		run: func(t *task) error {
			v := s.st.VMs[id]
			// destroy_vm refuses, inside the worker, a template whose base
			// volumes linked clones still use (qemu-server
			// src/PVE/QemuServer.pm destroy_vm, "linked cloned" as PVE
			// words it; pve-storage Storage.pm volume_is_base_and_used
			// decides, blind to LVM-thin clones).
			if v.Conf["template"] == "1" {
				for _, vol := range s.st.volumesOf(id) {
					if s.st.volumeInUseAsBase(vol.volid()) {
						return fmt.Errorf("base volume '%s' is still in use by linked cloned", vol.volid())
					}
				}
			}
			for _, vol := range s.st.volumesOf(id) {
				delete(s.st.Volumes, vol.volid())
				t.logf("  Logical volume \"%s\" successfully removed.", vol.Name)
			}
			s.st.removeFromPools(id)
			delete(s.st.VMs, id)
			s.dropACLTree("/vms/" + vmidString(id)) // remove_vm_access
			s.removeGuestFirewall(id)               // remove_vmfw_conf
			if q.bool("purge") {
				t.logf("purging %s %d from related configurations..", k.noun, id)
				s.purgeGuest(t, v) // ha_purge.go
			}
			return nil
		},
	}).UPID, nil
}

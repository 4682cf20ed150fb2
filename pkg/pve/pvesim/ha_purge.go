package pvesim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// What a guest's destroy does to the HA, replication and backup
// configuration (qemu-server API2/Qemu.pm destroy_vm $early_checks and
// its worker; pve-container's destroy does the same): without purge, an
// HA-managed guest or one with replication jobs is not destroyed; with
// purge, its replication jobs go (ReplicationConfig.pm remove_vmid_jobs),
// it leaves every backup job (pve-guest-common VZDump/Plugin.pm
// remove_vmid_from_backup_jobs: a job of only that guest goes) and its
// HA resource goes, out of the rules too (delete_service_from_config).
// And what a create with ha-managed adds (haAddCreated).

// destroyRefusal is $early_checks without purge.
func (s *Server) destroyRefusal(v *vm, purge bool) error {
	if purge {
		return nil
	}
	if _, _, ok := s.haConfigured(v); ok {
		return fail(http.StatusInternalServerError, "unable to remove %s %d - used in HA resources and purge parameter not set.", s.kindOf(v).noun, v.VMID)
	}
	if s.st.Jobs != nil {
		for _, id := range sortedKeys(s.st.Jobs.Replication) {
			if g, _, _ := parseReplJobID(id); g == v.VMID {
				return fail(http.StatusInternalServerError, "There is a replication job '%s' for guest '%d' - Please remove that first.", id, v.VMID)
			}
		}
	}
	return nil
}

// haConfigured is service_is_configured (whatever its state).
func (s *Server) haConfigured(v *vm) (string, map[string]string, bool) {
	if s.st.HA == nil {
		return "", nil, false
	}
	typ := "vm"
	if v.Type == s.lxc.typ {
		typ = "ct"
	}
	sid := typ + ":" + strconv.Itoa(v.VMID)
	opts, ok := s.st.HA.Resources[sid]
	return sid, opts, ok
}

// purgeGuest is the worker's purge of the related configurations.
func (s *Server) purgeGuest(t *task, v *vm) {
	id := strconv.Itoa(v.VMID)
	if s.st.Jobs != nil {
		for _, jid := range sortedKeys(s.st.Jobs.Replication) {
			if g, _, _ := parseReplJobID(jid); g == v.VMID {
				delete(s.st.Jobs.Replication, jid)
			}
		}
		for _, jid := range sortedKeys(s.st.Jobs.Backup) {
			job := s.st.Jobs.Backup[jid]
			if list, ok := job["vmid"]; ok {
				left := withoutVMID(list, id)
				if left == "" {
					delete(s.st.Jobs.Backup, jid)
					delete(s.st.Jobs.BackupOrder, jid)
					continue
				}
				job["vmid"] = left
			} else if list, ok := job["exclude"]; ok {
				if left := withoutVMID(list, id); left != "" {
					job["exclude"] = left
				} else {
					delete(job, "exclude")
				}
			}
		}
	}
	if sid, _, ok := s.haConfigured(v); ok {
		h := s.ha()
		delete(h.Resources, sid)
		h.purgeFromRules(sid)
		t.logf("NOTE: removed %s %d from HA resource configuration.", s.kindOf(v).noun, v.VMID)
	}
}

// withoutVMID is remove_vmid_from_list.
func withoutVMID(list, vmid string) string {
	return strings.Join(slices.DeleteFunc(splitKeys(list), func(x string) bool { return x == vmid }), ",")
}

// haAddCreated is a create's ha-managed (qemu-server API2/Qemu.pm
// create_vm, pve-container API2/LXC.pm create_vm): "ha-manager add" of
// the new guest, its state started when the create starts it, else
// stopped; a failure of the command is only a warning.
func (s *Server) haAddCreated(t *task, k *guestKind, v *vm, start bool) {
	t.logf("Add as HA resource")
	typ, state := "vm", "stopped"
	if k == s.lxc {
		typ = "ct"
	}
	if start {
		state = "started"
	}
	sid := typ + ":" + strconv.Itoa(v.VMID)
	h := s.ha()
	if _, dup := h.Resources[sid]; dup {
		t.logf("create resource failed: resource ID '%s' already defined", sid)
		t.logf("command 'ha-manager add %s --state %s' failed: exit code 255", sid, state)
		return
	}
	h.Resources[sid] = map[string]string{"type": typ, "state": state}
}

package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// prepareMigration is the worker's prepare and phase 1 under the lock
// (QemuMigrate.pm prepare, scan_local_volumes, phase1; LXC/Migrate.pm
// prepare, phase1).
func (s *Server) prepareMigration(m *migration, k *guestKind, v *vm, target string, q *request) error {
	if err := s.configLock(v, false); err != nil {
		return err
	}
	if k == s.lxc {
		return s.prepareCTMigration(m, v, target, q)
	}
	if v.Running && !q.bool("online") {
		return fmt.Errorf("can't migrate running VM without --online")
	}
	if err := s.checkLocalDevices(m, v, target, q); err != nil {
		return err
	}
	for _, gv := range s.guestVolumes(v) {
		if gv.vol == nil {
			continue
		}
		st, err := s.moveTargetStorage(gv.vol.Storage, target)
		if err != nil {
			return err
		}
		if !st.allows(gv.vol.Content) {
			return fmt.Errorf("%s: content type '%s' is not available on storage '%s'", gv.volid, gv.vol.Content, st.ID)
		}
	}
	m.log("info", "starting migration of VM %d to node '%s' (%s)", v.VMID, target, s.nodeIP(target))
	v.Conf["lock"] = "migrate"
	if err := s.scanLocalVolumes(m, v, q); err != nil {
		return err
	}
	for _, gv := range s.guestVolumes(v) {
		if gv.vol != nil && gv.vol.Parent != "" && s.isLocal(gv) {
			return fmt.Errorf("Problem found while scanning volumes - can't migrate '%s' as it's a clone of '%s'", gv.volid, gv.vol.Parent)
		}
	}
	return nil
}

// checkLocalDevices refuses a VM whose local devices keep it where it is:
// an unmapped one unless the VM is stopped and forced, a mapped one the
// target lacks or a running VM's that cannot be live-migrated.
func (s *Server) checkLocalDevices(m *migration, v *vm, target string, q *request) error {
	local, mapped, missing := s.localResources(v, v.Running)
	var blocking []string
	for _, r := range local {
		if _, ok := mapped[r]; !ok {
			blocking = append(blocking, r)
		}
	}
	if len(blocking) > 0 {
		if v.Running || !q.bool("force") {
			return fmt.Errorf("can't migrate VM which uses local devices: %s", strings.Join(blocking, ", "))
		}
		m.log("info", "migrating VM which uses local devices")
	}
	if len(mapped) == 0 {
		return nil
	}
	var notLive []string
	for _, key := range slices.Sorted(maps.Keys(mapped)) {
		if mapped[key]["live-migration"] == nil {
			notLive = append(notLive, fmt.Sprintf("%s:%s", key, mapped[key]["name"]))
		}
	}
	switch {
	case len(missing[target]) > 0:
		return fmt.Errorf("can't migrate to '%s': missing mapped devices %s", target, strings.Join(missing[target], ", "))
	case v.Running && len(notLive) > 0:
		return fmt.Errorf("can't live migrate running VM which uses following mapped devices: %s", strings.Join(notLive, ", "))
	}
	m.log("info", "migrating VM which uses mapped local devices")
	return nil
}

// scanLocalVolumes logs the VM's local volumes and refuses the migration
// when one of them cannot move, every problem logged first.
func (s *Server) scanLocalVolumes(m *migration, v *vm, q *request) error {
	problems := map[string]string{}
	for _, gv := range s.guestVolumes(v) {
		if !s.isLocal(gv) {
			continue
		}
		switch {
		case gv.vol == nil && gv.volid == "cdrom":
			problems[""] = "can't migrate local cdrom drive"
			continue
		case gv.vol == nil:
			problems[gv.volid] = "local file/device"
			continue
		case gv.cdrom && !gv.cloudinit:
			problems[gv.volid] = "local cdrom image"
			continue
		case s.snapshotMigrationProblem(s.qemu, v, gv) != "":
			problems[gv.volid] = s.snapshotMigrationProblem(s.qemu, v, gv)
			continue
		case s.st.volumeInUseAsBase(gv.volid):
			problems[gv.volid] = "referenced by linked clone(s)"
			continue
		case gv.cloudinit:
			m.log("info", "found generated disk '%s' (in current VM config)", gv.volid)
		case gv.unused:
			m.log("info", "found local disk '%s' (unused)", gv.volid)
		default:
			if v.Running && !q.bool("with-local-disks") {
				problems[gv.volid] = "can't live migrate attached local disks without with-local-disks option"
			}
			m.log("info", "found local disk '%s' (attached)", gv.volid)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	for _, volid := range slices.Sorted(maps.Keys(problems)) {
		if volid == "" {
			m.log("warn", "%s", problems[volid])
			continue
		}
		m.log("warn", "can't migrate local disk '%s': %s", volid, problems[volid])
	}
	return fmt.Errorf("Problem found while scanning volumes - can't migrate VM - check log")
}

// prepareCTMigration is LXC/Migrate.pm prepare and phase1's start: live
// migration does not exist for containers; a running one moves in restart
// mode, shut down here; bind mounts and devices stay on their node.
func (s *Server) prepareCTMigration(m *migration, v *vm, target string, q *request) error {
	if v.Running {
		if q.bool("online") {
			return fmt.Errorf("lxc live migration is currently not implemented")
		}
		if !q.bool("restart") {
			return fmt.Errorf("running container can only be migrated in restart mode")
		}
	}
	for _, gv := range s.guestVolumes(v) {
		if gv.vol == nil {
			if strings.HasPrefix(gv.volid, "/") && !strings.Contains(v.Conf[gv.key], "shared=1") {
				return fmt.Errorf("cannot migrate local bind mount point '%s'", gv.key)
			}
			continue
		}
		st := s.st.Storages[gv.vol.Storage]
		if st == nil || !st.allows("rootdir") {
			return fmt.Errorf("content type 'rootdir' is not available on storage '%s'", gv.vol.Storage)
		}
		tst, err := s.moveTargetStorage(gv.vol.Storage, target)
		if err != nil {
			return err
		}
		if !tst.allows("rootdir") {
			return fmt.Errorf("%s: content type 'rootdir' is not available on storage '%s'", gv.volid, tst.ID)
		}
	}
	if v.Running {
		m.log("info", "shutdown CT %d", v.VMID)
		v.Running, v.StartedAt = false, 0
	}
	m.log("info", "starting migration of CT %d to node '%s' (%s)", v.VMID, target, s.nodeIP(target))
	v.Conf["lock"] = "migrate"
	problems := map[string]string{}
	for _, gv := range s.guestVolumes(v) {
		if gv.vol != nil && s.isLocal(gv) {
			if p := s.snapshotMigrationProblem(s.lxc, v, gv); p != "" {
				problems[gv.volid] = p
			}
			m.log("info", "found local volume '%s' (in current VM config)", gv.volid)
		}
	}
	for _, volid := range slices.Sorted(maps.Keys(problems)) {
		m.log("warn", "can't migrate local volume '%s': %s", volid, problems[volid])
	}
	if len(problems) > 0 {
		return fmt.Errorf("can't migrate CT - check log")
	}
	return nil
}

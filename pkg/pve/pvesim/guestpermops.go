package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The guest handlers' permission checks, by operation (see guestperm.go).

// checkCreatePerms is what create_vm checks once the vmid is free and the
// pool exists: VM.Allocate on /vms/N or the pool, then every setting.
func (s *Server) checkCreatePerms(k *guestKind, q *request, vmid int, pool string) error {
	keys, _, _, err := configParams(k, q)
	if err != nil {
		return err
	}
	vals := reqValues(q, keys)
	if k.typ == s.lxc.typ {
		return s.checkCTCreate(q, vmid, pool, vals)
	}
	user := q.user
	if q.has("storage") {
		if err := s.check(user, "/storage/"+q.get("storage"), "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if q.bool("ha-managed") {
		if err := s.check(user, "/", "Sys.Console"); err != nil {
			return err
		}
	}
	// vm_start runs inside the create worker, so create checks its
	// privilege up front.
	if q.bool("start") {
		if err := s.checkVMPerm(user, vmid, pool, false, "VM.PowerMgmt"); err != nil {
			return err
		}
	}
	if err := s.canAllocate(user, vmid, pool); err != nil {
		return err
	}
	if len(vals) == 0 {
		return nil
	}
	if err := s.checkQemuStorage(user, vmid, vals, q.get("storage")); err != nil {
		return err
	}
	if err := s.checkQemuKeys(user, vmid, pool, keys); err != nil {
		return err
	}
	if err := s.checkQemuDevices(user, vmid, pool, vals); err != nil {
		return err
	}
	if err := s.checkBridges(user, vals); err != nil {
		return err
	}
	if _, ok := vals["tags"]; ok {
		// assert_tag_permissions (pve-guest-common GuestHelpers.pm); PVE
		// runs it in the create worker.
		return s.checkVMPerm(user, vmid, "", false, "VM.Config.Options")
	}
	return nil
}

// checkCTCreate is pve-container's create_vm: a privileged container
// needs Sys.Modify on /, the template read access, every storage
// Datastore.AllocateSpace.
func (s *Server) checkCTCreate(q *request, vmid int, pool string, vals map[string]string) error {
	user := q.user
	unprivileged := !q.has("unprivileged") || q.bool("unprivileged")
	if !q.bool("restore") && !unprivileged {
		if err := s.check(user, "/", "Sys.Modify"); err != nil {
			return err
		}
	}
	if q.bool("ha-managed") {
		if err := s.check(user, "/", "Sys.Console"); err != nil {
			return err
		}
	}
	if err := s.canAllocate(user, vmid, pool); err != nil {
		return err
	}
	delete(vals, "unprivileged") // create_vm takes it out before the check
	if err := s.checkCTModify(user, vmid, pool, nil, vals, nil, unprivileged); err != nil {
		return err
	}
	want := "vztmpl"
	if q.bool("restore") {
		want = "backup"
	}
	if err := s.checkVolumeAccess(user, vmid, q.get("ostemplate"), want); err != nil {
		return err
	}
	storage := orDefault(q.get("storage"), "local")
	rootfs := false
	for _, key := range slices.Sorted(maps.Keys(vals)) {
		if key != "rootfs" && !strings.HasPrefix(key, "mp") {
			continue
		}
		rootfs = rootfs || key == "rootfs"
		file, _ := diskFile(vals[key])
		if strings.HasPrefix(file, "/") {
			return fail(http.StatusInternalServerError, "Only root can pass arbitrary filesystem paths.")
		}
		sid, _, found := strings.Cut(file, ":")
		if !found {
			sid = storage // a bare size takes the default storage
		}
		if err := s.check(user, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if !rootfs {
		return s.check(user, "/storage/"+storage, "Datastore.AllocateSpace")
	}
	return nil
}

// checkCTModify is check_ct_modify_config_perm for new values and deleted
// keys of a container (old is its config, nil at create).
func (s *Server) checkCTModify(user string, vmid int, pool string, old, vals map[string]string, deletes []string, unprivileged bool) error {
	vm := func(privs ...string) error { return s.checkVMPerm(user, vmid, pool, false, privs...) }
	check := func(opt string, del bool) error {
		o := acl.CTOption(opt)
		switch {
		case o.RootOnly && ctDevRe.MatchString(opt):
			return permFail("configuring device passthrough is only allowed for root@pam")
		case o.RootOnly:
			return permFail("changing the " + opt + " is only allowed for root@pam")
		case opt == "features":
			return s.checkCTFeatures(user, vmid, pool, old[opt], vals[opt], del, unprivileged)
		}
		if err := vm(o.Privs...); err != nil || !o.ByValue {
			return err
		}
		if isNetKey(opt) { // the old bridge too, also on delete
			if old[opt] != "" {
				if err := s.checkBridge(user, old[opt]); err != nil {
					return err
				}
			}
			if vals[opt] != "" {
				return s.checkBridge(user, vals[opt])
			}
			return nil
		}
		if del { // rootfs, mpN
			return nil
		}
		file, _ := diskFile(vals[opt])
		if strings.HasPrefix(file, "/") {
			return permFail("mount point type bind is only allowed for root@pam")
		}
		if m := ctNewDiskRe.FindStringSubmatch(file); m != nil {
			return s.check(user, "/storage/"+m[1], "Datastore.AllocateSpace")
		}
		return s.checkVolumeAccess(user, vmid, file, "rootdir")
	}
	for _, opt := range slices.Sorted(maps.Keys(vals)) {
		if err := check(opt, false); err != nil {
			return err
		}
	}
	for _, opt := range deletes {
		if err := check(opt, true); err != nil {
			return err
		}
	}
	return nil
}

// checkCTFeatures: only nesting may be changed, with VM.Allocate, and only
// on an unprivileged container; other feature flags are root@pam's.
func (s *Server) checkCTFeatures(user string, vmid int, pool, old, val string, del, unprivileged bool) error {
	if !unprivileged {
		return permFail("changing feature flags for privileged container is only allowed for root@pam")
	}
	feats := func(v string) map[string]string {
		out := map[string]string{}
		for _, kv := range props(v) {
			out[kv.Key] = kv.Value
		}
		return out
	}
	nesting, other := false, false
	switch newF, oldF := feats(val), feats(old); {
	case del:
		_, n := oldF["nesting"]
		nesting, other = len(oldF) == 1 && n, len(oldF) > 0 && !(len(oldF) == 1 && n)
	case old != "":
		for _, f := range slices.Sorted(maps.Keys(mergeKeys(oldF, newF))) {
			if oldF[f] != newF[f] {
				if f != "nesting" {
					other = true
					break
				}
				nesting = true
			}
		}
	default:
		_, n := newF["nesting"]
		nesting, other = len(newF) == 1 && n, len(newF) > 0 && !(len(newF) == 1 && n)
	}
	if other {
		return permFail("changing feature flags (except nesting) is only allowed for root@pam")
	}
	if nesting {
		return s.checkVMPerm(user, vmid, pool, false, "VM.Allocate")
	}
	return nil
}

func mergeKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// checkUpdatePerms is what a config update checks beyond its rule:
// update_vm_api (QEMU) and update_vm (pve-container API2/LXC/Config.pm).
// PVE checks the per-drive and tag privileges of a POST inside its worker;
// the simulator checks them with the request.
func (s *Server) checkUpdatePerms(k *guestKind, q *request, v *vm, keys, deletes, reverts []string) error {
	user := q.user
	vals := reqValues(q, keys)
	conf := effectiveConf(v)
	if k.typ == s.lxc.typ {
		unprivileged := conf["unprivileged"] == "1"
		if err := s.checkCTModify(user, v.VMID, "", conf, nil, deletes, unprivileged); err != nil {
			return err
		}
		if err := s.checkCTModify(user, v.VMID, "", conf, nil, reverts, unprivileged); err != nil {
			return err
		}
		return s.checkCTModify(user, v.VMID, "", conf, vals, nil, unprivileged)
	}
	dels := make([]string, len(deletes))
	for i, d := range deletes {
		dels[i] = d
		if d == "cdrom" {
			dels[i] = "ide2"
		}
	}
	if err := s.checkQemuKeys(user, v.VMID, "", dels); err != nil {
		return err
	}
	if err := s.checkQemuKeys(user, v.VMID, "", keys); err != nil {
		return err
	}
	if err := s.checkQemuStorage(user, v.VMID, vals, ""); err != nil {
		return err
	}
	if err := s.checkBridges(user, vals); err != nil {
		return err
	}
	if err := s.checkQemuDeletePerms(user, v, conf, dels); err != nil {
		return err
	}
	return s.checkQemuWritePerms(user, v, vals)
}

// checkQemuDeletePerms is update_vm_api's per-key check of the keys to
// delete (conf is the VM's config with its pending values).
func (s *Server) checkQemuDeletePerms(user string, v *vm, conf map[string]string, dels []string) error {
	for _, opt := range dels {
		val, ok := conf[opt]
		if !ok {
			continue // PVE warns and goes on
		}
		var err error
		switch {
		case isUnusedKey(opt):
			err = s.checkVMPerm(user, v.VMID, "", false, "VM.Config.Disk")
		case acl.IsQemuDrive(opt):
			err = s.checkVMPerm(user, v.VMID, "", false, acl.DrivePrivs(val)...)
		case qemuValueKeyRe.MatchString(opt):
			err = s.checkQemuDevice(user, v.VMID, "", opt, val)
		case opt == "tags":
			err = s.checkVMPerm(user, v.VMID, "", false, "VM.Config.Options")
		case isNetKey(opt):
			err = s.checkBridge(user, val)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkQemuWritePerms is update_vm_api's per-key check of the values to
// write: a drive or device is checked as it was and as it becomes.
func (s *Server) checkQemuWritePerms(user string, v *vm, vals map[string]string) error {
	vm := func(privs ...string) error { return s.checkVMPerm(user, v.VMID, "", false, privs...) }
	drive := func(val string) error { return vm(acl.DrivePrivs(val)...) }
	for _, opt := range slices.Sorted(maps.Keys(vals)) {
		if p, ok := v.Pending[opt]; ok && p == vals[opt] {
			continue // unchanged
		}
		var err error
		switch old, had := v.Conf[opt]; {
		case acl.IsQemuDrive(opt):
			if had {
				err = drive(old)
			}
			if err == nil {
				err = drive(vals[opt])
			}
		case strings.HasPrefix(opt, "serial"):
			if (!had || old == "socket") && vals[opt] == "socket" {
				err = vm("VM.Config.HWType")
			} else {
				err = fail(http.StatusInternalServerError, "only root can modify '%s' config for real devices", opt)
			}
		case qemuValueKeyRe.MatchString(opt):
			if had {
				err = s.checkQemuDevice(user, v.VMID, "", opt, old)
			}
			if err == nil {
				err = s.checkQemuDevice(user, v.VMID, "", opt, vals[opt])
			}
		case opt == "tags":
			err = vm("VM.Config.Options")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkClonePerms is what clone_vm checks of the source's volumes and
// NICs: Datastore.AllocateSpace where each disk lands, SDN.Use on each
// bridge (QEMU: check_storage_access_clone, check_bridge_access;
// pve-container: the same in its clone loop).
func (s *Server) checkClonePerms(k *guestKind, q *request, src *vm) error {
	user := q.user
	target := q.get("storage")
	for _, key := range slices.Sorted(maps.Keys(src.Conf)) {
		val := src.Conf[key]
		switch {
		case isNetKey(key):
			if err := s.checkBridge(user, val); err != nil {
				return err
			}
		case k.typ == s.lxc.typ && (key == "rootfs" || ctMountRe.MatchString(key)):
			file, _ := diskFile(val)
			if strings.HasPrefix(file, "/") {
				return fail(http.StatusInternalServerError, "unable to clone mountpoint '%s' (type bind)", key)
			}
			sid, _, _ := strings.Cut(file, ":")
			if err := s.check(user, "/storage/"+orDefault(target, sid), "Datastore.AllocateSpace"); err != nil {
				return err
			}
		case k.typ != s.lxc.typ && acl.IsQemuDrive(key):
			file, _ := diskFile(val)
			switch {
			case file == "" || file == "none":
			case isCDROM(val, false):
				if file == "cdrom" {
					if err := s.check(user, "/", "Sys.Console"); err != nil {
						return err
					}
				}
			default:
				sid, _, _ := strings.Cut(file, ":")
				if err := s.check(user, "/storage/"+orDefault(target, sid), "Datastore.AllocateSpace"); err != nil {
					return err
				}
			}
		case k.typ != s.lxc.typ && key == "vmstatestorage":
			if err := s.check(user, "/storage/"+val, "Datastore.AllocateSpace"); err != nil {
				return err
			}
		case k.typ != s.lxc.typ && (strings.HasPrefix(key, "usb") || strings.HasPrefix(key, "hostpci")):
			// check_mapping_access: real devices are root@pam's.
			p := props(val)
			if host, _ := schema.PropValue(p, "host"); host != "" && !strings.EqualFold(host, "spice") {
				return fail(http.StatusInternalServerError, "only root can set '%s' config for real devices", key)
			}
		}
	}
	return nil
}

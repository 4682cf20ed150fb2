package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The permission checks the guest handlers make beyond their method's
// rule: per config key, per drive and storage, per bridge. QEMU follows
// qemu-server src/PVE/API2/Qemu.pm (check_vm_modify_config_perm,
// check_storage_access, the check_*_perm subs, create_vm, update_vm_api,
// clone_vm), containers pve-container src/PVE/LXC.pm
// (check_ct_modify_config_perm) and src/PVE/API2/LXC.pm. Requests run as
// tokens, which are never root@pam: root-only settings are refused.

var (
	// qemuNewDiskRe is QemuServer/Drive.pm's $NEW_DISK_RE: "[storage:]size".
	qemuNewDiskRe = lazyre.New(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)
	// Container keys (pve-container LXC.pm, $NEW_DISK_RE).
	ctMountRe   = lazyre.New(`^mp\d+$`)
	ctDevRe     = lazyre.New(`^dev\d+$`)
	ctNewDiskRe = lazyre.New(`^([^:\s]+):(\d+(\.\d+)?)$`)
	// qemuValueKeyRe are the device keys checked by value.
	qemuValueKeyRe = lazyre.New(`^((serial|usb|hostpci|virtiofs)\d+|rng0)$`)
	// Volume names parse_volname reads an owner from.
	backupNameRe = lazyre.New(`vzdump-(qemu|lxc|openvz)-(\d+)-`)
	imageNameRe  = lazyre.New(`^(vm|base|subvol|basevol)-(\d+)-`)
	// cloudinitFileRe is drive_is_cloudinit.
	cloudinitFileRe = lazyre.New(`[:/](vm-\d+-)?cloudinit(\.(raw|qcow2|vmdk|cloop|cow|qcow|qed|vhdx|vpc))?$`)
)

// checkQemuKeys is check_vm_modify_config_perm: each option's category
// decides the privilege (acl.QemuOption); drives and devices are checked
// by value elsewhere; an option of no category is root@pam's alone.
func (s *Server) checkQemuKeys(user string, vmid int, pool string, keys []string) error {
	for _, key := range slices.Sorted(slices.Values(keys)) {
		o := acl.QemuOption(key)
		if o.RootOnly {
			return fail(http.StatusInternalServerError, "only root can set '%s' config", key)
		}
		if len(o.Privs) > 0 {
			if err := s.checkVMPerm(user, vmid, pool, o.Any, o.Privs...); err != nil {
				return err
			}
		}
		for _, p := range o.Root {
			if err := s.check(user, "/", p); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkQemuDevice is check_usb_perm, check_hostpci_perm, check_rng_perm,
// check_dir_perm and the serial port check for one key and value.
func (s *Server) checkQemuDevice(user string, vmid int, pool, key, val string) error {
	p := props(val)
	get := func(k string) string {
		if v, ok := schema.PropValue(p, k); ok {
			return v
		}
		// An unnamed first value is the format's default key.
		if len(p) > 0 && p[0].Key == "" && k == qemuDeviceDefaultKey(key) {
			return p[0].Value
		}
		return ""
	}
	switch {
	case strings.HasPrefix(key, "serial"):
		if val != "socket" {
			return fail(http.StatusInternalServerError, "only root can set '%s' config for real devices", key)
		}
		return s.checkVMPerm(user, vmid, pool, false, "VM.Config.HWType")
	case strings.HasPrefix(key, "usb"):
		if err := s.checkVMPerm(user, vmid, pool, false, "VM.Config.HWType"); err != nil {
			return err
		}
		switch host, m := get("host"), get("mapping"); {
		case host != "" && !strings.EqualFold(host, "spice"):
			return fail(http.StatusInternalServerError, "only root can set '%s' config for real devices", key)
		case host == "" && m != "":
			return s.check(user, "/mapping/usb/"+m, "Mapping.Use")
		case host == "":
			return fail(http.StatusInternalServerError, "either 'host' or 'mapping' must be set.")
		}
	case strings.HasPrefix(key, "hostpci"):
		switch m := get("mapping"); {
		case get("host") != "":
			return fail(http.StatusInternalServerError, "only root can set '%s' config for non-mapped devices", key)
		case m != "":
			if err := s.check(user, "/mapping/pci/"+m, "Mapping.Use"); err != nil {
				return err
			}
			if err := s.checkVMPerm(user, vmid, pool, false, "VM.Config.HWType"); err != nil {
				return err
			}
		default:
			return fail(http.StatusInternalServerError, "either 'host' or 'mapping' must be set.")
		}
		if get("romfile") != "" {
			return paramErr1(key, "only root@pam can set 'romfile' option")
		}
	case key == "rng0":
		if err := s.checkVMPerm(user, vmid, pool, false, "VM.Config.HWType"); err != nil {
			return err
		}
		if get("source") == "/dev/hwrng" {
			return s.check(user, "/mapping/hwrng", "Mapping.Use")
		}
	case strings.HasPrefix(key, "virtiofs"):
		if err := s.checkVMPerm(user, vmid, pool, false, "VM.Config.Disk"); err != nil {
			return err
		}
		return s.check(user, "/mapping/dir/"+get("dirid"), "Mapping.Use")
	}
	return nil
}

// qemuDeviceDefaultKey is the default key of a device's property string
// (pve-qm-usb, pve-qm-hostpci: host; pve-qm-rng: source; virtiofs: dirid).
func qemuDeviceDefaultKey(key string) string {
	switch {
	case strings.HasPrefix(key, "rng"):
		return "source"
	case strings.HasPrefix(key, "virtiofs"):
		return "dirid"
	}
	return "host"
}

func (s *Server) checkQemuDevices(user string, vmid int, pool string, vals map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(vals)) {
		if qemuValueKeyRe.MatchString(key) {
			if err := s.checkQemuDevice(user, vmid, pool, key, vals[key]); err != nil {
				return err
			}
		}
	}
	return nil
}

// isCDROM is drive_is_cdrom; without cloud-init drives when exclude.
func isCDROM(val string, exclude bool) bool {
	_, rest := diskFile(val)
	if exclude && isCloudinitDrive(val) {
		return false
	}
	m, _ := schema.PropValue(rest, "media")
	return m == "cdrom"
}

// volInfo is parse_volname's content type and owner of a volume: from the
// volume itself when it exists, else from its name.
func (s *Server) volInfo(volid string) (storage, vtype string, owner int) {
	storage, name, _ := strings.Cut(volid, ":")
	if v, ok := s.st.Volumes[volid]; ok {
		return storage, v.Content, v.VMID
	}
	switch dir, _, _ := strings.Cut(name, "/"); dir {
	case "iso", "vztmpl", "import", "snippets":
		return storage, dir, 0
	case "backup":
		if m := backupNameRe.FindStringSubmatch(name); m != nil {
			owner, _ = strconv.Atoi(m[2])
		}
		return storage, "backup", owner
	}
	base := name[strings.LastIndex(name, "/")+1:]
	if m := imageNameRe.FindStringSubmatch(base); m != nil {
		owner, _ = strconv.Atoi(m[2])
	}
	return storage, "images", owner
}

// checkVolumeAccess is pve-storage Storage.pm check_volume_access.
func (s *Server) checkVolumeAccess(user string, vmid int, volid, want string) error {
	if !volidRe.MatchString(volid) {
		return fail(http.StatusInternalServerError, "Only root can pass arbitrary filesystem paths.")
	}
	sid, vtype, owner := s.volInfo(volid)
	if want != "" && vtype != want && (want != "rootdir" || vtype != "images") {
		return fail(http.StatusInternalServerError, "unable to use volume %s - content type needs to be '%s'", volid, want)
	}
	path := "/storage/" + sid
	switch {
	case s.can(user, path, "Datastore.Allocate"):
		return nil
	case vtype == "iso" || vtype == "vztmpl" || vtype == "import":
		return s.checkAny(user, path, "Datastore.AllocateSpace", "Datastore.Audit")
	case owner != 0 && owner == vmid:
		return nil
	case vtype == "backup" && owner != 0:
		if err := s.check(user, path, "Datastore.AllocateSpace"); err != nil {
			return err
		}
		return s.check(user, fmt.Sprintf("/vms/%d", owner), "VM.Backup")
	case (vtype == "images" || vtype == "rootdir") && owner != 0:
		if err := s.check(user, path, "Datastore.Audit"); err != nil {
			return err
		}
		return s.check(user, fmt.Sprintf("/vms/%d", owner), "VM.Config.Disk")
	}
	return fail(http.StatusInternalServerError, "missing privileges to access %s", volid)
}

// checkQemuStorage is check_storage_access: a new disk needs
// Datastore.AllocateSpace on its storage, an existing volume access to it,
// a physical CD drive Sys.Console.
func (s *Server) checkQemuStorage(user string, vmid int, vals map[string]string, defStorage string) error {
	for _, key := range slices.Sorted(maps.Keys(vals)) {
		switch {
		case acl.IsQemuDrive(key):
			file, rest := diskFile(vals[key])
			_, volname, _ := strings.Cut(file, ":")
			switch m := qemuNewDiskRe.FindStringSubmatch(file); {
			case file == "" || file == "none" || file == "cloudinit" || volname == "cloudinit":
			case isCDROM(vals[key], false) && file == "cdrom":
				if err := s.check(user, "/", "Sys.Console"); err != nil {
					return err
				}
			case !isCDROM(vals[key], false) && m != nil:
				sid := m[2]
				if sid == "" {
					sid = defStorage
				}
				if err := s.check(user, "/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
					return err
				}
			default:
				if err := s.checkVolumeAccess(user, vmid, file, ""); err != nil {
					return err
				}
			}
			if src, ok := schema.PropValue(rest, "import-from"); ok && src != "" {
				if _, vtype, owner := s.volInfo(src); volidRe.MatchString(src) && vtype == "images" && owner != 0 {
					if err := s.check(user, fmt.Sprintf("/vms/%d", owner), "VM.Clone"); err != nil {
						return err
					}
				} else if err := s.checkVolumeAccess(user, vmid, src, ""); err != nil {
					return err
				}
			}
		case isUnusedKey(key):
			file, _ := diskFile(vals[key])
			if err := s.checkVolumeAccess(user, vmid, file, "images"); err != nil {
				return err
			}
		case key == "vmstatestorage":
			if err := s.check(user, "/storage/"+vals[key], "Datastore.AllocateSpace"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBridge is check_vnet_access (pve-guest-common GuestHelpers.pm) for
// a NIC: SDN.Use on the bridge in its zone (a vnet's zone in the SDN
// files, else the local zone), or on its VLAN.
func (s *Server) checkBridge(user, netVal string) error {
	p := props(netVal)
	bridge, ok := schema.PropValue(p, "bridge")
	if !ok {
		return nil
	}
	path := "/sdn/zones/" + s.bridgeZone(bridge) + "/" + bridge
	tag, _ := schema.PropValue(p, "tag")
	trunks, _ := schema.PropValue(p, "trunks")
	if tag != "" {
		if err := s.check(user, path+"/"+tag, "SDN.Use"); err != nil {
			return err
		}
	}
	for _, t := range trunkTags(trunks) {
		if err := s.check(user, path+"/"+t, "SDN.Use"); err != nil {
			return err
		}
	}
	if tag == "" && trunks == "" {
		return s.check(user, path, "SDN.Use")
	}
	return nil
}

// trunkTags expands "10;20-22" into its tags (get_tags_from_trunk).
func trunkTags(trunks string) []string {
	var out []string
	for _, part := range strings.Split(trunks, ";") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		switch {
		case part == "":
		case isRange && err1 == nil && err2 == nil && b-a < 4096:
			for t := a; t <= b; t++ {
				out = append(out, strconv.Itoa(t))
			}
		default:
			out = append(out, part)
		}
	}
	return out
}

func (s *Server) checkBridges(user string, vals map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(vals)) {
		if isNetKey(key) && vals[key] != "" {
			if err := s.checkBridge(user, vals[key]); err != nil {
				return err
			}
		}
	}
	return nil
}

// canAllocate is create's VM.Allocate test: on /vms/N, or on the pool the
// new guest joins.
func (s *Server) canAllocate(user string, vmid int, pool string) error {
	if s.can(user, fmt.Sprintf("/vms/%d", vmid), "VM.Allocate") || pool != "" && s.can(user, "/pool/"+pool, "VM.Allocate") {
		return nil
	}
	return permFail("")
}

// reqValues are the request's values of keys.
func reqValues(q *request, keys []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = q.get(k)
	}
	return out
}

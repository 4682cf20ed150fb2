package planner

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// What a guest's reads and calls need (the permissioned capability of
// QemuVM and LxcContainer): the `permissions` of the calls guest.go makes
// and the checks of their handlers — qemu-server API2/Qemu.pm
// (create_vm, update_vm_api: check_vm_modify_config_perm,
// check_storage_access, check_bridge_access, the device checks) and
// pve-container API2/LXC.pm, LXC.pm check_ct_modify_config_perm.

var (
	// newDiskRe is a disk to allocate: "[storage:]size".
	newDiskRe = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)
	// ownedImageRe reads a guest image's owner from its volume name.
	ownedImageRe = regexp.MustCompile(`(?:^|[:/])(?:vm|base|subvol|basevol)-(\d+)-`)
	// cloudinitRe is qemu-server's drive_is_cloudinit.
	cloudinitRe = regexp.MustCompile(`[:/](vm-\d+-)?cloudinit(\.\w+)?$`)
)

// readPerms: /cluster/resources and the per-node guest lists show only
// the guests the token may audit (and a guest's pool only when it may
// audit the pool); the config and status reads check VM.Audit.
func (g guest) readPerms(r *spec.Resource) []permNeed {
	noun := guestNoun(string(g.typ))
	path, why := "/vms", fmt.Sprintf("to find the %s by name (PVE lists only the guests a token may audit)", noun)
	if id, _ := specVMID(r); id != 0 {
		path, why = fmt.Sprintf("/vms/%d", id), fmt.Sprintf("to see the %s (PVE hides the guests a token may not audit)", noun)
	}
	needs := []permNeed{need(path, why, "VM.Audit")}
	if pool := r.Params["pool"]; pool != "" {
		needs = append(needs, need("/pool/"+pool, "to see the "+noun+"'s pool (PVE hides the pools a token may not audit)", "Pool.Audit"))
	} else if slices.Contains(r.Remove, "pool") {
		// pool: null — whichever pool it is in must be visible.
		needs = append(needs, need("/pool", "to see whether the "+noun+" is in a pool (PVE hides the pools a token may not audit)", "Pool.Audit"))
	}
	return needs
}

// changePerms are the needs of the change's calls.
func (g guest) changePerms(c *Change, lo *liveObj) []permNeed {
	st := stateOf(c)
	switch c.Action {
	case Create:
		return append(g.createPerms(c.Resource), g.ownerPerms(c)...)
	case Update:
		return g.updatePerms(c, lo, vmPath(st.VMID))
	case Delete:
		return g.removePerms(lo, vmPath(st.VMID))
	case Replace:
		return slices.Concat(g.removePerms(lo, vmPath(st.VMID)), g.createPerms(c.Resource), g.ownerPerms(c))
	}
	return nil
}

// vmPath is /vms/N, or /vms for a guest whose vmid is not known yet.
func vmPath(vmid int) string {
	if vmid == 0 {
		return "/vms"
	}
	return fmt.Sprintf("/vms/%d", vmid)
}

func (g guest) removePerms(lo *liveObj, path string) []permNeed {
	needs := []permNeed{need(path, "to delete the "+guestNoun(string(g.typ)), "VM.Allocate")}
	if lo != nil && liveOf(lo).Status == "running" {
		needs = append(needs, need(path, "to stop the "+guestNoun(string(g.typ))+" before deleting it", "VM.PowerMgmt"))
	}
	return needs
}

// createPerms: VM.Allocate on the new guest (or the pool it joins), and
// what each setting needs.
func (g guest) createPerms(r *spec.Resource) []permNeed {
	id, _ := specVMID(r)
	path, pool := vmPath(id), r.Params["pool"]
	onGuest := func(why string, privs ...string) permNeed {
		n := need(path, why, privs...)
		if pool != "" {
			n.or = "/pool/" + pool
		}
		return n
	}
	allocate := onGuest("to create the "+guestNoun(string(g.typ)), "VM.Allocate")
	needs := []permNeed{allocate}
	if want := spec.Guest(r).Running; want != nil && *want || r.Params["start"] == "1" {
		needs = append(needs, onGuest("to start the "+guestNoun(string(g.typ)), "VM.PowerMgmt"))
	}
	storage := r.Params["storage"]
	if storage != "" {
		needs = append(needs, need("/storage/"+storage, "to allocate the "+guestNoun(string(g.typ))+"'s disks", "Datastore.AllocateSpace"))
	}
	vals := map[string]string{}
	for k, v := range r.Params {
		if !g.notInConfig[k] {
			vals[k] = v
		}
	}
	if g.typ == pve.LXC {
		delete(vals, "unprivileged") // pve-container's create_vm takes it out before its check
		if storage == "" {
			storage = "local"
		}
		if r.Params["unprivileged"] == "0" {
			needs = append(needs, need("/", "to create a privileged container", "Sys.Modify"))
		}
		if tmpl := r.Params["ostemplate"]; tmpl != "" {
			needs = append(needs, volumeNeed(tmpl, "to read the template "+tmpl))
		}
		if _, ok := vals["rootfs"]; !ok {
			needs = append(needs, need("/storage/"+storage, "to allocate the root disk", "Datastore.AllocateSpace"))
		}
	}
	return append(needs, g.settingPerms(vals, nil, nil, setting{onGuest: onGuest, storage: storage, creating: true})...)
}

// updatePerms: each changed or deleted setting, disk growth and moves, a
// migration, pool moves, power changes and reboots.
func (g guest) updatePerms(c *Change, lo *liveObj, path string) []permNeed {
	onGuest := func(why string, privs ...string) permNeed { return need(path, why, privs...) }
	vals := map[string]string{}
	for k, v := range c.Params {
		if k != "delete" && k != "digest" {
			vals[k] = v
		}
	}
	var live pve.Config
	if lo != nil {
		live = lo.Config
	}
	needs := g.settingPerms(vals, schema.SplitList(c.Params["delete"]), live, setting{onGuest: onGuest})
	needs = append(needs, g.migratePerms(c, path)...)
	if stateOf(c).Reboot {
		needs = append(needs, onGuest("to reboot the "+guestNoun(string(g.typ))+" for its pending changes (rebootOnPending)", "VM.PowerMgmt"))
	}
	for _, d := range c.Diff {
		switch {
		case isResize(d):
			needs = append(needs, onGuest("to grow "+topKey(d.Path), "VM.Config.Disk"))
		case isMove(d):
			// move_vm_disk, pve-container move_volume.
			to, _ := d.After.(string)
			needs = append(needs, onGuest("to move "+topKey(d.Path), "VM.Config.Disk"),
				need("/storage/"+to, "to move "+topKey(d.Path)+" there", "Datastore.AllocateSpace"))
			if g.typ == pve.LXC && lo != nil && liveOf(lo).Status == "running" {
				needs = append(needs, onGuest("to stop the container for the move and start it again", "VM.PowerMgmt"))
			}
		case d.Path == "running":
			needs = append(needs, onGuest("to start or shut down the "+guestNoun(string(g.typ)), "VM.PowerMgmt"))
		case d.Path == "pool":
			// Pool.pm update_pool: Pool.Allocate on the pool, the right to
			// change the guest's permissions, and on the pool it leaves.
			needs = append(needs, needAny(path, "to move the "+guestNoun(string(g.typ))+" between pools", "Permissions.Modify", "VM.Allocate"))
			for _, p := range []any{d.Before, d.After} {
				if s, ok := p.(string); ok && s != "" {
					needs = append(needs, need("/pool/"+s, "to move the "+guestNoun(string(g.typ))+" between pools", "Pool.Allocate"))
				}
			}
		}
	}
	return needs
}

// setting is how settingPerms checks: the need on the guest (its path, or
// at create also its pool's), the default storage, whether it creates.
type setting struct {
	onGuest  func(why string, privs ...string) permNeed
	storage  string
	creating bool
}

// settingPerms are what setting vals and deleting dels need; live holds
// the current values (nil at create).
func (g guest) settingPerms(vals map[string]string, dels []string, live pve.Config, sc setting) []permNeed {
	var needs []permNeed
	add := func(n ...permNeed) { needs = append(needs, n...) }
	check := func(key, val string, deleting bool) {
		why := "to set " + key
		if deleting {
			why = "to delete " + key
		}
		o := acl.QemuOption(key)
		if g.typ == pve.LXC {
			o = acl.CTOption(key)
		}
		if o.RootOnly {
			add(permNeed{rootOnly: true, why: "set " + key})
			return
		}
		if len(o.Privs) > 0 {
			n := sc.onGuest(why, o.Privs...)
			n.anyOf = o.Any
			add(n)
		}
		for _, p := range o.Root {
			add(need("/", why, p))
		}
		if o.ByValue {
			add(g.valuePerms(key, val, live[key], deleting, sc)...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		check(k, vals[k], false)
	}
	for _, k := range dels {
		check(k, "", true)
	}
	return needs
}

// valuePerms are the needs that depend on a setting's value: a drive's
// kind and storage, a NIC's bridge, a device, a mount point, feature flags.
func (g guest) valuePerms(key, val, old string, deleting bool, sc setting) []permNeed {
	why := "to set " + key
	onGuest := sc.onGuest
	var needs []permNeed
	bridge := func(v string) {
		if n, ok := bridgeNeed(v, why); ok {
			needs = append(needs, n)
		}
	}
	switch {
	case key == "tags":
		needs = append(needs, onGuest(why, "VM.Config.Options"))
	case strings.HasPrefix(key, "net"):
		if g.typ == pve.LXC || deleting {
			bridge(old)
		}
		bridge(val)
	case g.typ == pve.LXC && key == "features":
		feats := map[string]bool{}
		for _, v := range []string{old, val} {
			for _, kv := range splitProps(v) {
				feats[kv.Key] = true
			}
		}
		delete(feats, "nesting")
		if len(feats) > 0 {
			return []permNeed{{rootOnly: true, why: "set feature flags other than nesting"}}
		}
		needs = append(needs, onGuest("to change nesting", "VM.Allocate"))
	case g.typ == pve.LXC: // rootfs, mpN
		file := driveFile(val)
		switch m := newDiskRe.FindStringSubmatch(file); {
		case deleting || file == "":
		case strings.HasPrefix(file, "/"):
			return []permNeed{{rootOnly: true, why: "bind-mount a host path (" + key + ")"}}
		case m != nil && m[2] != "":
			needs = append(needs, need("/storage/"+m[2], "to allocate "+key, "Datastore.AllocateSpace"))
		case m != nil:
			needs = append(needs, need("/storage/"+sc.storage, "to allocate "+key, "Datastore.AllocateSpace"))
		default:
			needs = append(needs, volumeNeed(file, "to use "+file+" as "+key))
		}
	case acl.IsQemuDrive(key) || key == "cdrom":
		// A create checks only the storage; a change what the old and the
		// new drive are.
		if !sc.creating && old != "" {
			needs = append(needs, onGuest(why, drivePrivs(old)...))
		}
		if !sc.creating && !deleting {
			needs = append(needs, onGuest(why, drivePrivs(val)...))
		}
		if !deleting {
			needs = append(needs, driveStorage(val, why, sc.storage)...)
		}
	case strings.HasPrefix(key, "serial"):
		if val != "" && val != "socket" {
			return []permNeed{{rootOnly: true, why: "connect a real serial device (" + key + ")"}}
		}
		needs = append(needs, onGuest(why, "VM.Config.HWType"))
	case strings.HasPrefix(key, "usb"), strings.HasPrefix(key, "hostpci"), key == "rng0", strings.HasPrefix(key, "virtiofs"):
		needs = append(needs, devicePerms(key, val, onGuest)...)
	}
	return needs
}

// drivePrivs: a cloud-init drive needs VM.Config.Cloudinit and
// VM.Config.CDROM, a CD-ROM VM.Config.CDROM, a disk VM.Config.Disk
// (update_vm_api's check_drive_perms).
func drivePrivs(val string) []string {
	file := driveFile(val)
	media := ""
	for _, kv := range splitProps(val) {
		if kv.Key == "media" {
			media = kv.Value
		}
	}
	switch {
	case cloudinitRe.MatchString(file):
		return []string{"VM.Config.Cloudinit", "VM.Config.CDROM"}
	case media == "cdrom":
		return []string{"VM.Config.CDROM"}
	}
	return []string{"VM.Config.Disk"}
}

// driveStorage is check_storage_access for one drive value.
func driveStorage(val, why, defStorage string) []permNeed {
	file := driveFile(val)
	_, volname, _ := strings.Cut(file, ":")
	cdrom := slices.ContainsFunc(splitProps(val), func(kv schema.KV) bool { return kv.Key == "media" && kv.Value == "cdrom" })
	var needs []permNeed
	switch m := newDiskRe.FindStringSubmatch(file); {
	case file == "" || file == "none" || file == "cloudinit" || volname == "cloudinit":
	case cdrom && file == "cdrom":
		needs = append(needs, need("/", why+" (the host's CD drive)", "Sys.Console"))
	case !cdrom && m != nil:
		sid := m[2]
		if sid == "" {
			sid = defStorage
		}
		needs = append(needs, need("/storage/"+sid, why, "Datastore.AllocateSpace"))
	default:
		needs = append(needs, volumeNeed(file, why))
	}
	for _, kv := range splitProps(val) {
		if kv.Key != "import-from" {
			continue
		}
		if m := ownedImageRe.FindStringSubmatch(kv.Value); m != nil {
			needs = append(needs, need("/vms/"+m[1], why+" (importing another guest's disk)", "VM.Clone"))
		} else {
			needs = append(needs, volumeNeed(kv.Value, why))
		}
	}
	return needs
}

// volumeNeed is pve-storage check_volume_access for an existing volume:
// read access to its storage (an image of another guest needs more, which
// PVE checks at the call).
func volumeNeed(volid, why string) permNeed {
	sid, _, _ := strings.Cut(volid, ":")
	if strings.HasPrefix(volid, "/") {
		return permNeed{rootOnly: true, why: "pass a host path (" + volid + ")"}
	}
	return needAny("/storage/"+sid, why, "Datastore.AllocateSpace", "Datastore.Audit")
}

// bridgeNeed is check_vnet_access: SDN.Use on the bridge of the local
// zone, or on its VLAN when the NIC is tagged.
func bridgeNeed(netVal, why string) (permNeed, bool) {
	var bridge, tag string
	for _, kv := range splitProps(netVal) {
		switch kv.Key {
		case "bridge":
			bridge = kv.Value
		case "tag":
			tag = kv.Value
		}
	}
	if bridge == "" {
		return permNeed{}, false
	}
	path := "/sdn/zones/localnetwork/" + bridge
	if tag != "" {
		path += "/" + tag
	}
	return need(path, why+" (its bridge "+bridge+")", "SDN.Use"), true
}

// devicePerms are qemu-server's check_usb_perm, check_hostpci_perm,
// check_rng_perm and check_dir_perm: mapped devices need Mapping.Use,
// host devices are root@pam's.
func devicePerms(key, val string, onGuest func(string, ...string) permNeed) []permNeed {
	why := "to set " + key
	get := func(k, def string) string {
		for i, kv := range splitProps(val) {
			if kv.Key == k || i == 0 && kv.Key == "" && k == def {
				return kv.Value
			}
		}
		return ""
	}
	switch {
	case strings.HasPrefix(key, "usb"), strings.HasPrefix(key, "hostpci"):
		if host := get("host", "host"); host != "" && !(strings.HasPrefix(key, "usb") && strings.EqualFold(host, "spice")) {
			// qemu-server check_hostpci_perm, check_usb_perm: "only root
			// can set '…' config for non-mapped devices".
			kind, example := "usb", key+": mapping=NAME"
			if strings.HasPrefix(key, "hostpci") {
				kind, example = "pci", key+": mapping=NAME,pcie=1"
			}
			return []permNeed{{rootOnly: true, why: "pass a host device through by its address (" + key + ": host=" + host + ")",
				hint: fmt.Sprintf("use a resource mapping instead — create one for the device (Datacenter → Resource Mappings, or POST /cluster/mapping/%s), "+
					"write %s (keeping the device's other options) and grant the token Mapping.Use on /mapping/%s/NAME", kind, example, kind)}}
		}
		needs := []permNeed{onGuest(why, "VM.Config.HWType")}
		if m := get("mapping", ""); m != "" {
			kind := "usb"
			if strings.HasPrefix(key, "hostpci") {
				kind = "pci"
			}
			needs = append(needs, need("/mapping/"+kind+"/"+m, why, "Mapping.Use"))
		}
		return needs
	case key == "rng0":
		if get("source", "source") == "/dev/hwrng" {
			return []permNeed{need("/mapping/hwrng", why, "Mapping.Use")}
		}
	case strings.HasPrefix(key, "virtiofs"):
		return []permNeed{onGuest(why, "VM.Config.Disk"), need("/mapping/dir/"+get("dirid", "dirid"), why, "Mapping.Use")}
	}
	return nil
}

// driveFile is a drive's or mount point's volume: its first, unnamed value
// (or file=/volume=).
func driveFile(val string) string {
	for i, kv := range splitProps(val) {
		if i == 0 && kv.Key == "" || kv.Key == "file" || kv.Key == "volume" {
			return kv.Value
		}
	}
	return ""
}

func splitProps(val string) []schema.KV {
	if val == "" {
		return nil
	}
	kvs, err := schema.SplitPropertyString(val)
	if err != nil {
		return nil
	}
	return kvs
}

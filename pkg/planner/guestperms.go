package planner

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The calls of a guest's reads and changes (QemuVM and LxcContainer), with
// the checks their handlers make beyond their rules (which the engine
// derives from the apidoc, permcalls.go) — qemu-server API2/Qemu.pm
// (create_vm, update_vm_api: check_vm_modify_config_perm,
// check_storage_access, check_bridge_access, the device checks) and
// pve-container API2/LXC.pm, LXC.pm check_ct_modify_config_perm.

var (
	// newDiskRe is a disk to allocate: "[storage:]size".
	newDiskRe = lazyre.New(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)
	// ownedImageRe reads a guest image's owner from its volume name.
	ownedImageRe = lazyre.New(`(?:^|[:/])(?:vm|base|subvol|basevol)-(\d+)-`)
	// cloudinitRe is qemu-server's drive_is_cloudinit.
	cloudinitRe = lazyre.New(`[:/](vm-\d+-)?cloudinit(\.\w+)?$`)
)

// listNeeds: /cluster/resources and the per-node guest lists are open to
// all but show only the guests the caller may audit (and a guest's pool
// only when it may audit the pool: pve-manager API2/Cluster.pm resources).
func (g guest) listNeeds(r *spec.Resource) []engine.PermNeed {
	noun := guestNoun(string(g.typ))
	path, why := "/vms", fmt.Sprintf("to find the %s by name (PVE lists only the guests a token may audit)", noun)
	if id, _ := specVMID(r); id != 0 {
		path, why = fmt.Sprintf("/vms/%d", id), fmt.Sprintf("to see the %s (PVE hides the guests a token may not audit)", noun)
	}
	needs := []engine.PermNeed{engine.NeedPriv(path, why, "VM.Audit")}
	if pool := r.Params.Get("pool"); pool != "" {
		needs = append(needs, engine.NeedPriv("/pool/"+pool, "to see the "+noun+"'s pool (PVE hides the pools a token may not audit)", "Pool.Audit"))
	} else if slices.Contains(r.Remove, "pool") {
		// pool: null — whichever pool it is in must be visible.
		needs = append(needs, engine.NeedPriv("/pool", "to see whether the "+noun+" is in a pool (PVE hides the pools a token may not audit)", "Pool.Audit"))
	}
	return append(needs, g.findNeeds(r)...)
}

// ReadCalls: the cluster's resources, as the guest index reads them.
func (g guest) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/cluster/resources", "to find the "+guestNoun(string(g.typ))).With(g.listNeeds(r)...)}
}

// ChangeCalls are the calls of the change.
func (g guest) ChangeCalls(c *engine.Change, lo *engine.LiveObj) []engine.APICall {
	st := stateOf(c)
	switch c.Action {
	case engine.Create:
		return g.withOwner(c, g.createCalls(c.Node, c.Resource))
	case engine.Update:
		return g.updateCalls(c, lo, st.VMID)
	case engine.Delete:
		return g.removeCalls(c.Node, lo, st.VMID)
	case engine.Replace:
		return append(g.removeCalls(c.Node, lo, st.VMID), g.withOwner(c, g.createCalls(c.Node, c.Resource))...)
	}
	return nil
}

// withOwner: the owner tag a create writes is create_vm's check of tags
// (VM.Config.Options), beside the create's call.
func (g guest) withOwner(c *engine.Change, calls []engine.APICall) []engine.APICall {
	calls[0] = calls[0].With(g.ownerPerms(c)...)
	return calls
}

// vmPath is /vms/N, or /vms for a guest whose vmid is not known yet.
func vmPath(vmid int) string {
	if vmid == 0 {
		return "/vms"
	}
	return fmt.Sprintf("/vms/%d", vmid)
}

// guestCall is a call on the guest (/nodes/{node}/{type}/{vmid}<sub>); a
// vmid not known yet (0) makes its rule ask on /vms.
func (g guest) guestCall(method, sub, why, node string, vmid int) engine.APICall {
	id := engine.KnownAfterApply // allocated at apply
	if vmid != 0 {
		id = strconv.Itoa(vmid)
	}
	return engine.Call(method, "/nodes/{node}/"+string(g.typ)+"/{vmid}"+sub, why, "node", node, "vmid", id)
}

// removeCalls: a running guest is stopped first, then deleted.
func (g guest) removeCalls(node string, lo *engine.LiveObj, vmid int) []engine.APICall {
	noun := guestNoun(string(g.typ))
	var calls []engine.APICall
	if lo != nil && liveOf(lo).Status == "running" {
		calls = append(calls, g.guestCall("POST", "/status/stop", "to stop the "+noun+" before deleting it", node, vmid))
	}
	return append(calls, g.guestCall("DELETE", "", "to delete the "+noun, node, vmid))
}

// createCalls: POST /nodes/{node}/{type} is open to all; create_vm checks
// VM.Allocate on the new guest (or the pool it joins) and what each
// setting needs (createPerms). A guest wanted running is started: on a
// guest in a pool, the pool's grant counts (check_vm_perm).
func (g guest) createCalls(node string, r *spec.Resource) []engine.APICall {
	id, _ := specVMID(r)
	calls := []engine.APICall{engine.Call("POST", "/nodes/{node}/"+string(g.typ), "to create the "+guestNoun(string(g.typ)), "node", node).With(g.createPerms(r)...)}
	if want := spec.Guest(r).Running; want != nil && *want || r.Params.Get("start") == "1" {
		start := g.guestCall("POST", "/status/start", "to start the "+guestNoun(string(g.typ)), node, id)
		start.Pool = r.Params.Get("pool")
		calls = append(calls, start)
	}
	return calls
}

// onNewGuest makes the needs on a guest r creates: on its path, or on
// the pool it joins (PVE accepts either for a new guest).
func onNewGuest(r *spec.Resource) func(why string, privs ...string) engine.PermNeed {
	id, _ := specVMID(r)
	path, pool := vmPath(id), r.Params.Get("pool")
	return func(why string, privs ...string) engine.PermNeed {
		n := engine.NeedPriv(path, why, privs...)
		if pool != "" {
			n.Or = "/pool/" + pool
		}
		return n
	}
}

// createPerms: VM.Allocate on the new guest (or the pool it joins), and
// what each setting needs (qemu-server API2/Qemu.pm create_vm,
// pve-container API2/LXC.pm create_vm).
func (g guest) createPerms(r *spec.Resource) []engine.PermNeed {
	onGuest := onNewGuest(r)
	needs := []engine.PermNeed{onGuest("to create the "+guestNoun(string(g.typ)), "VM.Allocate")}
	storage := r.Params.Get("storage")
	if storage != "" {
		needs = append(needs, engine.NeedPriv("/storage/"+storage, "to allocate the "+guestNoun(string(g.typ))+"'s disks", "Datastore.AllocateSpace"))
	}
	vals := map[string]string{}
	for k, v := range r.Params.All() {
		if !g.notInConfig[k] {
			vals[k] = v
		}
	}
	extra, storage := g.createNeeds(r, vals, storage)
	needs = append(needs, extra...)
	return append(needs, g.settingPerms(vals, nil, nil, setting{onGuest: onGuest, storage: storage, creating: true})...)
}

// updateCalls: the config write (its handler checks each changed or
// deleted setting: update_vm_api, pve-container update_vm), disk growth
// and moves, a migration, pool moves, power changes and reboots.
func (g guest) updateCalls(c *engine.Change, lo *engine.LiveObj, vmid int) []engine.APICall {
	noun, node, path := guestNoun(string(g.typ)), c.Node, vmPath(vmid)
	onGuest := func(why string, privs ...string) engine.PermNeed { return engine.NeedPriv(path, why, privs...) }
	vals := map[string]string{}
	for k, v := range c.Params {
		if k != "delete" && k != "digest" {
			vals[k] = v
		}
	}
	var live *pve.Config
	if lo != nil {
		live = lo.Config
	}
	var calls []engine.APICall
	if needs := g.settingPerms(vals, schema.SplitList(c.Params["delete"]), live, setting{onGuest: onGuest}); len(needs) > 0 {
		calls = append(calls, g.guestCall(g.configMethod, "/config", "to change the "+noun+"'s settings", node, vmid).With(needs...))
	}
	if st := stateOf(c); st.PrevNode != "" && st.PrevNode != c.Node {
		calls = append(calls, g.guestCall("POST", "/migrate", "to migrate the "+noun+" to "+c.Node, st.PrevNode, vmid))
	}
	if stateOf(c).Reboot {
		calls = append(calls, g.guestCall("POST", "/status/reboot", "to reboot the "+noun+" for its pending changes (rebootOnPending)", node, vmid))
	}
	for _, d := range c.Diff {
		calls = append(calls, g.diffCalls(d, lo, node, vmid)...)
	}
	return calls
}

// diffCalls are the calls one difference makes beyond the config write.
func (g guest) diffCalls(d engine.FieldDiff, lo *engine.LiveObj, node string, vmid int) []engine.APICall {
	noun, path := guestNoun(string(g.typ)), vmPath(vmid)
	switch {
	case isResize(d):
		return []engine.APICall{g.guestCall("PUT", "/resize", "to grow "+compare.TopKey(d.Path), node, vmid)}
	case isMove(d):
		// qemu-server move_vm_disk, pve-container move_volume: the
		// target storage is checked by the handler.
		to, _ := d.After.(string)
		calls := []engine.APICall{g.guestCall("POST", g.moveSub, "to move "+compare.TopKey(d.Path), node, vmid).
			With(engine.NeedPriv("/storage/"+to, "to move "+compare.TopKey(d.Path)+" there", "Datastore.AllocateSpace"))}
		if g.stopsToMove && lo != nil && liveOf(lo).Status == "running" {
			calls = append(calls, g.guestCall("POST", "/status/shutdown", "to stop the container for the move and start it again", node, vmid))
		}
		return calls
	case d.Path == "running":
		return []engine.APICall{g.guestCall("POST", "/status/start", "to start or shut down the "+noun, node, vmid)}
	case d.Path == "pool":
		// Pool.pm update_pool: Pool.Allocate on the pool it joins and on
		// the one it leaves (each a PUT /pools), and the right to change
		// the guest's permissions (check_perm_modify on /vms/N).
		var calls []engine.APICall
		for _, p := range []any{d.Before, d.After} {
			if s, ok := p.(string); ok && s != "" {
				calls = append(calls, engine.Call("PUT", "/pools", "to move the "+noun+" between pools", "poolid", s).
					With(engine.NeedAny(path, "to move the "+noun+" between pools", "Permissions.Modify", "VM.Allocate")))
			}
		}
		return calls
	}
	return nil
}

// setting is how settingPerms checks: the need on the guest (its path, or
// at create also its pool's), the default storage, whether it creates.
type setting struct {
	onGuest  func(why string, privs ...string) engine.PermNeed
	storage  string
	creating bool
}

// settingPerms are what setting vals and deleting dels need; live holds
// the current values (nil at create).
func (g guest) settingPerms(vals map[string]string, dels []string, live *pve.Config, sc setting) []engine.PermNeed {
	var needs []engine.PermNeed
	add := func(n ...engine.PermNeed) { needs = append(needs, n...) }
	check := func(key, val string, deleting bool) {
		why := "to set " + key
		if deleting {
			why = "to delete " + key
		}
		o := g.option(key)
		if o.RootOnly {
			add(engine.PermNeed{RootOnly: true, Why: "set " + key})
			return
		}
		if len(o.Privs) > 0 {
			n := sc.onGuest(why, o.Privs...)
			n.AnyOf = o.Any
			add(n)
		}
		for _, p := range o.Root {
			add(engine.NeedPriv("/", why, p))
		}
		if o.ByValue {
			add(g.valuePerms(key, val, live.Get(key), deleting, sc)...)
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

// valuePerms are the needs that depend on a setting's value: tags, a
// NIC's bridge, and what the type decides (ownValuePerms: a drive's kind
// and storage, a device, a mount point, feature flags).
func (g guest) valuePerms(key, val, old string, deleting bool, sc setting) []engine.PermNeed {
	why := "to set " + key
	onGuest := sc.onGuest
	var needs []engine.PermNeed
	bridge := func(v string) {
		if n, ok := bridgeNeed(v, why); ok {
			needs = append(needs, n)
		}
	}
	switch {
	case key == "tags":
		needs = append(needs, onGuest(why, "VM.Config.Options"))
	case strings.HasPrefix(key, "net"):
		if g.checksOldBridge || deleting {
			bridge(old)
		}
		bridge(val)
	default:
		return g.ownValuePerms(key, val, old, deleting, sc)
	}
	return needs
}

// driveStorage is check_storage_access for one drive value.
func driveStorage(val, why, defStorage string) []engine.PermNeed {
	file := driveFile(val)
	_, volname, _ := strings.Cut(file, ":")
	cdrom := slices.ContainsFunc(splitProps(val), func(kv schema.KV) bool { return kv.Key == "media" && kv.Value == "cdrom" })
	var needs []engine.PermNeed
	switch m := newDiskRe.FindStringSubmatch(file); {
	case file == "" || file == "none" || file == "cloudinit" || volname == "cloudinit":
	case cdrom && file == "cdrom":
		needs = append(needs, engine.NeedPriv("/", why+" (the host's CD drive)", "Sys.Console"))
	case !cdrom && m != nil:
		sid := m[2]
		if sid == "" {
			sid = defStorage
		}
		needs = append(needs, engine.NeedPriv("/storage/"+sid, why, "Datastore.AllocateSpace"))
	default:
		needs = append(needs, volumeNeed(file, why))
	}
	for _, kv := range splitProps(val) {
		if kv.Key != "import-from" {
			continue
		}
		if m := ownedImageRe.FindStringSubmatch(kv.Value); m != nil {
			needs = append(needs, engine.NeedPriv("/vms/"+m[1], why+" (importing another guest's disk)", "VM.Clone"))
		} else {
			needs = append(needs, volumeNeed(kv.Value, why))
		}
	}
	return needs
}

// volumeNeed is pve-storage check_volume_access for an existing volume:
// read access to its storage (an image of another guest needs more, which
// PVE checks at the call).
func volumeNeed(volid, why string) engine.PermNeed {
	sid, _, _ := strings.Cut(volid, ":")
	if strings.HasPrefix(volid, "/") {
		return engine.PermNeed{RootOnly: true, Why: "pass a host path (" + volid + ")"}
	}
	return engine.NeedAny("/storage/"+sid, why, "Datastore.AllocateSpace", "Datastore.Audit")
}

// bridgeNeed is check_vnet_access: SDN.Use on the bridge of the local
// zone, or on its VLAN when the NIC is tagged.
func bridgeNeed(netVal, why string) (engine.PermNeed, bool) {
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
		return engine.PermNeed{}, false
	}
	path := "/sdn/zones/localnetwork/" + bridge
	if tag != "" {
		path += "/" + tag
	}
	return engine.NeedPriv(path, why+" (its bridge "+bridge+")", "SDN.Use"), true
}

// devicePerms are qemu-server's check_usb_perm, check_hostpci_perm,
// check_rng_perm and check_dir_perm: mapped devices need Mapping.Use,
// host devices are root@pam's.
func devicePerms(key, val string, onGuest func(string, ...string) engine.PermNeed) []engine.PermNeed {
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
			return []engine.PermNeed{{RootOnly: true, Why: "pass a host device through by its address (" + key + ": host=" + host + ")",
				Hint: fmt.Sprintf("use a resource mapping instead — create one for the device (Datacenter → Resource Mappings, or POST /cluster/mapping/%s), "+
					"write %s (keeping the device's other options) and grant the token Mapping.Use on /mapping/%s/NAME", kind, example, kind)}}
		}
		needs := []engine.PermNeed{onGuest(why, "VM.Config.HWType")}
		if m := get("mapping", ""); m != "" {
			kind := "usb"
			if strings.HasPrefix(key, "hostpci") {
				kind = "pci"
			}
			needs = append(needs, engine.NeedPriv("/mapping/"+kind+"/"+m, why, "Mapping.Use"))
		}
		return needs
	case key == "rng0":
		if get("source", "source") == "/dev/hwrng" {
			return []engine.PermNeed{engine.NeedPriv("/mapping/hwrng", why, "Mapping.Use")}
		}
	case strings.HasPrefix(key, "virtiofs"):
		return []engine.PermNeed{onGuest(why, "VM.Config.Disk"), engine.NeedPriv("/mapping/dir/"+get("dirid", "dirid"), why, "Mapping.Use")}
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

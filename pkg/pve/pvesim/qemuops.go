package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

var powerTaskType = map[string]string{"start": "qmstart", "stop": "qmstop", "shutdown": "qmshutdown", "reboot": "qmreboot"}

func (s *Server) vmPower(action string) func(q *request) (any, error) {
	return func(q *request) (any, error) {
		v, err := s.writableVM(q)
		if err != nil {
			return nil, err
		}
		id, name := v.VMID, guestName(v)
		typ := powerTaskType[action]
		if v.Type == "lxc" {
			typ = "vz" + action
		}
		// pve-container checks the state before it forks; qemu-server's
		// vm_start/vm_stop do it in the worker (stopping a stopped VM is OK).
		switch {
		case action == "reboot" && !v.Running:
			return nil, fail(http.StatusInternalServerError, "%s not running", name)
		case v.Type == "lxc" && action == "start" && v.Running:
			return nil, fail(http.StatusInternalServerError, "%s already running", name)
		case v.Type == "lxc" && (action == "stop" || action == "shutdown") && !v.Running:
			return nil, fail(http.StatusInternalServerError, "%s not running", name)
		}
		return s.startTask(v.Node, typ, vmidString(id), []int{id}, func(t *task) error {
			switch action {
			case "start":
				if v.Conf["template"] == "1" {
					return fmt.Errorf("you can't start a %s if it's a template", map[bool]string{true: "CT", false: "vm"}[v.Type == "lxc"])
				}
				if v.Running {
					return fmt.Errorf("%s already running", name)
				}
				s.applyPending(v)
				if _, ok := v.Conf["ide2"]; ok && strings.Contains(v.Conf["ide2"], "cloudinit") {
					t.logf("generating cloud-init ISO")
				}
				return s.startGuest(t, v)
			case "stop", "shutdown":
				v.Running, v.StartedAt = false, 0
			case "reboot":
				if !v.Running {
					return fmt.Errorf("%s not running", name)
				}
				s.applyPending(v)
				v.Running, v.StartedAt = false, 0
				return s.startGuest(t, v)
			}
			return nil
		}), nil
	}
}

func (s *Server) cloneVM(q *request) (any, error) {
	src, err := s.vmOf(q)
	if err != nil {
		return nil, err
	}
	// qemu-server takes an exclusive flock on a running source, a shared one
	// on a stopped source (so parallel clones of a template work), and holds
	// it, with the target's, until the worker ends. pve-container locks the
	// source exclusively.
	sharedSrc := src.Type == "" && !src.Running
	if sharedSrc {
		if err := s.checkSharedLock(src.VMID); err != nil {
			return nil, err
		}
		if l := src.Conf["lock"]; l != "" {
			return nil, fail(http.StatusInternalServerError, "VM is locked (%s)", l)
		}
	} else if err := s.writable(src, q); err != nil {
		return nil, err
	}
	newid, err := strconv.Atoi(q.get("newid"))
	if err != nil {
		return nil, paramErr1("newid", "property is missing and it is not optional")
	}
	if _, exists := s.st.VMs[newid]; exists {
		return nil, fail(http.StatusInternalServerError, "unable to create VM %d: config file already exists", newid)
	}
	if sn := q.get("snapname"); sn != "" && sn != "current" {
		return nil, fail(http.StatusInternalServerError, "snapshot '%s' does not exist", sn)
	}
	target := src.Node
	if q.get("target") != "" {
		target = q.get("target")
		if !s.st.hasNode(target) {
			return nil, paramErr1("target", "no such cluster node '%s'", target)
		}
	}
	isTemplate := src.Conf["template"] == "1"
	full := !isTemplate || q.bool("full")
	if q.has("full") && !q.bool("full") && !isTemplate {
		return nil, fail(http.StatusInternalServerError, "linked clone feature is only available for templates")
	}
	if !full && q.has("storage") {
		return nil, fail(http.StatusInternalServerError, "parameter 'storage' not allowed for linked clones")
	}
	if !full && q.has("format") {
		return nil, fail(http.StatusInternalServerError, "parameter 'format' not allowed for linked clones")
	}
	poolID := q.get("pool")
	if poolID != "" {
		if _, ok := s.st.Pools[poolID]; !ok {
			return nil, fail(http.StatusInternalServerError, "pool '%s' does not exist", poolID)
		}
	}
	var targetStorage *storage
	if id := q.get("storage"); id != "" {
		if targetStorage, err = s.imageStorage(id, target, "storage"); err != nil {
			return nil, err
		}
	}
	if target != src.Node {
		for k, val := range src.Conf {
			file, _ := diskFile(val)
			if vol, ok := s.st.Volumes[file]; ok && isDiskKey(k) && !s.st.Storages[vol.Storage].Shared {
				return nil, fail(http.StatusInternalServerError, "can't clone VM to node '%s' (VM uses local storage)", target)
			}
		}
	}

	nv := &vm{VMID: newid, Node: target, Type: src.Type, Conf: map[string]string{"lock": "clone"}}
	conf, logs, err := s.cloneConf(src, nv, full, targetStorage, q)
	if err != nil {
		return nil, err
	}
	s.st.VMs[newid] = nv
	typ := "qmclone"
	if src.Type == "lxc" {
		typ = "vzclone"
	}
	excl, shared := []int{src.VMID, newid}, []int(nil)
	if sharedSrc {
		excl, shared = []int{newid}, []int{src.VMID}
	}
	return s.startTaskShared(src.Node, typ, vmidString(src.VMID), excl, shared, func(t *task) error {
		t.Log = append(t.Log, logs...)
		nv.Conf = conf
		if poolID != "" {
			if p, ok := s.st.Pools[poolID]; ok {
				p.VMs = append(p.VMs, newid)
			}
		}
		return nil
	}), nil
}

// cloneConf builds the clone's config and its volumes: new MACs, new
// SMBIOS uuid and vmgenid, disks copied (full) or layered on the base (linked).
func (s *Server) cloneConf(src, nv *vm, full bool, targetStorage *storage, q *request) (map[string]string, []string, error) {
	conf := map[string]string{}
	var logs []string
	var created []*volume
	undo := func() {
		for _, vol := range created {
			delete(s.st.Volumes, vol.volid())
		}
	}
	for _, k := range slices.Sorted(maps.Keys(src.Conf)) {
		val := src.Conf[k]
		switch {
		case k == "lock" || k == "template" || isUnusedKey(k) || k == "parent" || k == "vmstate" || k == "snaptime":
			continue
		case isNetKey(k) && src.Type == "lxc":
			nval, err := s.normalizeCTNet(k, val, true)
			if err != nil {
				undo()
				return nil, nil, err
			}
			conf[k] = nval
		case isNetKey(k):
			nval, err := s.normalizeNet(k, val, true)
			if err != nil {
				undo()
				return nil, nil, err
			}
			conf[k] = nval
		case k == "smbios1":
			conf[k] = printProps(nil, nil, schema.SetProp(props(val), "uuid", s.newUUID()))
		case k == "vmgenid":
			conf[k] = s.newUUID()
		case k == "meta":
			conf[k] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
		case isDiskKey(k):
			nval, line, err := s.cloneDisk(src, nv, k, val, full, targetStorage, &created)
			if err != nil {
				undo()
				return nil, nil, err
			}
			if line != "" {
				logs = append(logs, line)
			}
			conf[k] = nval
		default:
			conf[k] = val
		}
	}
	nameKey, kind := "name", "VM"
	if src.Type == "lxc" {
		nameKey, kind = "hostname", "CT"
	}
	if n := q.get(nameKey); n != "" {
		conf[nameKey] = n
	} else if n := src.Conf[nameKey]; n != "" {
		conf[nameKey] = "Copy-of-" + kind + "-" + n
	} else {
		conf[nameKey] = fmt.Sprintf("Copy-of-%s-%d", kind, src.VMID)
	}
	if q.has("description") {
		if d := normalizeDescription(q.get("description")); d != "" {
			conf["description"] = d
		} else {
			delete(conf, "description")
		}
	}
	return conf, logs, nil
}

func (s *Server) cloneDisk(src, nv *vm, key, val string, full bool, targetStorage *storage, created *[]*volume) (string, string, error) {
	file, rest := diskFile(val)
	vol, ok := s.st.Volumes[file]
	if !ok || vol.Content != "images" && vol.Content != "rootdir" {
		return val, "", nil // CD-ROM, ISO, "none", passthrough: shared as is
	}
	st := s.st.Storages[vol.Storage]
	if full && targetStorage != nil {
		st = targetStorage
	}
	if strings.Contains(vol.Name, "cloudinit") {
		name := fmt.Sprintf("vm-%d-cloudinit", nv.VMID)
		format := "raw"
		if isFileStorage(st) {
			name, format = fmt.Sprintf("%d/vm-%d-cloudinit.qcow2", nv.VMID, nv.VMID), "qcow2"
		}
		nvol := &volume{Storage: st.ID, Name: name, Content: "images", Format: format, Size: vol.Size, VMID: nv.VMID, Ctime: time.Now().Unix()}
		s.st.addVolume(nvol)
		*created = append(*created, nvol)
		return printDrive(nvol.volid(), rest), "", nil
	}
	if full {
		nvol := s.allocImage(st, nv.VMID, vol.Size, "vm")
		nvol.Content = vol.Content
		*created = append(*created, nvol)
		rest = schema.SetProp(rest, "size", formatSize(vol.Size))
		return printDrive(nvol.volid(), rest), fmt.Sprintf("create full clone of drive %s (%s)", key, vol.volid()), nil
	}
	// Linked clone: a new thin volume on the same storage whose name records its base.
	nvol := s.allocImage(st, nv.VMID, vol.Size, "vm")
	delete(s.st.Volumes, nvol.volid())
	nvol.Name = vol.Name + "/" + nvol.Name
	nvol.Parent = vol.volid()
	nvol.Content = vol.Content
	s.st.addVolume(nvol)
	*created = append(*created, nvol)
	rest = schema.SetProp(rest, "size", formatSize(vol.Size))
	return printDrive(nvol.volid(), rest), fmt.Sprintf("create linked clone of drive %s (%s)", key, vol.volid()), nil
}

func (s *Server) templateVM(q *request) (any, error) {
	v, err := s.writableVM(q)
	if err != nil {
		return nil, err
	}
	if v.Running {
		return nil, fail(http.StatusInternalServerError, "you can't convert a %s to template if %s is running", guestName(v)[:2], guestName(v)[:2])
	}
	if v.Conf["template"] == "1" {
		return nil, fail(http.StatusInternalServerError, "you can't convert a template to a template")
	}
	typ := "qmtemplate"
	if v.Type == "lxc" {
		typ = "vztemplate"
	}
	upid := s.startTask(v.Node, typ, vmidString(v.VMID), []int{v.VMID}, func(t *task) error {
		for _, k := range slices.Sorted(maps.Keys(v.Conf)) {
			if !isDiskKey(k) {
				continue
			}
			file, rest := diskFile(v.Conf[k])
			vol, ok := s.st.Volumes[file]
			if !ok || vol.Content != "images" && vol.Content != "rootdir" || strings.Contains(vol.Name, "cloudinit") {
				continue
			}
			base := strings.Replace(vol.Name, fmt.Sprintf("vm-%d-disk-", v.VMID), fmt.Sprintf("base-%d-disk-", v.VMID), 1)
			if base == vol.Name {
				continue
			}
			delete(s.st.Volumes, file)
			t.logf("  Renamed \"%s\" to \"%s\" in volume group \"%s\"", vol.Name, base, s.st.Storages[vol.Storage].VGName)
			vol.Name = base
			s.st.addVolume(vol)
			v.Conf[k] = printDrive(vol.volid(), rest)
		}
		v.Conf["template"] = "1"
		return nil
	})
	if v.Type == "lxc" {
		return nil, nil // PVE answers null here, although a worker runs: poll the config
	}
	return upid, nil
}

func (s *Server) resizeVM(q *request) (any, error) {
	v, err := s.writableVM(q)
	if err != nil {
		return nil, err
	}
	if err := s.checkDigest(v, q); err != nil {
		return nil, err
	}
	disk := q.get("disk")
	val, ok := v.Conf[disk]
	if !ok || !isDiskKey(disk) {
		return nil, fail(http.StatusInternalServerError, "disk '%s' does not exist", disk)
	}
	file, rest := diskFile(val)
	if m, _ := schema.PropValue(rest, "media"); m == "cdrom" {
		return nil, fail(http.StatusInternalServerError, "you can't resize a cdrom")
	}
	var cur int64
	if sz, ok := schema.PropValue(rest, "size"); ok {
		cur, _, _ = parseSize(sz)
	}
	n, plus, err := parseSize(q.get("size"))
	if err != nil {
		return nil, paramErr1("size", "%v", err)
	}
	want := n
	if plus {
		want = cur + n
	}
	if want < cur {
		return nil, fail(http.StatusInternalServerError, "shrinking disks is not supported")
	}
	return s.startTask(v.Node, "resize", vmidString(v.VMID), []int{v.VMID}, func(t *task) error {
		_, rest := diskFile(v.Conf[disk])
		v.Conf[disk] = printDrive(file, schema.SetProp(rest, "size", formatSize(want)))
		if vol, ok := s.st.Volumes[file]; ok {
			vol.Size = want
			t.logf("  Size of logical volume %s changed from %s to %s.", vol.Name, formatSize(cur), formatSize(want))
		}
		return nil
	}), nil
}

// agentIfaces answers like qemu-guest-agent's guest-network-get-interfaces.
// The IP is data only: ipconfig0's static address, else a made-up 10.x one.
func (s *Server) agentIfaces(q *request) (any, error) {
	v, err := s.vmOf(q)
	if err != nil {
		return nil, err
	}
	if !agentEnabled(v.Conf) {
		return nil, fail(http.StatusInternalServerError, "No QEMU guest agent configured")
	}
	if !v.Running {
		return nil, fail(http.StatusInternalServerError, "VM %d is not running", v.VMID)
	}
	if time.Now().Before(v.agentAt) {
		return nil, fail(http.StatusInternalServerError, "QEMU guest agent is not running")
	}
	ip, prefix := fmt.Sprintf("10.%d.%d.%d", 10+v.VMID/65536%200, v.VMID/256%256, v.VMID%250+2), 24
	if ipc, ok := schema.PropValue(props(v.Conf["ipconfig0"]), "ip"); ok && ipc != "dhcp" {
		addr, bits, _ := strings.Cut(ipc, "/")
		ip = addr
		if b, err := strconv.Atoi(bits); err == nil {
			prefix = b
		}
	}
	_, mac := netModelMAC(v.Conf["net0"])
	return map[string]any{"result": []any{
		map[string]any{"name": "lo", "hardware-address": "00:00:00:00:00:00",
			"ip-addresses": []any{map[string]any{"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8}}},
		map[string]any{"name": "eth0", "hardware-address": strings.ToLower(mac),
			"ip-addresses": []any{map[string]any{"ip-address": ip, "ip-address-type": "ipv4", "prefix": prefix}}},
	}}, nil
}

// startGuest boots a guest unless a NIC names a bridge that the node's
// running network config lacks (one only staged in interfaces.new counts as
// missing): pve-bridge then fails and so does the start, as on PVE.
func (s *Server) startGuest(t *task, v *vm) error {
	running := s.st.Net[v.Node].Running
	for _, k := range slices.Sorted(maps.Keys(v.Conf)) {
		if !isNetKey(k) {
			continue
		}
		br, ok := schema.PropValue(props(v.Conf[k]), "bridge")
		if !ok {
			continue
		}
		if i, exists := running[br]; exists && (i.Type == "bridge" || i.Type == "OVSBridge") {
			continue
		}
		t.logf("bridge '%s' does not exist", br)
		if v.Type == "lxc" {
			return fmt.Errorf("startup for container '%d' failed", v.VMID)
		}
		t.logf("kvm: -netdev type=tap,id=%s,ifname=tap%di%s,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown,vhost=on: network script /usr/libexec/qemu-server/pve-bridge failed with status 512",
			k, v.VMID, strings.TrimPrefix(k, "net"))
		return fmt.Errorf("start failed: QEMU exited with code 1")
	}
	s.boot(v)
	return nil
}

// boot marks a guest running; like a real guest, its agent needs a moment
// (one task duration) before it answers.
func (s *Server) boot(v *vm) {
	v.Running, v.StartedAt = true, time.Now().Unix()
	v.agentAt = time.Now().Add(s.opts.TaskDuration)
}

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

// power starts, stops, shuts down or reboots a guest.
func (s *Server) power(action string) guestHandler {
	return func(k *guestKind, q *request) (any, error) {
		v, err := s.writableGuest(k, q)
		if err != nil {
			return nil, err
		}
		id, name := v.VMID, k.name(v.VMID)
		// pve-container checks the state before it forks; qemu-server's
		// vm_start/vm_stop do it in the worker (stopping a stopped VM is OK).
		switch {
		case action == "reboot" && !v.Running:
			return nil, fail(http.StatusInternalServerError, "%s not running", name)
		case k.stateBeforeFork && action == "start" && v.Running:
			return nil, fail(http.StatusInternalServerError, "%s already running", name)
		case k.stateBeforeFork && (action == "stop" || action == "shutdown") && !v.Running:
			return nil, fail(http.StatusInternalServerError, "%s not running", name)
		}
		return s.startTask(v.Node, k.tasks+action, vmidString(id), []int{id}, func(t *task) error {
			switch action {
			case "start":
				if v.Conf["template"] == "1" {
					return fmt.Errorf("you can't start a %s if it's a template", k.templateNoun)
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

func (s *Server) cloneGuest(k *guestKind, q *request) (any, error) {
	src, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	// qemu-server takes an exclusive flock on a running source, a shared one
	// on a stopped source (so parallel clones of a template work), and holds
	// it, with the target's, until the worker ends. pve-container locks the
	// source exclusively.
	sharedSrc := k.sharedCloneLock && !src.Running
	if sharedSrc {
		if err := s.checkSharedLock(src.VMID); err != nil {
			return nil, err
		}
		if l := src.Conf["lock"]; l != "" {
			return nil, fail(http.StatusInternalServerError, "%s is locked (%s)", k.noun, l)
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
		if err := s.checkPoolExist(poolID); err != nil {
			return nil, err
		}
	}
	if err := s.checkClonePerms(k, q, src); err != nil {
		return nil, err
	}
	var targetStorage *storage
	if id := q.get("storage"); id != "" {
		if targetStorage, err = s.imageStorage(id, target, "storage"); err != nil {
			return nil, err
		}
	}
	if target != src.Node {
		for key, val := range src.Conf {
			file, _ := diskFile(val)
			if vol, ok := s.st.Volumes[file]; ok && isDiskKey(key) && !s.st.Storages[vol.Storage].Shared {
				return nil, fail(http.StatusInternalServerError, "can't clone VM to node '%s' (VM uses local storage)", target)
			}
		}
	}

	nv := &vm{VMID: newid, Node: target, Type: k.typ, Conf: map[string]string{"lock": "clone"}}
	conf, logs, err := s.cloneConf(k, src, nv, full, targetStorage, q)
	if err != nil {
		return nil, err
	}
	s.st.VMs[newid] = nv
	excl, shared := []int{src.VMID, newid}, []int(nil)
	if sharedSrc {
		excl, shared = []int{newid}, []int{src.VMID}
	}
	return s.startTaskShared(src.Node, k.tasks+"clone", vmidString(src.VMID), excl, shared, func(t *task) error {
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
func (s *Server) cloneConf(k *guestKind, src, nv *vm, full bool, targetStorage *storage, q *request) (map[string]string, []string, error) {
	conf := map[string]string{}
	var logs []string
	var created []*volume
	undo := func() {
		for _, vol := range created {
			delete(s.st.Volumes, vol.volid())
		}
	}
	for _, key := range slices.Sorted(maps.Keys(src.Conf)) {
		val := src.Conf[key]
		switch {
		case key == "lock" || key == "template" || isUnusedKey(key) || key == "parent" || key == "vmstate" || key == "snaptime":
			continue
		case isNetKey(key):
			nval, err := k.normalizeNet(s, key, val, true)
			if err != nil {
				undo()
				return nil, nil, err
			}
			conf[key] = nval
		case key == "smbios1":
			conf[key] = printProps(nil, nil, schema.SetProp(props(val), "uuid", s.newUUID()))
		case key == "vmgenid":
			conf[key] = s.newUUID()
		case key == "meta":
			conf[key] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
		case isDiskKey(key):
			nval, line, err := s.cloneDisk(src, nv, key, val, full, targetStorage, &created)
			if err != nil {
				undo()
				return nil, nil, err
			}
			if line != "" {
				logs = append(logs, line)
			}
			conf[key] = nval
		default:
			conf[key] = val
		}
	}
	if n := q.get(k.nameKey); n != "" {
		conf[k.nameKey] = n
	} else if n := src.Conf[k.nameKey]; n != "" {
		conf[k.nameKey] = "Copy-of-" + k.noun + "-" + n
	} else {
		conf[k.nameKey] = fmt.Sprintf("Copy-of-%s-%d", k.noun, src.VMID)
	}
	if q.has("description") {
		if d := k.description(q.get("description")); d != "" {
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
		rest = schema.SetProp(rest, "size", schema.FormatSize(vol.Size))
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
	rest = schema.SetProp(rest, "size", schema.FormatSize(vol.Size))
	return printDrive(nvol.volid(), rest), fmt.Sprintf("create linked clone of drive %s (%s)", key, vol.volid()), nil
}

func (s *Server) templateGuest(k *guestKind, q *request) (any, error) {
	v, err := s.writableGuest(k, q)
	if err != nil {
		return nil, err
	}
	if v.Running {
		return nil, fail(http.StatusInternalServerError, "you can't convert a %s to template if %s is running", k.noun, k.noun)
	}
	if v.Conf["template"] == "1" {
		return nil, fail(http.StatusInternalServerError, "you can't convert a template to a template")
	}
	upid := s.startTask(v.Node, k.tasks+"template", vmidString(v.VMID), []int{v.VMID}, func(t *task) error {
		for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
			if !isDiskKey(key) {
				continue
			}
			file, rest := diskFile(v.Conf[key])
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
			v.Conf[key] = printDrive(vol.volid(), rest)
		}
		v.Conf["template"] = "1"
		return nil
	})
	if k.templateNull {
		return nil, nil // PVE answers null here, although a worker runs: poll the config
	}
	return upid, nil
}

func (s *Server) resizeGuest(k *guestKind, q *request) (any, error) {
	v, err := s.writableGuest(k, q)
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
		v.Conf[disk] = printDrive(file, schema.SetProp(rest, "size", schema.FormatSize(want)))
		if vol, ok := s.st.Volumes[file]; ok {
			vol.Size = want
			t.logf("  Size of logical volume %s changed from %s to %s.", vol.Name, schema.FormatSize(cur), schema.FormatSize(want))
		}
		return nil
	}), nil
}

// startGuest boots a guest unless a NIC names a bridge that the node's
// running network config lacks (one only staged in interfaces.new counts as
// missing): pve-bridge then fails and so does the start, as on PVE.
func (s *Server) startGuest(t *task, v *vm) error {
	running := s.st.Net[v.Node].Running
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		if !isNetKey(key) {
			continue
		}
		br, ok := schema.PropValue(props(v.Conf[key]), "bridge")
		if !ok {
			continue
		}
		if i, exists := running[br]; exists && (i.Type == "bridge" || i.Type == "OVSBridge") {
			continue
		}
		t.logf("bridge '%s' does not exist", br)
		return s.kindOf(v).bridgeMissing(t, v, key)
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

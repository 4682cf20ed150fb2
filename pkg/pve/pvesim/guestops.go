package pvesim

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// guestLock is lock_config on a guest of kind k: exclusive, 10 s.
func (s *Server) guestLock(k *guestKind, vmid int) lockReq {
	return lockReq{vmid: vmid, wait: s.pveWait(10), kind: k}
}

// power starts, stops, shuts down or reboots a guest. The worker takes the
// guest's lock (qemu-server QemuServer.pm vm_start/vm_stop/vm_reboot,
// pve-container API2/LXC/Status.pm, LXC.pm vm_reboot: lock_config) and
// looks at the guest again under it.
func (s *Server) power(action string) guestHandler {
	return func(k *guestKind, q *request) (any, error) {
		node, id := q.vars["node"], vmidOf(q)
		v, _ := s.guestAt(k, node, id)
		running := v != nil && v.Running
		// pve-container checks the state before it forks; qemu-server's
		// vm_start/vm_stop do it in the worker (stopping a stopped VM is
		// OK), but its reboot asks check_running first.
		switch {
		case k.stateBeforeFork && action == "start" && running:
			return nil, fail(http.StatusInternalServerError, "%s already running", k.name(id))
		case k.stateBeforeFork && (action == "stop" || action == "shutdown") && !running:
			return nil, fail(http.StatusInternalServerError, "%s not running", k.name(id))
		case action == "reboot" && v == nil && !k.stateBeforeFork:
			return nil, noConfigOnNode(node, id)
		case action == "reboot" && !running:
			// Both say "VM", pve-container's vm_reboot too.
			return nil, fail(http.StatusInternalServerError, "VM %d not running", id)
		}
		return s.startWorker(node, k.tasks+action, vmidString(id), worker{
			locks: []lockReq{s.guestLock(k, id)},
			run: func(t *task) error {
				v, err := s.guestAt(k, node, id)
				if err != nil && action != "start" && !k.stateBeforeFork {
					return noConfigOnNode(node, id) // _do_vm_stop: check_running
				}
				if err != nil {
					return err
				}
				switch action {
				case "start":
					return s.startEffect(t, k, v, q.bool("skiplock"))
				case "stop":
					if err := s.writable(v, q); err != nil {
						return err
					}
					v.Running, v.StartedAt = false, 0
				case "shutdown":
					if err := s.writable(v, q); err != nil || !v.Running {
						return err
					}
					return s.shutdownGuest(t, k, v, q.int("timeout", k.shutdownTimeout), q.bool("forceStop"))
				case "reboot":
					return s.reboot(t, k, v, q.int("timeout", k.shutdownTimeout))
				}
				return nil
			},
		}).UPID, nil
	}
}

// startEffect is vm_start under the lock: a template or a locked guest
// does not start, pending changes apply, the guest boots.
func (s *Server) startEffect(t *task, k *guestKind, v *vm, skiplock bool) error {
	if v.Conf["template"] == "1" {
		return fmt.Errorf("you can't start a %s if it's a template", k.templateNoun)
	}
	if err := s.configLock(v, skiplock); err != nil {
		return err
	}
	if v.Running {
		return fmt.Errorf("%s already running", k.name(v.VMID))
	}
	s.applyPending(v)
	if _, ok := v.Conf["ide2"]; ok && strings.Contains(v.Conf["ide2"], "cloudinit") {
		t.logf("generating cloud-init ISO")
	}
	return s.startGuest(t, v)
}

// shutdownGuest asks a running guest to power off and waits up to timeout
// seconds; it takes the guest one TaskDuration to stop. qemu-server
// (QemuServer.pm _do_vm_stop) looks once a second, timeout times, and
// without forceStop fails with "VM quit/powerdown failed - got timeout";
// pve-container (LXC.pm vm_stop: lxc-stop --nokill --timeout, then a poll
// as long again plus 5 s) fails with "container did not stop". With
// forceStop the guest is killed instead.
func (s *Server) shutdownGuest(t *task, k *guestKind, v *vm, timeout int, force bool) error {
	if !k.stopsInTime(s.opts.TaskDuration, timeout) {
		if !force {
			return errors.New(k.shutdownTimedOut)
		}
		if k.shutdownKill != "" {
			t.logf("%s", k.shutdownKill)
		}
	}
	v.Running, v.StartedAt = false, 0
	return nil
}

// stopsInTime is qemu-server's count: the VM is looked at after 0, 1, …,
// timeout-1 seconds, so it must be down by the last look.
func qemuStopsInTime(d time.Duration, timeout int) bool {
	return int((d+time.Second-1)/time.Second) < timeout
}

// ctStopsInTime: lxc-stop waits timeout seconds, then the worker polls as
// long again plus 5 s.
func ctStopsInTime(d time.Duration, timeout int) bool {
	return d <= time.Duration(2*timeout+5)*time.Second
}

// reboot is vm_reboot under the lock. qemu-server shuts the VM down
// (without forceStop) and ends the task there; qmeventd's cleanup then
// starts it again in a qmstart task of root@pam that applies the pending
// changes (CLI/qm.pm cleanup). pve-container stops (killing after the
// timeout) and starts the container in the same task.
func (s *Server) reboot(t *task, k *guestKind, v *vm, timeout int) error {
	if !v.Running {
		return nil // only reboot if running (vm_reboot)
	}
	if err := s.configLock(v, false); err != nil {
		return err
	}
	if k.rebootInTask {
		v.Running, v.StartedAt = false, 0
		s.applyPending(v)
		return s.startGuest(t, v)
	}
	if err := s.shutdownGuest(t, k, v, timeout, false); err != nil {
		return err
	}
	id, node := v.VMID, v.Node
	s.startWorker(node, k.tasks+"start", vmidString(id), worker{
		user:  "root@pam",
		locks: []lockReq{s.guestLock(k, id)},
		run: func(t *task) error {
			v, err := s.guestAt(k, node, id)
			if err != nil {
				return err
			}
			return s.startEffect(t, k, v, false)
		},
	})
	return nil
}

func (s *Server) cloneGuest(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	if k.syncLocks {
		return s.cloneCT(k, q)
	}
	// qemu-server clone_vm: check_running first (a missing source fails
	// there), $load_and_check before the worker forks; the worker locks
	// the source (shared when stopped, so clones of one template run side
	// by side; exclusive when running) and the target, each for 1 s, and
	// checks again. Only then does the target's temporary config appear.
	src, err := s.guestAt(k, node, id)
	if err != nil {
		return nil, noConfigOnNode(node, id)
	}
	running := src.Running
	check := func() (*cloneSpec, error) { return s.cloneCheck(k, q, running) }
	if _, err := check(); err != nil {
		return nil, err
	}
	newid := q.int("newid", 0)
	var c *cloneSpec
	var nv *vm
	return s.startWorker(node, k.tasks+"clone", vmidString(id), worker{
		locks: []lockReq{
			{vmid: id, shared: !running, wait: s.pveWait(1), kind: k},
			{vmid: newid, wait: s.pveWait(1), kind: k},
		},
		begin: func(t *task) error {
			if c, err = check(); err != nil {
				return err
			}
			t.logf("creating a clone of VM %d with ID %d", id, newid)
			// The temporary file qemu-server writes first: its comment
			// line reads back as the description.
			nv = &vm{VMID: newid, Node: c.target, Type: k.typ,
				Conf: map[string]string{"lock": "clone", "description": " qmclone temporary file"}}
			s.st.VMs[newid] = nv
			conf, logs, err := s.cloneConf(k, c.src, nv, c.full, c.storage, q)
			if err != nil {
				delete(s.st.VMs, newid)
				return fmt.Errorf("clone failed: %w", err)
			}
			c.conf, c.logs = conf, logs
			return nil
		},
		run: func(t *task) error {
			t.Log = append(t.Log, c.logs...)
			nv.Conf = c.conf
			if c.pool != "" {
				if p, ok := s.st.Pools[c.pool]; ok {
					p.VMs = append(p.VMs, newid)
				}
			}
			return nil
		},
	}).UPID, nil
}

// cloneSpec is a checked clone request.
type cloneSpec struct {
	src     *vm
	target  string // node
	full    bool
	storage *storage
	pool    string
	conf    map[string]string // the target's config, built under the locks
	logs    []string
}

// cloneCheck is clone_vm's $load_and_check (qemu-server), also the
// checks pve-container makes before it forks.
func (s *Server) cloneCheck(k *guestKind, q *request, wasRunning bool) (*cloneSpec, error) {
	src, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	if err := s.configLock(src, false); err != nil {
		return nil, err
	}
	if src.Running != wasRunning {
		return nil, fail(http.StatusInternalServerError, "unexpected state change")
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
	c := &cloneSpec{src: src, target: src.Node, pool: q.get("pool")}
	if q.get("target") != "" {
		c.target = q.get("target")
		if !s.st.hasNode(c.target) {
			return nil, paramErr1("target", "no such cluster node '%s'", c.target)
		}
	}
	isTemplate := src.Conf["template"] == "1"
	c.full = !isTemplate || q.bool("full")
	if q.has("full") && !q.bool("full") && !isTemplate {
		return nil, fail(http.StatusInternalServerError, "linked clone feature is only available for templates")
	}
	if !c.full && q.has("storage") {
		return nil, fail(http.StatusInternalServerError, "parameter 'storage' not allowed for linked clones")
	}
	if !c.full && q.has("format") {
		return nil, fail(http.StatusInternalServerError, "parameter 'format' not allowed for linked clones")
	}
	if c.pool != "" {
		if _, ok := s.st.Pools[c.pool]; !ok {
			return nil, fail(http.StatusInternalServerError, "pool '%s' does not exist", c.pool)
		}
	}
	if id := q.get("storage"); id != "" {
		if c.storage, err = s.imageStorage(id, c.target, "storage"); err != nil {
			return nil, err
		}
	}
	if c.target != src.Node {
		for key, val := range src.Conf {
			file, _ := diskFile(val)
			if vol, ok := s.st.Volumes[file]; ok && isDiskKey(key) && !s.st.Storages[vol.Storage].Shared {
				return nil, fail(http.StatusInternalServerError, "can't clone %s to node '%s' (%s uses local storage)", k.noun, c.target, k.noun)
			}
		}
	}
	return c, nil
}

// cloneCT is pve-container's clone_vm: it locks the source in the API
// process and marks it "disk" (set_lock), creates the target's config
// locked "create" (create_and_lock_config, 5 s), and only copies the
// volumes in the worker, which unlocks both at the end.
func (s *Server) cloneCT(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	if _, err := s.guestOf(k, q); err != nil {
		return nil, err
	}
	if err := s.lockNow(q, s.guestLock(k, id)); err != nil {
		return nil, err
	}
	c, err := s.cloneCheck(k, q, s.st.VMs[id] != nil && s.st.VMs[id].Running)
	if err != nil {
		return nil, err
	}
	newid := q.int("newid", 0)
	c.src.Conf["lock"] = "disk"
	unlockSrc := func() {
		if v := s.st.VMs[id]; v != nil && v.Conf["lock"] == "disk" {
			delete(v.Conf, "lock")
		}
	}
	if err := s.lockNow(q, lockReq{vmid: newid, wait: s.pveWait(5), kind: k}); err != nil {
		unlockSrc()
		return nil, err
	}
	if old, exists := s.st.VMs[newid]; exists {
		unlockSrc()
		return nil, s.vmidTaken(old)
	}
	nv := &vm{VMID: newid, Node: c.target, Type: k.typ, Conf: map[string]string{"lock": "create"}}
	s.st.VMs[newid] = nv
	conf, logs, err := s.cloneConf(k, c.src, nv, c.full, c.storage, q)
	if err != nil {
		unlockSrc()
		delete(s.st.VMs, newid)
		return nil, err
	}
	return s.startWorker(node, k.tasks+"clone", vmidString(id), worker{
		locks:       []lockReq{s.guestLock(k, newid)},
		uncontended: true, // rolled at the source's lock
		run: func(t *task) error {
			t.logf("creating a clone of container %d with ID %d", id, newid)
			t.Log = append(t.Log, logs...)
			unlockSrc()
			nv.Conf = conf
			if c.pool != "" {
				if p, ok := s.st.Pools[c.pool]; ok {
					p.VMs = append(p.VMs, newid)
				}
			}
			return nil
		},
	}).UPID, nil
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
		rest = schema.SetProp(rest, "size", schema.FormatSize(vol.Size))
		return printDrive(nvol.volid(), rest), fmt.Sprintf("create full clone of drive %s (%s)", key, vol.volid()), nil
	}
	// Linked clone: a new volume on the same storage layered on its base.
	// LVM-thin names it like any other disk (a thin snapshot,
	// pve-storage LvmThinPlugin.pm clone_image); file storages and ZFS
	// put the base in the name (Plugin.pm clone_image:
	// "9000/base-9000-disk-0.qcow2/101/vm-101-disk-0.qcow2").
	nvol := s.allocImage(st, nv.VMID, vol.Size, "vm")
	nvol.Parent = vol.volid()
	nvol.Content = vol.Content
	if st.Type != "lvmthin" {
		delete(s.st.Volumes, nvol.volid())
		nvol.Name = vol.Name + "/" + nvol.Name
		s.st.addVolume(nvol)
	}
	*created = append(*created, nvol)
	rest = schema.SetProp(rest, "size", schema.FormatSize(vol.Size))
	return printDrive(nvol.volid(), rest), fmt.Sprintf("create linked clone of drive %s (%s)", key, vol.volid()), nil
}

// templateGuest converts a stopped guest into a template. qemu-server
// checks, then locks in the worker and checks again; pve-container locks
// in the API process and forks the worker from inside the lock.
func (s *Server) templateGuest(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	check := func() (*vm, error) {
		v, err := s.guestAt(k, node, id)
		if err != nil {
			return nil, err
		}
		if err := s.writable(v, q); err != nil {
			return nil, err
		}
		if v.Conf["template"] == "1" {
			return nil, fail(http.StatusInternalServerError, "you can't convert a template to a template")
		}
		if v.Running {
			return nil, fail(http.StatusInternalServerError, "you can't convert a %s to template if %s is running", k.noun, k.noun)
		}
		return v, nil
	}
	if _, err := check(); err != nil {
		return nil, err
	}
	if k.syncLocks {
		if err := s.lockNow(q, s.guestLock(k, id)); err != nil {
			return nil, err
		}
		if _, err := check(); err != nil {
			return nil, err
		}
	}
	w := worker{locks: []lockReq{s.guestLock(k, id)}, uncontended: k.syncLocks, run: func(t *task) error {
		v, err := s.guestAt(k, node, id)
		if err != nil {
			return err
		}
		s.makeTemplate(t, v)
		return nil
	}}
	if !k.syncLocks {
		w.begin = func(*task) error { _, err := check(); return err }
	}
	upid := s.startWorker(node, k.tasks+"template", vmidString(id), w).UPID
	if k.templateNull {
		return nil, nil // PVE answers null here, although a worker runs: poll the config
	}
	return upid, nil
}

// makeTemplate renames the guest's disks to base volumes and marks it a template.
func (s *Server) makeTemplate(t *task, v *vm) {
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
}

// resizeGuest grows a disk. qemu-server checks everything in the worker,
// under the lock (API2/Qemu.pm resize_vm: the digest, the config lock, the
// disk, a CD-ROM, shrinking; the same size is a no-op); pve-container
// checks before it forks and again in the worker (API2/LXC.pm resize_vm,
// where the same size is an error).
func (s *Server) resizeGuest(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	disk := q.get("disk")
	check := func() (*vm, int64, int64, error) {
		v, err := s.guestAt(k, node, id)
		if err != nil {
			return nil, 0, 0, err
		}
		if err := s.checkDigest(v, q); err != nil {
			return nil, 0, 0, err
		}
		if err := s.writable(v, q); err != nil {
			return nil, 0, 0, err
		}
		val, ok := v.Conf[disk]
		if !ok || !isDiskKey(disk) {
			return nil, 0, 0, fail(http.StatusInternalServerError, "disk '%s' does not exist", disk)
		}
		_, rest := diskFile(val)
		if m, _ := schema.PropValue(rest, "media"); m == "cdrom" {
			return nil, 0, 0, fail(http.StatusInternalServerError, "you can't resize a cdrom")
		}
		var cur int64
		if sz, ok := schema.PropValue(rest, "size"); ok {
			cur, _, _ = parseSize(sz)
		}
		n, plus, err := parseSize(q.get("size"))
		if err != nil {
			return nil, 0, 0, paramErr1("size", "%v", err)
		}
		want := n
		if plus {
			want = cur + n
		}
		switch {
		case want < cur:
			return nil, 0, 0, fail(http.StatusInternalServerError, "%s", k.resizeShrink)
		case want == cur && k.resizeSame != "":
			return nil, 0, 0, fail(http.StatusInternalServerError, "%s", k.resizeSame)
		}
		return v, cur, want, nil
	}
	if k.resizeChecksBeforeFork {
		if _, _, _, err := check(); err != nil {
			return nil, err
		}
	}
	return s.startWorker(node, "resize", vmidString(id), worker{
		locks: []lockReq{s.guestLock(k, id)},
		run: func(t *task) error {
			v, cur, want, err := check()
			if err != nil || want == cur {
				return err
			}
			file, rest := diskFile(v.Conf[disk])
			v.Conf[disk] = printDrive(file, schema.SetProp(rest, "size", schema.FormatSize(want)))
			if vol, ok := s.st.Volumes[file]; ok {
				vol.Size = want
				t.logf("  Size of logical volume %s changed from %s to %s.", vol.Name, schema.FormatSize(cur), schema.FormatSize(want))
			}
			return nil
		},
	}).UPID, nil
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

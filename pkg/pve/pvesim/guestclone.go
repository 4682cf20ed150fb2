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

// cloneGuest clones a guest (POST …/clone): qemu-server locks in the
// worker, pve-container before it answers (cloneCT).
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
				Conf: map[string]string{"lock": "clone", "description": cloneTempDescription}}
			s.st.VMs[newid] = nv
			s.cloneGuestFirewall(id, newid) // clone_vmfw_conf
			conf, logs, err := s.cloneConf(k, c.source(), nv, c.full, c.storage, q)
			if err != nil {
				delete(s.st.VMs, newid)
				s.removeGuestFirewall(newid)
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

// cloneTempDescription is how qemu-server's temporary clone target config
// ("# qmclone temporary file\nlock: clone\n") reads back: its comment line
// is the description (QemuServer.pm parse_vm_config).
const cloneTempDescription = " qmclone temporary file"

// cloneSpec is a checked clone request.
type cloneSpec struct {
	src     *vm
	target  string // node
	full    bool
	storage *storage
	pool    string
	conf    map[string]string // the target's config, built under the locks
	logs    []string
	snap    string // clone this snapshot of src (snapshot.go cloneSource)
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
	c := &cloneSpec{src: src, target: src.Node, pool: q.get("pool")}
	if sn := q.get("snapname"); sn != "" && sn != "current" {
		if _, ok := src.Snapshots[sn]; !ok {
			return nil, fail(http.StatusInternalServerError, "snapshot '%s' does not exist", sn)
		}
		c.snap = sn
	}
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
	if !c.full {
		if err := s.linkedCloneable(k, src); err != nil {
			return nil, err
		}
	}
	if c.pool != "" {
		if err := s.checkPoolExist(c.pool); err != nil {
			return nil, err
		}
	}
	if err := s.checkClonePerms(k, q, src); err != nil {
		return nil, err
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
	s.cloneGuestFirewall(id, newid) // clone_vmfw_conf
	conf, logs, err := s.cloneConf(k, c.source(), nv, c.full, c.storage, q)
	if err != nil {
		unlockSrc()
		delete(s.st.VMs, newid)
		s.removeGuestFirewall(newid)
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
		name, format := cloudinitName(st, nv.VMID, vol.Format)
		nvol := &volume{Storage: st.ID, Name: name, Content: "images", Format: format, Size: vol.Size, VMID: nv.VMID, Ctime: time.Now().Unix()}
		s.st.addVolume(nvol)
		*created = append(*created, nvol)
		return printDrive(nvol.volid(), clonedDriveProps(rest, nvol)), "", nil
	}
	if full {
		nvol := s.allocImage(st, nv.VMID, vol.Size, "vm")
		nvol.Content = vol.Content
		*created = append(*created, nvol)
		return printDrive(nvol.volid(), clonedDriveProps(rest, nvol)), fmt.Sprintf("create full clone of drive %s (%s)", key, vol.volid()), nil
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
	return printDrive(nvol.volid(), clonedDriveProps(rest, nvol)), fmt.Sprintf("create linked clone of drive %s (%s)", key, vol.volid()), nil
}

// linkedCloneable is clone_vm's check that every volume a linked clone
// shares supports it: only a base volume has the clone feature
// (pve-storage volume_has_feature, the plugins' "clone => { base => … }").
// A VM copies its CD-ROMs' values, and copies cloud-init and TPM state
// drives in full (qemu-server API2/Qemu.pm clone_vm); a container checks
// every volume (pve-container API2/LXC.pm clone_vm).
func (s *Server) linkedCloneable(k *guestKind, src *vm) error {
	keys := slices.Sorted(maps.Keys(src.Conf))
	slices.SortStableFunc(keys, func(a, b string) int { return ctVolumeRank(a) - ctVolumeRank(b) })
	for _, key := range keys {
		val := src.Conf[key]
		if !isDiskKey(key) || k == s.qemu && (isCDROM(val, true) || isCloudinitDrive(val) || key == "tpmstate0") {
			continue
		}
		file, _ := diskFile(val)
		vol, ok := s.st.Volumes[file]
		if !ok || isBaseVolume(vol) {
			continue
		}
		if k == s.qemu {
			return fail(http.StatusInternalServerError, "Linked clone feature is not supported for '%s' (%s)", file, key)
		}
		return fail(http.StatusInternalServerError, "Linked clone feature for '%s' is not available", file)
	}
	return nil
}

// isBaseVolume reports whether vol is a base image, as parse_volname's
// isBase reads its name: the last component starts with "base-".
func isBaseVolume(vol *volume) bool {
	return strings.HasPrefix(vol.Name[strings.LastIndex(vol.Name, "/")+1:], "base-")
}

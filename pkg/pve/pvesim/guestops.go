package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// guestLock is lock_config on a guest of kind k: exclusive, 10 s.
func (s *Server) guestLock(k *guestKind, vmid int) lockReq {
	return lockReq{vmid: vmid, wait: s.pveWait(10), kind: k}
}

// templateGuest converts a stopped guest into a template. qemu-server
// checks, then locks in the worker and checks again; pve-container locks
// in the API process and forks the worker from inside the lock
// (qemu-server src/PVE/API2/Qemu.pm template, its $load_and_check: the
// config lock, snapshots, a template already, a running VM; pve-container
// src/PVE/API2/LXC.pm template). The worker makes each disk a base
// volume (QemuServer.pm template_create: vdisk_create_base, CD-ROMs and
// cloud-init drives left alone).
func (s *Server) templateGuest(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	check := func() (*vm, error) {
		v, err := s.writableGuest(k, q)
		if err != nil {
			return nil, err
		}
		if len(v.Snapshots) > 0 {
			return nil, fail(http.StatusInternalServerError, "unable to create template, because %s contains snapshots", k.noun)
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
	if err := skiplockRefused(q); err != nil {
		return nil, err
	}
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
// missing): pve-bridge then fails and so does the start, as on PVE; a VM's
// host PCI devices must be there (mapping.go).
func (s *Server) startGuest(t *task, v *vm) error {
	if v.Type == s.qemu.typ {
		// config_to_command parses the host devices before QEMU runs
		// the bridge scripts.
		if err := s.checkHostPCI(v); err != nil {
			return err
		}
	}
	if key, msg := s.missingBridge(v); msg != "" {
		t.logf("%s", msg)
		return s.kindOf(v).bridgeMissing(t, v, key)
	}
	s.boot(v)
	return nil
}

// missingBridge is the first NIC (by key) whose bridge the node's running
// network lacks, or whose SDN vnet cannot serve it; msg says why ("" when
// every NIC has its bridge).
func (s *Server) missingBridge(v *vm) (key, msg string) {
	running := s.st.Net[v.Node].Running
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		if !isNetKey(key) {
			continue
		}
		br, ok := schema.PropValue(props(v.Conf[key]), "bridge")
		if !ok {
			continue
		}
		if vnet, msg := s.sdnBridge(v.Node, br, v.Conf[key]); vnet && msg == "" {
			continue
		} else if vnet {
			return key, msg
		}
		if i, exists := running[br]; exists && (i.Type == "bridge" || i.Type == "OVSBridge") {
			continue
		}
		return key, fmt.Sprintf("bridge '%s' does not exist", br)
	}
	return "", ""
}

// boot marks a guest running; like a real guest, its agent needs a moment
// (one task duration) before it answers.
func (s *Server) boot(v *vm) {
	v.Running, v.StartedAt = true, time.Now().Unix()
	v.agentAt = time.Now().Add(s.opts.TaskDuration)
}

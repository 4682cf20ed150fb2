package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// migrationBlockerRe are the config keys of devices that tie a VM to its
// node (check_local_resources).
var migrationBlockerRe = lazyre.New(`^(usb|hostpci|serial|parallel|virtiofs)\d+$`)

// Migrating a guest to another node of the cluster: qemu-server
// API2/Qemu.pm migrate_vm, migrate_vm_precondition and QemuMigrate.pm;
// pve-container API2/LXC.pm migrate_vm and LXC/Migrate.pm; the phases are
// pve-guest-common AbstractMigrate.pm migrate.
//
// A guest's volumes on a storage that is not shared live on its node
// (volumeNode): a migration copies them to the same storage on the target
// under the same name, which the simulator models by moving the guest.

// volumeNode is the node a volume lives on, "" for one every node sees
// (a shared storage, or content that belongs to no guest).
func (s *Server) volumeNode(vol *volume) string {
	st, ok := s.st.Storages[vol.Storage]
	if !ok || st.Shared || vol.VMID == 0 {
		return ""
	}
	if v, ok := s.st.VMs[vol.VMID]; ok {
		return v.Node
	}
	return ""
}

// guestVolume is one volume a guest's config names.
type guestVolume struct {
	key, volid string
	vol        *volume // nil: not a volume of a storage (none, cdrom, a path)
	cdrom      bool
	unused     bool
	cloudinit  bool
}

// guestVolumes lists the volumes of a guest's config (foreach_volid):
// drives and mount points, then unused volumes, by key.
func (s *Server) guestVolumes(v *vm) []guestVolume {
	var out []guestVolume
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		if !isDiskKey(key) && !isUnusedKey(key) {
			continue
		}
		val := v.Conf[key]
		file, _ := diskFile(val)
		if file == "" {
			continue
		}
		gv := guestVolume{key: key, volid: file, vol: s.st.Volumes[file], unused: isUnusedKey(key),
			cdrom: isCDROM(val, false), cloudinit: isCloudinitDrive(val)}
		out = append(out, gv)
	}
	return out
}

// isLocal reports whether a guest volume lives on its node only.
func (s *Server) isLocal(gv guestVolume) bool {
	if gv.vol == nil {
		return gv.volid != "none"
	}
	st, ok := s.st.Storages[gv.vol.Storage]
	return ok && !st.Shared
}

// localResources is QemuMigrate/Helpers.pm check_local_resources: the
// devices that keep a VM on its node, the mapped ones (with whether the
// mapping allows a live migration), and per node the mapped devices it
// has no entry for.
func (s *Server) localResources(v *vm, running bool) (local []string, mapped map[string]map[string]any, missing map[string][]string) {
	mapped, missing = map[string]map[string]any{}, map[string][]string{}
	for _, n := range s.st.Nodes {
		missing[n] = []string{}
	}
	for _, key := range slices.Sorted(maps.Keys(v.Conf)) {
		val := v.Conf[key]
		items := props(val)
		get := func(k string) string {
			for i, it := range items {
				if it.Key == k || i == 0 && it.Key == "" && k == "host" {
					return it.Value
				}
			}
			return ""
		}
		switch {
		case strings.HasPrefix(key, "usb"):
			if strings.EqualFold(get("host"), "spice") {
				continue
			}
			if m := get("mapping"); m != "" {
				mapped[key] = map[string]any{"name": m}
				um := s.st.USBMappings[m]
				for _, n := range s.st.Nodes {
					if um == nil || len(nodeEntries(um.Map, n)) == 0 {
						missing[n] = append(missing[n], key)
					}
				}
			}
		case strings.HasPrefix(key, "hostpci"):
			if m := get("mapping"); m != "" {
				info := map[string]any{"name": m}
				mapped[key] = info
				pm := s.st.PCIMappings[m]
				for _, n := range s.st.Nodes {
					if pm == nil || len(nodeEntries(pm.Map, n)) == 0 {
						missing[n] = append(missing[n], key)
					}
				}
				if pm != nil && pm.liveMigration() {
					info["live-migration"] = 1
					continue
				}
				if !running {
					continue
				}
			}
		case strings.HasPrefix(key, "serial") && val == "socket":
			continue
		}
		if key == "ivshmem" || migrationBlockerRe.MatchString(key) {
			local = append(local, key)
		}
	}
	return local, mapped, missing
}

// migratePrecondition is GET …/migrate: what would keep the guest where it
// is, per node (qemu-server migrate_vm_precondition, pve-container's).
func (s *Server) migratePrecondition(k *guestKind, q *request) (any, error) {
	node, id := q.vars["node"], vmidOf(q)
	v, err := s.guestAt(k, node, id)
	if err != nil {
		return nil, err
	}
	if err := s.configLock(v, false); err != nil {
		return nil, err
	}
	allowedKey, notAllowedKey := "allowed_nodes", "not_allowed_nodes"
	if k == s.lxc {
		allowedKey, notAllowedKey = "allowed-nodes", "not-allowed-nodes"
	}
	res := map[string]any{"running": b2i(v.Running)}
	allowed, notAllowed := []string{}, map[string]any{}
	if k == s.lxc {
		for _, n := range s.st.Nodes {
			if n != node {
				allowed = append(allowed, n)
			}
		}
		res[allowedKey], res[notAllowedKey] = allowed, notAllowed
		return res, nil
	}
	local, mapped, missing := s.localResources(v, v.Running)
	for _, n := range s.st.Nodes {
		if n == node {
			continue
		}
		why := map[string]any{}
		var unavailable []string
		for _, gv := range s.guestVolumes(v) {
			if gv.unused || gv.vol == nil {
				continue
			}
			if st := s.st.Storages[gv.vol.Storage]; st != nil && (st.Disable || !st.onNode(n)) && !slices.Contains(unavailable, st.ID) {
				unavailable = append(unavailable, st.ID)
			}
		}
		if len(unavailable) > 0 {
			slices.Sort(unavailable)
			why["unavailable_storages"] = unavailable
		}
		if len(missing[n]) > 0 {
			why["unavailable-resources"] = missing[n]
		}
		if len(why) > 0 {
			notAllowed[n] = why
		} else {
			allowed = append(allowed, n)
		}
	}
	disks := []map[string]any{}
	for _, gv := range s.guestVolumes(v) {
		if !s.isLocal(gv) {
			continue
		}
		d := map[string]any{"volid": gv.volid, "drivename": gv.key, "cdrom": b2i(gv.cdrom), "is_unused": b2i(gv.unused), "size": 0}
		if gv.vol != nil {
			d["size"] = gv.vol.Size
		}
		if !gv.unused {
			d["is_attached"] = 1
		}
		disks = append(disks, d)
	}
	if local == nil {
		local = []string{}
	}
	res[allowedKey], res[notAllowedKey] = allowed, notAllowed
	res["local_disks"], res["local_resources"] = disks, local
	res["mapped-resources"] = append([]string{}, slices.Sorted(maps.Keys(mapped))...)
	res["mapped-resource-info"] = mapped
	res["has-dbus-vmstate"] = 1
	return res, nil
}

// migration is one migration task's state: its log prefix and how long
// it took.
type migration struct {
	t       *task
	started time.Time
}

// log writes a migration log line as AbstractMigrate.pm's log does: each
// line prefixed with the time, errors marked.
func (m *migration) log(level, format string, args ...any) {
	prefix := time.Now().Format("2006-01-02 15:04:05")
	if level == "err" {
		prefix += " ERROR:"
	}
	for _, line := range strings.Split(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n") {
		m.t.logf("%s %s", prefix, line)
	}
}

func (m *migration) duration() string {
	d := int(time.Since(m.started).Seconds())
	return fmt.Sprintf("%02d:%02d:%02d", d/3600, d/60%60, d%60)
}

// aborted is how AbstractMigrate.pm migrate ends on an error before the
// guest moved: logged with the duration, the task says "migration aborted".
func (m *migration) aborted(err error) error {
	m.log("err", "migration aborted (duration %s): %v", m.duration(), err)
	return fmt.Errorf("migration aborted")
}

// migrateGuest is POST …/migrate: the checks of the API handler, then a
// qmigrate/vzmigrate worker that takes the guest's lock, prepares (the
// checks again, and for a container in restart mode its shutdown), sets
// the lock "migrate", scans the volumes and, a task duration later, moves
// the guest, its local volumes and — live, or by a restart — its running
// state to the target.
func (s *Server) migrateGuest(k *guestKind, q *request) (any, error) {
	node, id, target := q.vars["node"], vmidOf(q), q.get("target")
	if target == node {
		return nil, paramErr1("target", "target is local node.")
	}
	if !s.st.hasNode(target) {
		return nil, fail(http.StatusInternalServerError, "no such cluster node '%s'", target)
	}
	if k == s.qemu {
		for _, p := range []string{"force", "migration_type", "migration_network"} {
			if q.has(p) && q.get(p) != "0" && q.user != superuser {
				return nil, paramErr1(p, "Only root may use this option.")
			}
		}
	}
	if q.get("targetstorage") != "" || q.get("target-storage") != "" {
		return nil, fail(http.StatusNotImplemented, "a storage map for the migration is not supported by the simulator")
	}
	v, err := s.guestAt(k, node, id)
	if err != nil {
		return nil, err
	}
	if k == s.qemu {
		if err := s.configLock(v, false); err != nil {
			return nil, err
		}
	}
	online, restart := q.bool("online"), q.bool("restart")
	switch {
	case k == s.qemu && v.Running && !online:
		return nil, fail(http.StatusInternalServerError, "can't migrate running VM without --online")
	case k == s.lxc && v.Running && !online && !restart:
		return nil, fail(http.StatusInternalServerError, "can't migrate running container without --online or --restart")
	}
	if k == s.qemu {
		if err := s.checkStorageAvailability(v, target); err != nil {
			return nil, err
		}
	}
	// $rpcenv->{type} ne 'ha': the LRM's own migration is not redirected.
	if _, _, managed := s.haManaged(v); managed && !q.fromHA {
		return s.haMigrate(k, v, node, target), nil // ha_migrate.go
	}
	m := &migration{started: time.Now()}
	var running bool // the guest was running when the migration started
	// qmigrate, vzmigrate
	return s.startWorker(node, strings.TrimSuffix(k.tasks, "m")+"migrate", vmidString(id), worker{
		locks: []lockReq{s.guestLock(k, id)},
		lockFailed: func(t *task, err error) error {
			m.t = t
			return m.aborted(err)
		},
		begin: func(t *task) error {
			m.t = t
			v, err := s.guestAt(k, node, id)
			if err == nil {
				running = v.Running
				err = s.prepareMigration(m, k, v, target, q)
			}
			if err != nil {
				if v != nil && v.Conf["lock"] == "migrate" {
					delete(v.Conf, "lock") // phase1_cleanup
				}
				return m.aborted(err)
			}
			return nil
		},
		run: func(t *task) error {
			v, err := s.guestAt(k, node, id)
			if err != nil {
				return m.aborted(err)
			}
			return s.finishMigration(m, k, v, target, running, restart)
		},
	}).UPID, nil
}

// checkStorageAvailability is qemu-server's check_storage_availability:
// every drive's storage is enabled, on the target too, and holds the
// volume's content type.
func (s *Server) checkStorageAvailability(v *vm, target string) error {
	for _, gv := range s.guestVolumes(v) {
		if gv.unused || gv.vol == nil {
			continue
		}
		for _, n := range []string{v.Node, target} {
			if _, err := s.moveTargetStorage(gv.vol.Storage, n); err != nil {
				return err
			}
		}
		if st := s.st.Storages[gv.vol.Storage]; !st.allows(gv.vol.Content) {
			return fail(http.StatusInternalServerError, "%s: content type '%s' is not available on storage '%s'", gv.volid, gv.vol.Content, st.ID)
		}
	}
	return nil
}

// finishMigration is phases 2 and 3: the guest's local volumes are copied
// (same storage and name on the target), its config moves, a running VM
// continues on the target (QEMU must start there: its bridges and host
// devices are checked), and the lock goes; a container migrated in
// restart mode starts on the target.
func (s *Server) finishMigration(m *migration, k *guestKind, v *vm, target string, wasRunning, restart bool) error {
	if k == s.qemu && v.Running {
		moved := *v
		moved.Node = target
		if err := s.canRunOn(&moved); err != nil {
			m.log("err", "online migrate failure - %v", err)
			delete(v.Conf, "lock")
			m.log("err", "migration finished with problems (duration %s)", m.duration())
			return fmt.Errorf("migration problems")
		}
		m.log("info", "starting VM %d on remote node '%s'", v.VMID, target)
		for _, gv := range s.guestVolumes(v) {
			if gv.vol != nil && s.isLocal(gv) && !gv.unused && !gv.cloudinit {
				m.log("info", "%s: start migration to nbd:unix:/run/qemu-server/%d_nbd.migrate:exportname=drive-%s", gv.key, v.VMID, gv.key)
			}
		}
		m.log("info", "migration status: completed")
	}
	for _, gv := range s.guestVolumes(v) {
		if gv.vol != nil && s.isLocal(gv) && (!wasRunning || k == s.lxc || gv.unused || gv.cloudinit) {
			m.log("info", "volume '%s' is '%s' on the target", gv.volid, gv.volid)
		}
	}
	v.Node = target
	delete(v.Conf, "lock")
	if v.Running {
		v.StartedAt = time.Now().Unix() // the QEMU process on the target
	}
	if k == s.lxc {
		m.log("info", "start final cleanup")
		if restart && wasRunning {
			m.log("info", "start container on target node")
			if err := s.canRunOn(v); err != nil {
				m.log("err", "failed to start container: %v", err)
				m.log("err", "migration finished with problems (duration %s)", m.duration())
				return fmt.Errorf("migration problems")
			}
			s.applyPending(v)
			s.boot(v)
		}
	}
	m.log("info", "migration finished successfully (duration %s)", m.duration())
	return nil
}

// canRunOn is what starting v on its node would refuse: a host device
// that is not there, a bridge the node's running network lacks.
func (s *Server) canRunOn(v *vm) error {
	if v.Type == s.qemu.typ {
		if err := s.checkHostPCI(v); err != nil {
			return err
		}
	}
	if _, msg := s.missingBridge(v); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// nodeIP is a node's address as migration logs name it (its vmbr0's).
func (s *Server) nodeIP(node string) string {
	if nn := s.st.Net[node]; nn != nil {
		if br := nn.Running["vmbr0"]; br != nil && br.CIDR != "" {
			ip, _, _ := strings.Cut(br.CIDR, "/")
			return ip
		}
	}
	return "127.0.0." + strconv.Itoa(1+slices.Index(s.st.Nodes, node))
}

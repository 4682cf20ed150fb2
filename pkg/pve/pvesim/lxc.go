package pvesim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Create/clone parameters that are not config keys; the secrets among them
// (password, ssh-public-keys) go into the container, never into its config.
// unprivileged is one too: create_vm takes it apart and writes it itself.
var nonConfigCT = setOf("node", "vmid", "digest", "delete", "revert", "force", "pool", "start", "storage",
	"unique", "restore", "bwlimit", "ha-managed", "ostemplate", "password", "ssh-public-keys",
	"ignore-unpack-errors")

// lxcKind holds the container facts of the guest handlers (pve-container).
func lxcKind() *guestKind {
	config, _ := schema.Default().Lookup("PUT", "/nodes/{node}/lxc/{vmid}/config")
	return &guestKind{
		typ: "lxc", api: "lxc", noun: "CT", confDir: "lxc", tasks: "vz", nameKey: "hostname",
		config:    config,
		nonConfig: nonConfigCT,
		subdirs: []string{"config", "pending", "status", "vncproxy", "termproxy", "vncwebsocket", "spiceproxy",
			"migrate", "clone", "resize", "move_volume", "rrd", "rrddata", "firewall", "snapshot", "interfaces"},
		lockErr:   lockTimeoutCT,
		normalize: (*Server).normalizeCTValue,
		normalizeNet: func(s *Server, key, val string, newMAC bool) (string, error) {
			return s.normalizeCTNet(key, val, newMAC)
		},
		mac: func(val string) string {
			mac, _ := schema.PropValue(props(val), "hwaddr")
			return strings.ToUpper(mac)
		},
		update: (*Server).updateCT,
		// pve-container LXC/Config.pm parse_pct_config keeps a newline per
		// comment line.
		description:    ctDescription,
		statusName:     func(vmid int) string { return fmt.Sprintf("CT%d", vmid) },
		digestMismatch: "detected modified configuration - file changed by other user? Try again.",
		cpus:           ctCPUs,
		row:            ctRow,
		status: func(s *Server, v *vm) map[string]any {
			m := ctRow(s, v)
			m["ha"] = map[string]any{"managed": 0}
			return m
		},
		bridgeMissing: func(_ *task, v *vm, _ string) error {
			return fmt.Errorf("startup for container '%d' failed", v.VMID)
		},
		stateBeforeFork: true,
		templateNoun:    "CT",
		destroyRunning:  "unable to destroy CT %d - container is running",
		templateNull:    true,
		// pve-container API2/LXC.pm clone_vm and template: lock_config
		// and create_and_lock_config in the API process.
		syncLocks: true,
		// pve-common Tools.pm assert_if_modified; API2/LXC.pm resize_vm.
		resizeChecksBeforeFork: true,
		resizeShrink:           "unable to shrink disk size",
		resizeSame:             "disk is already at specified size",
		// create_vm: lock_config in the worker; on failure the stub stays.
		createLockWait:  10,
		createKeepsStub: true,
		// API2/LXC/Status.pm vm_shutdown: timeout 60 by default; LXC.pm
		// vm_stop (lxc-stop kills quietly with forceStop); vm_reboot
		// stops and starts in its own task.
		shutdownTimeout:  60,
		stopsInTime:      ctStopsInTime,
		shutdownTimedOut: "container did not stop",
		rebootInTask:     true,
	}
}

func (s *Server) lxcRoutes() []route {
	k := s.lxc
	return append(s.guestRoutes(k, "lxc"),
		k.route("POST /nodes/{node}/lxc", s.createCT),
		k.route("POST /nodes/{node}/lxc/{vmid}/move_volume", s.moveVolume),
		k.route("GET /nodes/{node}/lxc/{vmid}/interfaces", s.ctInterfaces),
	)
}

// normalizeCTNet writes a container NIC back as PVE does:
// "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:…,ip=dhcp,type=veth".
func (s *Server) normalizeCTNet(key, val string, newMAC bool) (string, error) {
	items := props(val)
	name, ok := schema.PropValue(items, "name")
	if !ok || name == "" {
		return "", paramErr1(key, "missing property - 'name'")
	}
	p, _ := s.lxc.config.Param(key)
	rest := parseBools(p, schema.DeleteProp(items, "name"))
	if mac, ok := schema.PropValue(rest, "hwaddr"); !ok || mac == "" || newMAC {
		rest = schema.SetProp(rest, "hwaddr", s.newMAC())
	} else {
		rest = schema.SetProp(rest, "hwaddr", strings.ToUpper(mac))
	}
	if _, ok := schema.PropValue(rest, "type"); !ok {
		rest = schema.SetProp(rest, "type", "veth")
	}
	return printProps(nil, []schema.KV{{Key: "name", Value: name}}, rest), nil
}

// normalizeCTValue applies the container write-backs: NICs, tags,
// description, and mount points: with created set (create) a new volume
// for "STOR:SIZE" ("STOR:vm-101-disk-0,size=8G"); without (an update) the
// value is only checked, its volume is made when the change applies.
func (s *Server) normalizeCTValue(v *vm, key, val string, created *[]*volume) (string, error) {
	switch {
	case isNetKey(key):
		return s.normalizeCTNet(key, val, false)
	case key == "tags":
		return normalizeTags(val), nil
	case key == "description":
		return ctDescription(val), nil
	case key != "rootfs" && !strings.HasPrefix(key, "mp"):
		return val, nil
	}
	file, rest := diskFile(val)
	if p, ok := s.lxc.config.Param(key); ok {
		rest = parseBools(p, rest) // print_ct_mountpoint writes parse_ct_mountpoint's values
	}
	if strings.HasPrefix(key, "mp") {
		if _, ok := schema.PropValue(rest, "mp"); !ok {
			return "", paramErr1(key, "missing property - 'mp'")
		}
	}
	m := newDiskRe.FindStringSubmatch(file)
	if m == nil {
		if vm := volidRe.FindStringSubmatch(file); vm != nil {
			vol, ok := s.st.Volumes[file]
			if !ok {
				return "", fail(http.StatusInternalServerError, "volume '%s' does not exist", file)
			}
			// apply_pending_mountpoint rescans an existing volume's size
			// (pve-container LXC/Config.pm $rescan_volume).
			rest = schema.SetProp(rest, "size", schema.FormatSize(vol.Size))
			if created == nil {
				if err := s.ctContentCheck(vm[1]); err != nil {
					return "", err
				}
			}
		}
		return printDrive(file, rest), nil
	}
	st, ok := s.st.Storages[m[1]]
	if !ok {
		return "", fail(http.StatusInternalServerError, "storage '%s' does not exist", m[1])
	}
	if created == nil {
		if err := s.ctContentCheck(m[1]); err != nil {
			return "", err
		}
		return printDrive(file, rest), nil
	}
	if !st.allows("rootdir") {
		// pve-container API2/LXC.pm create_vm check_and_activate_storage
		// names the parameter "storage" whichever key held the volume.
		return "", paramErr1("storage", "storage '%s' does not support container directories", m[1])
	}
	vol, nval, err := s.newCTVolume(v, st, m[2], rest, key)
	if err != nil {
		return "", err
	}
	*created = append(*created, vol)
	return nval, nil
}

// ctContentCheck is update_pct_config's check of a mount point's storage.
func (s *Server) ctContentCheck(id string) error {
	st, ok := s.st.Storages[id]
	if !ok {
		return fail(http.StatusInternalServerError, "storage '%s' does not exist", id)
	}
	if !st.allows("rootdir") {
		return fail(http.StatusInternalServerError, "storage '%s' does not allow content type 'rootdir' (Container)", id)
	}
	return nil
}

// newCTVolume allocates a container volume of gbs GiB on st.
func (s *Server) newCTVolume(v *vm, st *storage, gbs string, rest []schema.KV, key string) (*volume, string, error) {
	n, _ := strconv.ParseFloat(gbs, 64)
	size := int64(n * float64(gib))
	if size <= 0 {
		return nil, "", paramErr1(key, "invalid disk size '%s'", gbs)
	}
	vol := s.allocImage(st, v.VMID, size, "vm")
	vol.Content = "rootdir"
	if vol.Format == "qcow2" {
		// Directory storages hold container volumes as raw files.
		delete(s.st.Volumes, vol.volid())
		vol.Name, vol.Format = strings.TrimSuffix(vol.Name, ".qcow2")+".raw", "raw"
		s.st.addVolume(vol)
	}
	return vol, printDrive(vol.volid(), schema.SetProp(rest, "size", schema.FormatSize(size))), nil
}

// allocMountPoint is apply_pending_mountpoint's allocation: a pending
// "STOR:SIZE" mount point gets its volume when the change applies.
func (s *Server) allocMountPoint(v *vm, key, val string) (string, error) {
	file, rest := diskFile(val)
	m := newDiskRe.FindStringSubmatch(file)
	if m == nil {
		return val, nil
	}
	st, ok := s.st.Storages[m[1]]
	if !ok {
		return "", fail(http.StatusInternalServerError, "storage '%s' does not exist", m[1])
	}
	_, nval, err := s.newCTVolume(v, st, m[2], rest, key)
	return nval, err
}

var bareSizeRe = lazyre.New(`^\d+(\.\d+)?$`)

// ctVolumeRank orders a container's keys for allocation: rootfs, the
// mount points by number, then the rest.
func ctVolumeRank(key string) int {
	if key == "rootfs" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(key, "mp")); err == nil && strings.HasPrefix(key, "mp") {
		return 1 + n
	}
	return 1000
}

// ostypeOf guesses the container OS from the template name, as pct does from its contents.
func ostypeOf(template string) string {
	for _, os := range []string{"debian", "ubuntu", "alpine", "centos", "fedora", "archlinux", "opensuse", "gentoo", "nixos"} {
		if strings.Contains(template, os) {
			return os
		}
	}
	return "unmanaged"
}

func (s *Server) createCT(k *guestKind, q *request) (any, error) {
	id, poolID, err := s.newGuest(q, q.bool("restore"))
	if err != nil {
		return nil, err
	}
	if err := s.checkCreatePerms(k, q, id, poolID); err != nil {
		return nil, err
	}
	tmpl := q.get("ostemplate")
	if tmpl == "" {
		return nil, paramErr1("ostemplate", "property is missing and it is not optional")
	}
	tv, ok := s.st.Volumes[tmpl]
	if !ok || tv.Content != "vztmpl" && tv.Content != "backup" {
		return nil, fail(http.StatusInternalServerError, "volume '%s' does not exist", tmpl)
	}
	if err := s.createLock(k, q, id); err != nil {
		return nil, err
	}
	keys, _, _, err := configParams(k, q)
	if err != nil {
		return nil, err
	}
	storageID := orDefault(q.get("storage"), "local")
	if !q.has("rootfs") {
		q.params.Set("rootfs", storageID+":4")
		keys = append(keys, "rootfs")
	}
	// create_vm: a bare number for rootfs or a mount point is a size on
	// the default storage (pve-container API2/LXC.pm; only root@pam gets
	// this far with one: check_ct_modify_config_perm refuses it to anyone
	// else, tokens included, as an arbitrary path).
	for _, key := range keys {
		if (key == "rootfs" || strings.HasPrefix(key, "mp")) && bareSizeRe.MatchString(q.get(key)) {
			q.params.Set(key, storageID+":"+q.get(key))
		}
	}
	// create_disks allocates in valid_volume_keys order: rootfs, then
	// mp0, mp1, … (pve-container LXC.pm, LXC/Config.pm), which numbers
	// the volumes.
	slices.SortStableFunc(keys, func(a, b string) int { return ctVolumeRank(a) - ctVolumeRank(b) })
	// create_vm takes unprivileged apart: it defaults to 1 for a new
	// container and is written only when set (pve-container API2/LXC.pm).
	unprivileged := !q.has("unprivileged") || q.bool("unprivileged")
	keys = slices.DeleteFunc(keys, func(key string) bool { return key == "unprivileged" })
	v := &vm{VMID: id, Node: q.vars["node"], Type: k.typ, Conf: map[string]string{}}
	vals, created, err := s.buildValues(v, q, keys, true)
	if err != nil {
		return nil, err
	}
	// The defaults create_vm writes: hostname CT<vmid>, 512 MiB of memory
	// and of swap; the setup code detects arch and ostype.
	conf := map[string]string{"arch": "amd64", "ostype": ostypeOf(tmpl), "hostname": fmt.Sprintf("CT%d", id),
		"memory": "512", "swap": "512"}
	for key, val := range vals {
		if val != "" {
			conf[key] = val
		}
	}
	if unprivileged {
		conf["unprivileged"] = "1"
	}
	hasKeys := q.get("ssh-public-keys") != ""
	path := s.volumePath(s.st.Storages[tv.Storage], tv)
	return s.startCreate(k, v, conf, poolID, q, func(t *task) {
		allocLog(t, created)
		t.logf("extracting archive '%s'", path)
		t.logf("Total bytes read: %d (%s)", tv.Size*3, schema.FormatSize(tv.Size*3))
		t.logf("Detected container architecture: amd64")
		if hasKeys {
			t.logf("Creating SSH host key 'ssh_host_ed25519_key' - this may take some time ...")
		}
	}), nil
}

func ctCPUs(conf map[string]string) int {
	if n, err := strconv.Atoi(conf["cores"]); err == nil && n > 0 {
		return n
	}
	return nodeCPUs
}

func ctMaxSwap(conf map[string]string) int64 {
	if n, err := strconv.ParseInt(conf["swap"], 10, 64); err == nil {
		return n * mib
	}
	return 512 * mib
}

// ctRow is a container's GET /nodes/{node}/lxc row (and status).
func ctRow(s *Server, v *vm) map[string]any {
	m := map[string]any{
		"vmid": v.VMID, "status": v.status(), "maxmem": vmMaxMem(v.Conf), "maxswap": ctMaxSwap(v.Conf),
		"maxdisk": vmMaxDisk(v.Conf), "cpus": ctCPUs(v.Conf), "mem": 0, "disk": 0, "cpu": 0,
		"uptime": v.uptime(), "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	s.addConfStatus(m, v)
	if v.Running {
		m["mem"] = vmMaxMem(v.Conf) / 8
		m["disk"] = vmMaxDisk(v.Conf) / 4
	}
	return m
}

// ctInterfaces answers GET …/lxc/{vmid}/interfaces; the IP is data only.
func (s *Server) ctInterfaces(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	if !v.Running {
		return nil, fail(http.StatusInternalServerError, "CT %d not running", v.VMID)
	}
	out := []map[string]any{{
		"name": "lo", "hwaddr": "00:00:00:00:00:00", "hardware-address": "00:00:00:00:00:00", "inet": "127.0.0.1/8",
		"ip-addresses": []any{map[string]any{"ip-address": "127.0.0.1", "ip-address-type": "inet", "prefix": 8}},
	}}
	for i := 0; i < 32; i++ {
		val, ok := v.Conf["net"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		items := props(val)
		name, _ := schema.PropValue(items, "name")
		mac, _ := schema.PropValue(items, "hwaddr")
		ip, prefix := fmt.Sprintf("10.%d.%d.%d", 20+i, v.VMID/256%256, v.VMID%250+2), 24
		if cidr, ok := schema.PropValue(items, "ip"); ok && cidr != "dhcp" && cidr != "manual" {
			addr, bits, _ := strings.Cut(cidr, "/")
			ip = addr
			if b, err := strconv.Atoi(bits); err == nil {
				prefix = b
			}
		}
		mac = strings.ToLower(mac)
		out = append(out, map[string]any{
			"name": name, "hwaddr": mac, "hardware-address": mac, "inet": fmt.Sprintf("%s/%d", ip, prefix),
			"ip-addresses": []any{map[string]any{"ip-address": ip, "ip-address-type": "inet", "prefix": prefix}},
		})
	}
	return out, nil
}

package pvesim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Request parameters of create/config/clone that are not config keys.
var nonConfigQemu = setOf("node", "vmid", "digest", "delete", "revert", "skiplock", "background_delay", "force",
	"pool", "start", "storage", "unique", "archive", "live-restore", "bwlimit", "import-working-storage", "ha-managed",
	"skip_cloud_init")

// qemuKind holds the QEMU facts of the guest handlers (qemu-server).
func qemuKind() *guestKind {
	config, _ := schema.Default().Lookup("POST", "/nodes/{node}/qemu/{vmid}/config")
	return &guestKind{
		typ: "", api: "qemu", noun: "VM", confDir: "qemu-server", tasks: "qm", nameKey: "name",
		config:    config,
		nonConfig: nonConfigQemu,
		subdirs: []string{"config", "pending", "status", "unlink", "vncproxy", "termproxy", "migrate",
			"resize", "move", "rrd", "rrddata", "monitor", "agent", "snapshot", "spiceproxy", "sendkey",
			"firewall", "mtunnel", "remote_migrate"},
		lockErr:   lockTimeout,
		normalize: (*Server).normalizeQemu,
		normalizeNet: func(s *Server, key, val string, newMAC bool) (string, error) {
			return s.normalizeNet(key, val, newMAC)
		},
		mac: func(val string) string {
			_, mac := netModelMAC(val)
			return mac
		},
		update: (*Server).updateQemu,
		// qemu-server QemuServer.pm parse_vm_config strips it.
		description:    qemuDescription,
		statusName:     func(vmid int) string { return fmt.Sprintf("VM %d", vmid) },
		digestMismatch: "checksum mismatch (file change by other user?)",
		cpus:           vmCPUs,
		row:            qemuRow,
		status:         qemuStatus,
		bridgeMissing: func(t *task, v *vm, key string) error {
			t.logf("kvm: -netdev type=tap,id=%s,ifname=tap%di%s,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown,vhost=on: network script /usr/libexec/qemu-server/pve-bridge failed with status 512",
				key, v.VMID, strings.TrimPrefix(key, "net"))
			return fmt.Errorf("start failed: QEMU exited with code 1")
		},
		templateNoun:   "vm",
		destroyRunning: "VM %d is running - destroy failed",
		// qemu-server API2/Qemu.pm resize_vm.
		resizeShrink: "shrinking disks is not supported",
		// create_vm: lock_config_full($vmid, 1) in the worker; on failure
		// the worker unlinks the config.
		createLockWait: 1,
		// QemuServer.pm _do_vm_stop: $timeout = 60 unless given.
		shutdownTimeout:  60,
		stopsInTime:      qemuStopsInTime,
		shutdownTimedOut: "VM quit/powerdown failed - got timeout",
		shutdownKill:     "VM still running - terminating now with SIGTERM",
	}
}

func (s *Server) qemuRoutes() []route {
	k := s.qemu
	return append(s.guestRoutes(k, "qemu"),
		k.route("POST /nodes/{node}/qemu", s.createVM),
		k.route("POST /nodes/{node}/qemu/{vmid}/config", s.postConfig),
		k.route("POST /nodes/{node}/qemu/{vmid}/move_disk", s.moveDisk),
		k.route("GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", s.agentIfaces),
		k.route("GET /nodes/{node}/qemu/{vmid}/cloudinit", s.getCloudinit),
		k.route("PUT /nodes/{node}/qemu/{vmid}/cloudinit", s.regenerateCloudinit),
	)
}

func (s *Server) createVM(k *guestKind, q *request) (any, error) {
	if err := checkSSHKeys(q); err != nil {
		return nil, err
	}
	id, poolID, err := s.newGuest(q, q.has("archive"))
	if err != nil {
		return nil, err
	}
	if err := s.checkCreatePerms(k, q, id, poolID); err != nil {
		return nil, err
	}
	if err := s.createLock(k, q, id); err != nil {
		return nil, err
	}
	keys, _, _, err := configParams(k, q)
	if err != nil {
		return nil, err
	}
	v := &vm{VMID: id, Node: q.vars["node"], Type: k.typ, Conf: map[string]string{}}
	if q.bool("template") {
		// create_vm hands create_disks the new config: is_template
		// makes its disks base volumes (qemu-server API2/Qemu.pm).
		v.Conf["template"] = "1"
	}
	vals, created, err := s.buildValues(v, q, keys, true)
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for key, val := range vals {
		if val != "" {
			conf[key] = val
		}
	}
	if _, ok := conf["smbios1"]; !ok {
		conf["smbios1"] = "uuid=" + s.newUUID()
	}
	if g, ok := conf["vmgenid"]; !ok || g == "1" {
		conf["vmgenid"] = s.newUUID()
	} else if g == "0" {
		delete(conf, "vmgenid")
	}
	conf["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", time.Now().Unix())
	if _, ok := conf["boot"]; !ok {
		if devs := defaultBootDevices(conf); len(devs) > 0 {
			conf["boot"] = "order=" + strings.Join(devs, ";")
		}
	}
	return s.startCreate(k, v, conf, poolID, q, func(t *task) { allocLog(t, created) }), nil
}

// qemuRow is a VM's GET /nodes/{node}/qemu row.
func qemuRow(s *Server, v *vm) map[string]any {
	row := map[string]any{
		"vmid": v.VMID, "status": v.status(), "maxmem": vmMaxMem(v.Conf), "maxdisk": vmMaxDisk(v.Conf),
		"cpus": vmCPUs(v.Conf), "mem": 0, "cpu": 0, "uptime": v.uptime(),
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	s.addConfStatus(row, v)
	if v.Running {
		row["qmpstatus"] = "running"
		row["pid"] = 10000 + v.VMID
		row["mem"] = vmMaxMem(v.Conf) / 4
	}
	return row
}

// qemuStatus is a VM's GET …/status/current answer.
func qemuStatus(s *Server, v *vm) map[string]any {
	m := map[string]any{
		"vmid": v.VMID, "status": v.status(), "uptime": v.uptime(), "cpus": vmCPUs(v.Conf),
		"maxmem": vmMaxMem(v.Conf), "maxdisk": vmMaxDisk(v.Conf), "mem": 0, "cpu": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0, "ha": map[string]any{"managed": 0},
		"qmpstatus": v.status(),
	}
	s.addConfStatus(m, v)
	if agentEnabled(v.Conf) {
		m["agent"] = 1
	}
	if strings.HasPrefix(v.Conf["serial0"], "socket") {
		m["serial"] = 1
	}
	if v.Running {
		m["pid"] = 10000 + v.VMID
		m["mem"] = vmMaxMem(v.Conf) / 4
		m["running-machine"] = "pc-i440fx-9.2+pve1"
		m["running-qemu"] = "9.2.0"
	}
	return m
}

func agentEnabled(conf map[string]string) bool {
	items := props(conf["agent"])
	if len(items) > 0 && items[0].Key == "" {
		return items[0].Value == "1"
	}
	e, _ := schema.PropValue(items, "enabled")
	return e == "1"
}

// normalizeQemu applies PVE's write-backs for one VM config key.
func (s *Server) normalizeQemu(v *vm, key, val string, created *[]*volume) (string, error) {
	switch {
	case isNetKey(key):
		return s.normalizeNet(key, val, false)
	case isDiskKey(key):
		return s.normalizeDisk(v, key, val, created)
	case key == "tags":
		return normalizeTags(val), nil
	case key == "description":
		return qemuDescription(val), nil
	}
	return val, nil
}

// qemuNet is the schema of a VM's netN value (model, key aliases, MAC).
func qemuNet() *schema.Param {
	m, _ := schema.Default().Lookup("POST", "/nodes/{node}/qemu/{vmid}/config")
	p, _ := m.Param("net0")
	return p
}

// netModelMAC extracts model and MAC from a netN value; the schema resolves
// "virtio=MAC" to model=virtio,macaddr=MAC.
func netModelMAC(val string) (model, mac string) {
	items, err := schema.ParsePropertyString(val, qemuNet())
	if err != nil {
		return "", ""
	}
	model, _ = schema.PropValue(items, "model")
	mac, _ = schema.PropValue(items, "macaddr")
	return model, strings.ToUpper(mac)
}

// normalizeNet writes a NIC back as PVE does: "virtio=BC:24:11:…,bridge=vmbr0".
func (s *Server) normalizeNet(key, val string, newMAC bool) (string, error) {
	net := qemuNet()
	items, err := schema.ParsePropertyString(val, net)
	if err != nil {
		return "", paramErr1(key, "invalid format - %v", err)
	}
	model, _ := schema.PropValue(items, "model")
	if model == "" {
		return "", paramErr1(key, "invalid format - missing network card model")
	}
	mac, _ := schema.PropValue(items, "macaddr")
	if mac == "" || newMAC {
		mac = s.newMAC()
	}
	rest := parseBools(net, schema.DeleteProp(schema.DeleteProp(items, "model"), "macaddr"))
	lead := []schema.KV{{Key: "model", Value: model}, {Key: "macaddr", Value: strings.ToUpper(mac)}}
	return printProps(net, lead, rest), nil
}

func vmCPUs(conf map[string]string) int {
	cores, sockets := 1, 1
	if n, err := strconv.Atoi(conf["cores"]); err == nil {
		cores = n
	}
	if n, err := strconv.Atoi(conf["sockets"]); err == nil {
		sockets = n
	}
	if n, err := strconv.Atoi(conf["vcpus"]); err == nil && n > 0 {
		return n
	}
	return cores * sockets
}

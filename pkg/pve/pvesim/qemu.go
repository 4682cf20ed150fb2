package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func (s *Server) qemuRoutes() []route {
	return []route{
		r("GET /nodes/{node}/qemu", s.listVMs),
		r("POST /nodes/{node}/qemu", s.createVM).withTask(),
		r("GET /nodes/{node}/qemu/{vmid}", s.vmIndex),
		r("DELETE /nodes/{node}/qemu/{vmid}", s.destroyVM).withTask(),
		r("GET /nodes/{node}/qemu/{vmid}/config", s.getVMConfig),
		r("POST /nodes/{node}/qemu/{vmid}/config", s.postVMConfig).withTask(),
		r("PUT /nodes/{node}/qemu/{vmid}/config", s.putVMConfig),
		r("GET /nodes/{node}/qemu/{vmid}/pending", s.getVMPending),
		r("GET /nodes/{node}/qemu/{vmid}/status/current", s.vmStatus),
		r("POST /nodes/{node}/qemu/{vmid}/status/start", s.vmPower("start")).withTask(),
		r("POST /nodes/{node}/qemu/{vmid}/status/stop", s.vmPower("stop")).withTask(),
		r("POST /nodes/{node}/qemu/{vmid}/status/shutdown", s.vmPower("shutdown")).withTask(),
		r("POST /nodes/{node}/qemu/{vmid}/status/reboot", s.vmPower("reboot")).withTask(),
		r("POST /nodes/{node}/qemu/{vmid}/clone", s.cloneVM).withTask(),
		r("POST /nodes/{node}/qemu/{vmid}/template", s.templateVM).withTask(),
		r("PUT /nodes/{node}/qemu/{vmid}/resize", s.resizeVM).withTask(),
		r("GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", s.agentIfaces),
	}
}

func (v *vm) status() string {
	if v.Running {
		return "running"
	}
	return "stopped"
}

func (v *vm) uptime() int64 {
	if !v.Running {
		return 0
	}
	return max(time.Now().Unix()-v.StartedAt, 0)
}

func noConfig(node, typ string, vmid int) error {
	dir := "qemu-server"
	if typ == "lxc" {
		dir = "lxc"
	}
	return fail(http.StatusInternalServerError, "Configuration file 'nodes/%s/%s/%d.conf' does not exist", node, dir, vmid)
}

// guestType is "lxc" for /nodes/{node}/lxc/… requests, "" for QEMU ones.
func guestType(q *request) string {
	if strings.HasPrefix(q.path, "/nodes/"+q.vars["node"]+"/lxc") {
		return "lxc"
	}
	return ""
}

// guestName is how PVE names a guest in messages: "VM 100" or "CT 100".
func guestName(v *vm) string {
	if v.Type == "lxc" {
		return fmt.Sprintf("CT %d", v.VMID)
	}
	return fmt.Sprintf("VM %d", v.VMID)
}

// vmidTaken is check_vmid_unused's answer: a plain die (500, not a 400),
// naming the guest type of the existing one.
func vmidTaken(old *vm) error {
	return fail(http.StatusInternalServerError, "%s already exists on node '%s'", guestName(old), old.Node)
}

// vmOf finds the guest of the request's kind (QEMU or LXC) on its node.
func (s *Server) vmOf(q *request) (*vm, error) {
	id, _ := strconv.Atoi(q.vars["vmid"])
	typ := guestType(q)
	v, ok := s.st.VMs[id]
	if !ok || v.Node != q.vars["node"] || v.Type != typ {
		return nil, noConfig(q.vars["node"], typ, id)
	}
	return v, nil
}

// writableVM finds the request's guest and checks that it may be written.
func (s *Server) writableVM(q *request) (*vm, error) {
	v, err := s.vmOf(q)
	if err != nil {
		return nil, err
	}
	return v, s.writable(v, q)
}

// writable checks the task lock (lock-timeout 500) and the config lock.
func (s *Server) writable(v *vm, q *request) error {
	if err := s.checkLock(v.VMID); err != nil {
		return err
	}
	if l := v.Conf["lock"]; l != "" && !q.bool("skiplock") {
		return fail(http.StatusInternalServerError, "VM is locked (%s)", l)
	}
	return nil
}

func (s *Server) checkDigest(v *vm, q *request) error {
	if d := q.get("digest"); d != "" && !strings.EqualFold(d, digest(v)) {
		return fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
	}
	return nil
}

func (s *Server) listVMs(q *request) (any, error) {
	out := []map[string]any{}
	for _, id := range s.st.vmIDs() {
		v := s.st.VMs[id]
		if v.Node != q.vars["node"] || v.Type != "" {
			continue
		}
		row := map[string]any{
			"vmid": v.VMID, "status": v.status(), "maxmem": vmMaxMem(v.Conf), "maxdisk": vmMaxDisk(v.Conf),
			"cpus": vmCPUs(v.Conf), "mem": 0, "cpu": 0, "uptime": v.uptime(),
			"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
		}
		for _, k := range []string{"name", "tags", "lock"} {
			if val := v.Conf[k]; val != "" {
				row[k] = val
			}
		}
		if v.Conf["template"] == "1" {
			row["template"] = 1
		}
		if v.Running {
			row["qmpstatus"] = "running"
			row["pid"] = 10000 + v.VMID
			row["mem"] = vmMaxMem(v.Conf) / 4
		}
		out = append(out, row)
	}
	return out, nil
}

func (s *Server) vmIndex(q *request) (any, error) {
	if _, err := s.vmOf(q); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, d := range []string{"config", "pending", "status", "unlink", "vncproxy", "termproxy", "migrate",
		"resize", "move", "rrd", "rrddata", "monitor", "agent", "snapshot", "spiceproxy", "sendkey",
		"firewall", "mtunnel", "remote_migrate"} {
		out = append(out, map[string]any{"subdir": d})
	}
	return out, nil
}

// configParams returns the request's config keys (sorted) and the delete/revert lists.
func configParams(q *request) (keys, deletes, reverts []string, err error) {
	skip := nonConfig
	if guestType(q) == "lxc" {
		skip = nonConfigCT
	}
	for k := range q.params {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	deletes = schema.SplitList(q.get("delete"))
	reverts = schema.SplitList(q.get("revert"))
	for _, d := range deletes {
		if q.has(d) {
			return nil, nil, nil, paramErr1("delete", "you can't use '-%s' and '-delete %s' at the same time", d, d)
		}
	}
	return keys, deletes, reverts, nil
}

// buildValues normalizes every config key of a request; on failure the
// volumes allocated so far are released.
func (s *Server) buildValues(v *vm, q *request, keys []string) (map[string]string, []*volume, error) {
	var created []*volume
	vals := map[string]string{}
	for _, k := range keys {
		val, err := s.normalizeValue(v, k, q.get(k), &created)
		if err != nil {
			for _, vol := range created {
				delete(s.st.Volumes, vol.volid())
			}
			return nil, nil, err
		}
		vals[k] = val
	}
	return vals, created, nil
}

func allocLog(t *task, vols []*volume) {
	for _, vol := range vols {
		if vol.Format == "qcow2" {
			t.logf("Formatting '/var/lib/vz/images/%s', fmt=%s size=%d", vol.Name, vol.Format, vol.Size)
			continue
		}
		t.logf("  Logical volume \"%s\" created.", vol.Name)
	}
}

// newGuest checks what creating any guest (VM or container) needs: a free
// vmid, no restore (not simulated), an existing pool. It returns the vmid
// and the pool ("" for none).
func (s *Server) newGuest(q *request, restore bool) (int, string, error) {
	id, err := strconv.Atoi(q.get("vmid"))
	if err != nil {
		return 0, "", paramErr1("vmid", "property is missing and it is not optional")
	}
	if old, exists := s.st.VMs[id]; exists {
		return 0, "", vmidTaken(old)
	}
	if restore {
		return 0, "", fail(http.StatusNotImplemented, "restore from archive is not supported by the simulator")
	}
	poolID := q.get("pool")
	if poolID != "" {
		if _, ok := s.st.Pools[poolID]; !ok {
			return 0, "", fail(http.StatusInternalServerError, "pool '%s' does not exist", poolID)
		}
	}
	return id, poolID, nil
}

func (s *Server) createVM(q *request) (any, error) {
	node := q.vars["node"]
	id, poolID, err := s.newGuest(q, q.has("archive"))
	if err != nil {
		return nil, err
	}
	keys, _, _, err := configParams(q)
	if err != nil {
		return nil, err
	}
	v := &vm{VMID: id, Node: node, Conf: map[string]string{}}
	vals, created, err := s.buildValues(v, q, keys)
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for k, val := range vals {
		if val != "" {
			conf[k] = val
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
	v.Conf["lock"] = "create"
	s.st.VMs[id] = v
	start := q.bool("start")
	upid := s.startTask(node, "qmcreate", vmidString(id), []int{id}, func(t *task) error {
		allocLog(t, created)
		v.Conf = conf
		if poolID != "" {
			if p, ok := s.st.Pools[poolID]; ok {
				p.VMs = append(p.VMs, id)
			}
		}
		if start {
			return s.startGuest(t, v)
		}
		return nil
	})
	return upid, nil
}

// defaultBootDevices mirrors PVE's choice when boot is not given: first
// disk, first CD-ROM (not cloud-init), first NIC.
func defaultBootDevices(conf map[string]string) []string {
	var disk, cd, net string
	for _, bus := range []string{"ide", "sata", "scsi", "virtio"} {
		for i := 0; i <= 30; i++ {
			k := bus + strconv.Itoa(i)
			val, ok := conf[k]
			if !ok {
				continue
			}
			file, rest := diskFile(val)
			media, _ := schema.PropValue(rest, "media")
			switch {
			case media == "cdrom" && !strings.Contains(file, "cloudinit") && cd == "":
				cd = k
			case media != "cdrom" && disk == "":
				disk = k
			}
		}
	}
	for i := 0; i < 32; i++ {
		if _, ok := conf["net"+strconv.Itoa(i)]; ok {
			net = "net" + strconv.Itoa(i)
			break
		}
	}
	var out []string
	for _, d := range []string{disk, cd, net} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

func (s *Server) destroyVM(q *request) (any, error) {
	v, err := s.writableVM(q)
	if err != nil {
		return nil, err
	}
	if v.Conf["protection"] == "1" {
		return nil, fail(http.StatusInternalServerError, "can't remove %s - protection mode enabled", guestName(v))
	}
	typ := "qmdestroy"
	if v.Type == "lxc" {
		typ = "vzdestroy"
		if v.Running {
			return nil, fail(http.StatusInternalServerError, "unable to destroy CT %d - container is running", v.VMID)
		}
	}
	if v.Running {
		return nil, fail(http.StatusInternalServerError, "VM %d is running - destroy failed", v.VMID)
	}
	id := v.VMID
	upid := s.startTask(v.Node, typ, vmidString(id), []int{id}, func(t *task) error {
		// destroy_vm refuses, inside the worker, a template whose base
		// volumes linked clones still use.
		if v.Conf["template"] == "1" {
			for _, vol := range s.st.volumesOf(id) {
				if s.st.volumeInUseAsBase(vol.volid()) {
					return fmt.Errorf("base volume '%s' is still in use by linked cloned", vol.volid())
				}
			}
		}
		for _, vol := range s.st.volumesOf(id) {
			delete(s.st.Volumes, vol.volid())
			t.logf("  Logical volume \"%s\" successfully removed.", vol.Name)
		}
		s.st.removeFromPools(id)
		delete(s.st.VMs, id)
		if q.bool("purge") {
			t.logf("purging VM %d from related configurations..", id)
		}
		return nil
	})
	return upid, nil
}

// effectiveConf is the config with pending changes applied.
func effectiveConf(v *vm) map[string]string {
	c := make(map[string]string, len(v.Conf)+len(v.Pending))
	for k, val := range v.Conf {
		c[k] = val
	}
	for _, k := range v.PendingDel {
		delete(c, k)
	}
	for k, val := range v.Pending {
		c[k] = val
	}
	return c
}

func (s *Server) getVMConfig(q *request) (any, error) {
	v, err := s.vmOf(q)
	if err != nil {
		return nil, err
	}
	if sn := q.get("snapshot"); sn != "" {
		return nil, fail(http.StatusInternalServerError, "snapshot '%s' does not exist", sn)
	}
	conf := effectiveConf(v)
	if q.bool("current") {
		conf = v.Conf
	}
	out := map[string]any{"digest": digest(v)}
	for k, val := range conf {
		out[k] = confValue(v.Type, k, val)
	}
	return out, nil
}

func (s *Server) getVMPending(q *request) (any, error) {
	v, err := s.vmOf(q)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range v.Conf {
		keys[k] = true
	}
	for k := range v.Pending {
		keys[k] = true
	}
	for _, k := range v.PendingDel {
		keys[k] = true
	}
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		row := map[string]any{"key": k}
		if val, ok := v.Conf[k]; ok {
			row["value"] = val
		}
		if val, ok := v.Pending[k]; ok {
			row["pending"] = val
		}
		for _, d := range v.PendingDel {
			if d == k {
				row["delete"] = 1
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// configChange is a validated config update.
type configChange struct {
	v     *vm
	stage func() // write it to the pending section
	apply func() // apply or hotplug it (a PUT at once, a POST in its worker)
}

// updateConfig validates a config change.
func (s *Server) updateConfig(q *request) (*configChange, error) {
	v, err := s.writableVM(q)
	if err != nil {
		return nil, err
	}
	if err := s.checkDigest(v, q); err != nil {
		return nil, err
	}
	keys, deletes, reverts, err := configParams(q)
	if err != nil {
		return nil, err
	}
	for _, k := range append(append([]string{}, keys...), deletes...) {
		if k == "digest" || k == "template" && v.Conf["template"] == "1" {
			return nil, paramErr1(k, "unable to change '%s' with this call", k)
		}
	}
	vals, _, err := s.buildValues(v, q, keys)
	if err != nil {
		return nil, err
	}
	// stage is what PVE does before it forks the qmconfig worker: the change
	// lands in the pending section at once (GET config shows it, the digest
	// moves); the worker then applies or hotplugs it.
	stage := func() {
		for _, k := range keys {
			if v.Pending == nil {
				v.Pending = map[string]string{}
			}
			v.Pending[k] = vals[k]
			v.PendingDel = removeString(v.PendingDel, k)
		}
		for _, k := range deletes {
			delete(v.Pending, k)
			if _, ok := v.Conf[k]; ok && !containsString(v.PendingDel, k) {
				v.PendingDel = append(v.PendingDel, k)
			}
		}
		if len(v.Pending) == 0 {
			v.Pending = nil
		}
	}
	apply := func() {
		for _, k := range reverts {
			delete(v.Pending, k)
			v.PendingDel = removeString(v.PendingDel, k)
		}
		for _, k := range deletes {
			delete(v.Pending, k)
			if !v.Running || hotpluggable(v, k) {
				s.removeKey(v, k)
				v.PendingDel = removeString(v.PendingDel, k)
			} else if _, ok := v.Conf[k]; ok && !containsString(v.PendingDel, k) {
				v.PendingDel = append(v.PendingDel, k)
			}
		}
		for _, k := range keys {
			v.PendingDel = removeString(v.PendingDel, k)
			if !v.Running || hotpluggable(v, k) {
				delete(v.Pending, k)
				s.setKey(v, k, vals[k])
				continue
			}
			if v.Pending == nil {
				v.Pending = map[string]string{}
			}
			v.Pending[k] = vals[k]
		}
		if len(v.Pending) == 0 {
			v.Pending = nil
		}
		if len(v.PendingDel) == 0 {
			v.PendingDel = nil
		}
	}
	return &configChange{v: v, stage: stage, apply: apply}, nil
}

func (s *Server) postVMConfig(q *request) (any, error) {
	c, err := s.updateConfig(q)
	if err != nil {
		return nil, err
	}
	c.stage()
	return s.startTask(c.v.Node, "qmconfig", vmidString(c.v.VMID), []int{c.v.VMID}, func(t *task) error {
		c.apply()
		return nil
	}), nil
}

func (s *Server) putVMConfig(q *request) (any, error) {
	c, err := s.updateConfig(q)
	if err != nil {
		return nil, err
	}
	c.apply()
	return nil, nil
}

func (s *Server) vmStatus(q *request) (any, error) {
	v, err := s.vmOf(q)
	if err != nil {
		return nil, err
	}
	m := map[string]any{
		"vmid": v.VMID, "status": v.status(), "uptime": v.uptime(), "cpus": vmCPUs(v.Conf),
		"maxmem": vmMaxMem(v.Conf), "maxdisk": vmMaxDisk(v.Conf), "mem": 0, "cpu": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0, "ha": map[string]any{"managed": 0},
		"qmpstatus": v.status(),
	}
	for _, k := range []string{"name", "tags", "lock"} {
		if val := v.Conf[k]; val != "" {
			m[k] = val
		}
	}
	if agentEnabled(v.Conf) {
		m["agent"] = 1
	}
	if v.Conf["template"] == "1" {
		m["template"] = 1
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
	return m, nil
}

func agentEnabled(conf map[string]string) bool {
	items := props(conf["agent"])
	if len(items) > 0 && items[0].Key == "" {
		return items[0].Value == "1"
	}
	e, _ := schema.PropValue(items, "enabled")
	return e == "1"
}

func removeString(xs []string, x string) []string {
	out := xs[:0]
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func containsString(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

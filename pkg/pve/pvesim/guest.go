package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// guestKind is what differs between QEMU VMs and LXC containers. The guest
// handlers (guest*.go) are written once against it; each
// type's facts sit in one value, built in qemu.go and lxc.go.
type guestKind struct {
	typ     string // vm.Type: "" for QEMU, "lxc"
	api     string // path segment and /cluster/resources type: "qemu" | "lxc"
	noun    string // how PVE's messages name one: "VM" | "CT"
	confDir string // nodes/{node}/{confDir}/{vmid}.conf: "qemu-server" | "lxc"
	tasks   string // worker type prefix: "qm" (qmcreate, qmstart…) | "vz"
	nameKey string // the config key that names the guest: "name" | "hostname"

	// config is the config update method; the schema types of its
	// parameters decide how GET …/config answers each value.
	config *schema.Method
	// nonConfig lists create/update/clone parameters that are not config keys.
	nonConfig map[string]bool
	subdirs   []string // GET …/{vmid}

	lockErr func(vmid int) *apiError
	// normalize checks a config value and writes it back as PVE stores
	// it; with created nil it makes no volume (see normalizeDisk).
	normalize    func(s *Server, v *vm, key, val string, created *[]*volume) (string, error)
	normalizeNet func(s *Server, key, val string, newMAC bool) (string, error)
	mac          func(netVal string) string // the MAC of a netN value, upper case
	// update runs a config change under the config lock (pending.go):
	// in the worker of a POST, at once for a PUT (t nil).
	update func(s *Server, v *vm, e *configEdit, t *task) error
	// description is how a description reads back from the config file.
	description func(string) string
	// statusName is the name status answers give a guest without one.
	statusName func(vmid int) string
	// digestMismatch is the error of a config write with a stale digest.
	digestMismatch string
	cpus           func(conf map[string]string) int
	row            func(s *Server, v *vm) map[string]any // GET …/{api} list row
	status         func(s *Server, v *vm) map[string]any // GET …/status/current
	// bridgeMissing fails a start whose NIC names a bridge the node lacks.
	bridgeMissing func(t *task, v *vm, netKey string) error

	// stateBeforeFork: the start/stop/shutdown state checks run before the
	// worker forks (pve-container) instead of inside it (qemu-server).
	stateBeforeFork bool
	templateNoun    string // "you can't start a %s if it's a template"
	destroyRunning  string // the error destroying a running guest (format, vmid)
	// templateNull: POST …/template answers null although a worker runs.
	templateNull bool
	// syncLocks: clone and template take the guest locks in the API
	// process (pve-container API2/LXC.pm clone_vm, template), not in the
	// worker (qemu-server).
	syncLocks bool
	// resizeChecksBeforeFork: resize checks the disk, size and digest in
	// the API process too (pve-container), not only in the worker.
	resizeChecksBeforeFork bool
	// resizeShrink refuses a smaller size; resizeSame, when set, refuses
	// the same size (pve-container), else it is a no-op (qemu-server).
	resizeShrink, resizeSame string
	// createLockWait is the create worker's lock timeout in PVE seconds;
	// createKeepsStub: a create worker that cannot get it leaves the
	// config stub (pve-container) instead of removing it (qemu-server).
	createLockWait  int
	createKeepsStub bool
	// shutdownTimeout is the shutdown's default timeout (seconds);
	// stopsInTime says whether a guest that needs d to stop is seen down
	// within timeout; shutdownTimedOut is the error when it is not,
	// shutdownKill the log line when forceStop kills it instead.
	shutdownTimeout  int
	stopsInTime      func(d time.Duration, timeout int) bool
	shutdownTimedOut string
	shutdownKill     string
	// rebootInTask: the reboot task starts the guest again itself
	// (pve-container) instead of leaving that to a qmstart task.
	rebootInTask bool
}

// guestHandler is a handler written once for both guest types.
type guestHandler func(k *guestKind, q *request) (any, error)

// route binds a guest handler to key for this kind.
func (k *guestKind) route(key string, h guestHandler) route {
	return route{key: key, h: func(q *request) (any, error) { return h(k, q) }}
}

// name is how PVE names a guest in messages: "VM 100" or "CT 100".
func (k *guestKind) name(vmid int) string { return fmt.Sprintf("%s %d", k.noun, vmid) }

func (k *guestKind) noConfig(node string, vmid int) error {
	return fail(http.StatusInternalServerError, "Configuration file 'nodes/%s/%s/%d.conf' does not exist", node, k.confDir, vmid)
}

// confValue types a config value as GET …/config answers it. PVE parses
// config files with check_type (qemu-server QemuServer.pm parse_vm_config,
// pve-container LXC/Config.pm check_type): booleans and integers become
// Perl numbers and are written as JSON numbers, strings stay strings.
// check_type keeps a number-typed value (cpulimit) as the string read from
// the file, so real PVE answers "1.5"; the simulator answers the JSON
// number the official schema declares (docs/simulator.md).
func (k *guestKind) confValue(key, val string) any {
	p, ok := k.config.Param(key)
	if !ok {
		return val
	}
	return typedValue(p.Type, val)
}

// typedValue is val as check_type returns a value of a parameter of type
// typ: a boolean or integer becomes an integer, a number a float; a value
// that does not parse, or of another type, stays the string.
func typedValue(typ, val string) any {
	switch typ {
	case "boolean", "integer":
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			return n
		}
	case "number":
		if f, err := strconv.ParseFloat(val, 64); err == nil {
			return f
		}
	}
	return val
}

// pendingValue types a value of GET …/pending: the rows come from the
// parsed config (pve-guest-common GuestHelpers.pm
// config_with_pending_array over parse_vm_config / parse_pct_config), so
// an integer or boolean option is a JSON number there too, while a
// number-typed one stays the text of the file (check_type keeps it).
func (k *guestKind) pendingValue(key, val string) any {
	if p, ok := k.config.Param(key); ok && p.Type == "number" {
		return val
	}
	return k.confValue(key, val)
}

// kindOf is the kind of a stored guest.
func (s *Server) kindOf(v *vm) *guestKind {
	if v.Type == s.lxc.typ {
		return s.lxc
	}
	return s.qemu
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

// vmidTaken is check_vmid_unused's answer: a plain die (500, not a 400),
// naming the guest type of the existing one.
func (s *Server) vmidTaken(old *vm) error {
	return fail(http.StatusInternalServerError, "%s already exists on node '%s'", s.kindOf(old).name(old.VMID), old.Node)
}

// guestOf finds the request's guest of kind k on its node.
func (s *Server) guestOf(k *guestKind, q *request) (*vm, error) {
	return s.guestAt(k, q.vars["node"], vmidOf(q))
}

// guestAt finds guest vmid of kind k on node: a worker looks its guest up
// again, since it may be gone by the time the worker runs.
func (s *Server) guestAt(k *guestKind, node string, vmid int) (*vm, error) {
	v, ok := s.st.VMs[vmid]
	if !ok || v.Node != node || v.Type != k.typ {
		return nil, k.noConfig(node, vmid)
	}
	return v, nil
}

func vmidOf(q *request) int {
	id, _ := strconv.Atoi(q.vars["vmid"])
	return id
}

// noConfigOnNode is qemu-server's check_running on a guest that is not
// there (QemuConfig.pm assert_config_exists_on_node): reboot and clone
// ask it before anything else.
func noConfigOnNode(node string, vmid int) error {
	return fail(http.StatusInternalServerError, "unable to find configuration file for VM %d on node '%s'", vmid, node)
}

// writableGuest finds the request's guest and checks its config lock.
func (s *Server) writableGuest(k *guestKind, q *request) (*vm, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	return v, s.writable(v, q)
}

// lockedGuest is writableGuest for a call that takes the guest's lock in
// the API process (PUT config: lock_config): it waits for the lock like
// PVE and looks the guest up again after the wait.
func (s *Server) lockedGuest(k *guestKind, q *request) (*vm, error) {
	if _, err := s.guestOf(k, q); err != nil {
		return nil, err
	}
	if err := s.lockNow(q, s.guestLock(k, vmidOf(q))); err != nil {
		return nil, err
	}
	return s.writableGuest(k, q)
}

// writable checks the config lock (check_lock) unless the request skips
// it, which only root may. The flock is taken where PVE takes it
// (locks.go).
func (s *Server) writable(v *vm, q *request) error {
	if err := skiplockRefused(q); err != nil {
		return err
	}
	return s.configLock(v, q.bool("skiplock"))
}

// skiplockRefused: skiplock is root@pam's alone, refused before anything
// else happens (the API handlers' raise_param_exc, before they fork).
func skiplockRefused(q *request) error {
	if q.bool("skiplock") && q.user != superuser {
		return paramErr1("skiplock", "Only root may use this option.")
	}
	return nil
}

// configLock is check_lock: a guest whose config names a lock refuses;
// pve-guest-common AbstractConfig.pm check_lock names the guest type.
func (s *Server) configLock(v *vm, skiplock bool) error {
	if l := v.Conf["lock"]; l != "" && !skiplock {
		return fail(http.StatusInternalServerError, "%s is locked (%s)", s.kindOf(v).noun, l)
	}
	return nil
}

// checkDigest compares the caller's digest as PVE does, exactly; the
// message is the guest type's (qemu-server dies "checksum mismatch",
// pve-container uses pve-common's assert_if_modified).
func (s *Server) checkDigest(v *vm, q *request) error {
	if d := q.get("digest"); d != "" && d != digest(v) {
		return fail(http.StatusInternalServerError, "%s", s.kindOf(v).digestMismatch)
	}
	return nil
}

// statusName is a guest's name in status answers: PVE's vmstatus falls
// back to "VM 100" (qemu-server QemuServer.pm) or "CT100" (pve-container
// LXC.pm) for a guest without one; the config itself has none.
func (s *Server) statusName(v *vm) string {
	k := s.kindOf(v)
	if n := v.Conf[k.nameKey]; n != "" {
		return n
	}
	return k.statusName(v.VMID)
}

// addConfStatus adds to a guest's list row or status answer what both
// types take from its config: the name, tags and lock when set, and
// whether it is a template.
func (s *Server) addConfStatus(m map[string]any, v *vm) {
	m["name"] = s.statusName(v)
	for _, k := range []string{"tags", "lock"} {
		if val := v.Conf[k]; val != "" {
			m[k] = val
		}
	}
	if v.Conf["template"] == "1" {
		m["template"] = 1
	}
}

// guestRoutes are the routes QEMU VMs and containers share, below
// /nodes/{node}/<api> (qemu or lxc).
func (s *Server) guestRoutes(k *guestKind, api string) []route {
	p := "/nodes/{node}/" + api
	return []route{
		k.route("GET "+p, s.listGuests),
		k.route("GET "+p+"/{vmid}", s.guestIndex),
		k.route("DELETE "+p+"/{vmid}", s.destroyGuest),
		k.route("GET "+p+"/{vmid}/config", s.getConfig),
		k.route("PUT "+p+"/{vmid}/config", s.putConfig),
		k.route("GET "+p+"/{vmid}/pending", s.getPending),
		k.route("GET "+p+"/{vmid}/status/current", s.guestStatus),
		k.route("POST "+p+"/{vmid}/status/start", s.power("start")),
		k.route("POST "+p+"/{vmid}/status/stop", s.power("stop")),
		k.route("POST "+p+"/{vmid}/status/shutdown", s.power("shutdown")),
		k.route("POST "+p+"/{vmid}/status/reboot", s.power("reboot")),
		k.route("POST "+p+"/{vmid}/clone", s.cloneGuest),
		k.route("POST "+p+"/{vmid}/template", s.templateGuest),
		k.route("PUT "+p+"/{vmid}/resize", s.resizeGuest),
		k.route("GET "+p+"/{vmid}/migrate", s.migratePrecondition),
		k.route("POST "+p+"/{vmid}/migrate", s.migrateGuest),
	}
}

func (s *Server) listGuests(k *guestKind, q *request) (any, error) {
	out := []map[string]any{}
	for _, id := range s.st.vmIDs() {
		// Only guests the caller may audit (Qemu.pm vmlist, LXC.pm vmlist).
		if v := s.st.VMs[id]; v.Node == q.vars["node"] && v.Type == k.typ && s.can(q.user, "/vms/"+vmidString(id), "VM.Audit") {
			out = append(out, k.row(s, v))
		}
	}
	return out, nil
}

func (s *Server) guestIndex(k *guestKind, q *request) (any, error) {
	if _, err := s.guestOf(k, q); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, d := range k.subdirs {
		out = append(out, map[string]any{"subdir": d})
	}
	return out, nil
}

func (s *Server) guestStatus(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	return k.status(s, v), nil
}

// configParams returns the request's config keys (sorted) and the delete/revert lists.
func configParams(k *guestKind, q *request) (keys, deletes, reverts []string, err error) {
	for key := range q.params {
		if !k.nonConfig[key] {
			keys = append(keys, key)
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
// volumes allocated so far are released. Without alloc no volume is made:
// a config update makes them under the lock.
func (s *Server) buildValues(v *vm, q *request, keys []string, alloc bool) (map[string]string, []*volume, error) {
	k := s.kindOf(v)
	var created []*volume
	into := &created
	if !alloc {
		into = nil
	}
	vals := map[string]string{}
	for _, key := range keys {
		val, err := k.normalize(s, v, key, q.get(key), into)
		if err != nil {
			for _, vol := range created {
				delete(s.st.Volumes, vol.volid())
			}
			return nil, nil, err
		}
		vals[key] = val
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
		return 0, "", s.vmidTaken(old)
	}
	if restore {
		return 0, "", fail(http.StatusNotImplemented, "restore from archive is not supported by the simulator")
	}
	poolID := q.get("pool")
	if poolID != "" {
		if err := s.checkPoolExist(poolID); err != nil {
			return 0, "", err
		}
	}
	return id, poolID, nil
}

// effectiveConf is the config with pending changes applied
// (pve-guest-common AbstractConfig.pm load_current_config).
func effectiveConf(v *vm) map[string]string {
	c := make(map[string]string, len(v.Conf)+len(v.Pending))
	for k, val := range v.Conf {
		c[k] = val
	}
	for _, k := range v.pendingDeleteKeys() {
		delete(c, k)
	}
	for k, val := range v.Pending {
		c[k] = val
	}
	return c
}

func (s *Server) getConfig(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	if sn := q.get("snapshot"); sn != "" {
		if q.bool("current") {
			msg := "cannot use 'snapshot' parameter with 'current'"
			return nil, paramErr(map[string]string{"snapshot": msg, "current": msg})
		}
		return s.snapshotConfigAt(k, v, sn)
	}
	conf := effectiveConf(v)
	if q.bool("current") {
		conf = v.Conf
	}
	out := map[string]any{"digest": digest(v)}
	for key, val := range conf {
		out[key] = k.confValue(key, val)
	}
	// qemu-server API2/Qemu.pm vm_config never shows the password.
	if out["cipassword"] != nil && out["cipassword"] != "" {
		out["cipassword"] = maskedSecret
	}
	return out, nil
}

// maskedSecret is how PVE answers a stored cipassword.
const maskedSecret = "**********"

// getPending is config_with_pending_array (pve-guest-common
// GuestHelpers.pm): a row per key of the config (digest included) with its
// pending value or delete mark (2: forced), then the pending-only keys.
func (s *Server) getPending(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	conf := maps.Clone(v.Conf)
	conf["digest"] = digest(v)
	pending := maps.Clone(v.Pending)
	if k == s.qemu {
		// qemu-server vm_pending masks the password, the pending one with
		// a trailing blank.
		if _, ok := conf["cipassword"]; ok {
			conf["cipassword"] = maskedSecret
		}
		if _, ok := pending["cipassword"]; ok {
			pending["cipassword"] = maskedSecret + " "
		}
	}
	keys := map[string]bool{}
	for key := range conf {
		keys[key] = true
	}
	for key := range pending {
		keys[key] = true
	}
	for _, key := range v.pendingDeleteKeys() {
		keys[key] = true
	}
	out := []map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		row := map[string]any{"key": key}
		if val, ok := conf[key]; ok {
			row["value"] = k.pendingValue(key, val)
		}
		if val, ok := pending[key]; ok {
			row["pending"] = k.pendingValue(key, val)
		}
		if del, force := v.pendingDelete(key); del {
			row["delete"] = 1
			if force {
				row["delete"] = 2
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// updateConfig checks a config change as PVE does before it takes the
// config lock (and, for POST, forks): the guest, its lock, the digest, the
// parameters and their values. Nothing is written yet.
func (s *Server) updateConfig(k *guestKind, q *request) (*vm, *configEdit, error) {
	if k == s.qemu {
		if err := checkSSHKeys(q); err != nil {
			return nil, nil, err
		}
	}
	v, err := s.writableGuest(k, q)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkDigest(v, q); err != nil {
		return nil, nil, err
	}
	keys, deletes, reverts, err := configParams(k, q)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkUpdatePerms(k, q, v, keys, deletes, reverts); err != nil {
		return nil, nil, err
	}
	for _, key := range append(append([]string{}, keys...), deletes...) {
		if key == "digest" || key == "template" && v.Conf["template"] == "1" {
			return nil, nil, paramErr1(key, "unable to change '%s' with this call", key)
		}
	}
	vals, _, err := s.buildValues(v, q, keys, false)
	if err != nil {
		return nil, nil, err
	}
	return v, editOf(k, v, q, keys, deletes, reverts, vals), nil
}

// postConfig is the asynchronous update: the qmconfig worker writes the
// change (GET config shows the old values and digest until it runs).
func (s *Server) postConfig(k *guestKind, q *request) (any, error) {
	v, e, err := s.updateConfig(k, q)
	if err != nil {
		return nil, err
	}
	// The worker takes the lock (lock_config) before it writes anything: a
	// worker that cannot get it changes nothing, and one that waited finds
	// the guest as it is then (a destroy may have won the lock).
	return s.startTask(v.Node, k.tasks+"config", vmidString(v.VMID), []int{v.VMID}, func(t *task) error {
		if s.st.VMs[v.VMID] != v {
			return k.noConfig(v.Node, v.VMID)
		}
		return workerErr(k.update(s, v, e, t))
	}), nil
}

// putConfig is the synchronous update: it takes the guest's lock in the
// API process (qemu-server update_vm_api with $sync, pve-container
// API2/LXC/Config.pm update_vm: lock_config), waiting like PVE.
func (s *Server) putConfig(k *guestKind, q *request) (any, error) {
	if _, err := s.lockedGuest(k, q); err != nil {
		return nil, err
	}
	v, e, err := s.updateConfig(k, q)
	if err != nil {
		return nil, err
	}
	return nil, k.update(s, v, e, nil)
}

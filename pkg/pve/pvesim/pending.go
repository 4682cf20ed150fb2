package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// How a config update reaches a guest. Both types write the change into the
// [PENDING] section first, drop what equals the current value, and then
// either hot-plug what a running guest can take or apply everything to a
// stopped one (qemu-server API2/Qemu.pm update_vm_api; pve-container
// LXC/Config.pm update_pct_config; pve-guest-common AbstractConfig.pm
// cleanup_pending). hotplug.go holds which keys a running guest takes.

// configEdit is a config update as PVE has it when it takes the config
// lock: values normalized as far as PVE does before it forks (volumes are
// not allocated yet), the keys to delete and to revert.
type configEdit struct {
	keys    []string // sorted
	vals    map[string]string
	deletes []string
	reverts []string
	force   bool   // delete drives for good instead of leaving unusedN
	digest  string // the digest the caller read, "" for none
	// skiplock skips the config lock check (root only in PVE).
	skiplock bool
	// log is qemu-server's "update VM 100: -name x" line, cipassword hidden.
	log string
}

// qemuDriveRe is qemu-server's is_valid_drivename.
var qemuDriveRe = lazyre.New(`^((ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0)$`)

// pendingDelete reports whether key is in the pending delete list, and
// whether its removal is forced.
func (v *vm) pendingDelete(key string) (deleted, force bool) {
	for _, d := range v.PendingDel {
		if k, forced := strings.CutPrefix(d, "!"); k == key {
			return true, forced
		}
	}
	return false, false
}

func (v *vm) addPendingDelete(key string, force bool) {
	v.removePendingDelete(key)
	if force {
		key = "!" + key
	}
	v.PendingDel = append(v.PendingDel, key)
}

func (v *vm) removePendingDelete(key string) {
	out := v.PendingDel[:0]
	for _, d := range v.PendingDel {
		if strings.TrimPrefix(d, "!") != key {
			out = append(out, d)
		}
	}
	v.PendingDel = out
	if len(v.PendingDel) == 0 {
		v.PendingDel = nil
	}
}

// pendingDeleteKeys lists the keys of the pending delete list, sorted.
func (v *vm) pendingDeleteKeys() []string {
	keys := make([]string, 0, len(v.PendingDel))
	for _, d := range v.PendingDel {
		keys = append(keys, strings.TrimPrefix(d, "!"))
	}
	sort.Strings(keys)
	return keys
}

func (v *vm) setPending(key, val string) {
	ensureMap(&v.Pending)
	v.Pending[key] = val
}

func (v *vm) dropPending(key string) {
	delete(v.Pending, key)
	if len(v.Pending) == 0 {
		v.Pending = nil
	}
}

// hasPending reports whether the [PENDING] section holds anything.
func (v *vm) hasPending() bool { return len(v.Pending) > 0 || len(v.PendingDel) > 0 }

// cleanupPending drops pending values equal to the current ones and
// pending deletes of keys the config does not have (AbstractConfig.pm
// cleanup_pending).
func cleanupPending(v *vm) {
	for key, val := range v.Pending {
		if cur, ok := v.Conf[key]; ok && cur == val {
			v.dropPending(key)
		}
	}
	for _, key := range v.pendingDeleteKeys() {
		if _, ok := v.Conf[key]; !ok {
			v.removePendingDelete(key)
		}
	}
}

// editOf builds the configEdit of a validated request.
func editOf(k *guestKind, v *vm, q *request, keys, deletes, reverts []string, vals map[string]string) *configEdit {
	e := &configEdit{keys: keys, vals: vals, deletes: deletes, reverts: reverts,
		force: q.bool("force"), digest: q.get("digest"), skiplock: q.bool("skiplock")}
	// update_vm_api logs every parameter but node, vmid, digest and
	// background_delay, sorted, cipassword as <hidden>.
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(q.params)) {
		switch key {
		case "node", "vmid", "digest", "background_delay", "skip_cloud_init", "import-working-storage":
			continue
		}
		val := q.get(key)
		if key == "cipassword" {
			val = "<hidden>"
		}
		parts = append(parts, "-"+key, val)
	}
	e.log = fmt.Sprintf("update %s: %s", k.name(v.VMID), strings.Join(parts, " "))
	return e
}

// taskLog and taskWarn write to a worker's log; a synchronous call (PUT)
// has none, and PVE's warn() then goes to the daemon's syslog only.
func taskLog(t *task, format string, args ...any) {
	if t != nil {
		t.logf(format, args...)
	}
}

func taskWarn(t *task, format string, args ...any) {
	if t != nil {
		t.warn(format, args...)
	}
}

// workerErr is how a worker dies with an API exception: the task status
// is its text with the lines joined (pve-common RESTEnvironment.pm
// fork_worker, Exception.pm stringify).
func workerErr(err error) error {
	ae, ok := err.(*apiError)
	if !ok || len(ae.errors) == 0 {
		return err
	}
	msg := fmt.Sprintf("%d %s", ae.status, ae.msg)
	for _, k := range slices.Sorted(maps.Keys(ae.errors)) {
		msg += " " + k + ": " + ae.errors[k]
	}
	return fmt.Errorf("%s", msg)
}

// bootOrder is the order list of a VM's current boot option.
func bootOrder(conf map[string]string) []string {
	order, ok := schema.PropValue(props(conf["boot"]), "order")
	if !ok || order == "" {
		return nil
	}
	return schema.SplitList(order)
}

// printBootOrder is qemu-server's print_bootorder.
func printBootOrder(devs []string) string {
	if len(devs) == 0 {
		return ""
	}
	return "order=" + strings.Join(devs, ";")
}

func isCloudinitDrive(val string) bool {
	file, _ := diskFile(val)
	return cloudinitFileRe.MatchString(file)
}

func (s *Server) checkProtection(v *vm, msg string) error {
	if v.Conf["protection"] == "1" {
		return fail(http.StatusInternalServerError, "%s - protection mode enabled", msg)
	}
	return nil
}

// registerUnused is vmconfig_register_unused_drive: a cloud-init volume is
// freed (with the special section), an image the VM owns becomes unusedN,
// a CD-ROM is dropped. A volume still in use stays (detachVolume).
func (s *Server) registerUnused(v *vm, val string) {
	file, _ := diskFile(val)
	if isCloudinitDrive(val) {
		v.CloudInit = nil
	}
	s.detachVolume(v, file)
}

// updateQemu is update_vm_api's updatefn, run under the config lock: in
// the qmconfig worker for POST, at once for PUT (t is nil then).
func (s *Server) updateQemu(v *vm, e *configEdit, t *task) error {
	if e.digest != "" && e.digest != digest(v) {
		return fail(http.StatusInternalServerError, "checksum mismatch (file change by other user?)")
	}
	if l := v.Conf["lock"]; l != "" && !e.skiplock {
		return fail(http.StatusInternalServerError, "VM is locked (%s)", l)
	}
	taskLog(t, "%s", e.log)
	u := newQemuUpdate(v, e, t)
	for _, key := range u.deletes {
		if err := s.deleteQemuKey(u, key); err != nil {
			return err
		}
	}
	for _, key := range u.keys {
		if err := s.writeQemuKey(u, key); err != nil {
			return err
		}
	}
	cleanupPending(v)
	if !v.hasPending() {
		return nil
	}
	if v.Running {
		return s.hotplugQemu(v, u.modified)
	}
	s.applyPendingQemu(v)
	return nil
}

// qemuUpdate is one updateQemu in progress: the edit with its reverts
// folded in (a reverted key is written back with its current value, or
// deleted when only pending), the boot order as it changes, and the keys
// modified so far.
type qemuUpdate struct {
	v        *vm
	e        *configEdit
	t        *task
	vals     map[string]string
	keys     []string // sorted
	deletes  []string
	reverted map[string]bool
	modified map[string]bool
	order    []string
}

func newQemuUpdate(v *vm, e *configEdit, t *task) *qemuUpdate {
	u := &qemuUpdate{v: v, e: e, t: t,
		vals: maps.Clone(e.vals), keys: slices.Clone(e.keys), deletes: slices.Clone(e.deletes),
		reverted: map[string]bool{}, modified: map[string]bool{}, order: bootOrder(v.Conf)}
	for _, key := range e.reverts {
		if cur, ok := v.Conf[key]; ok {
			u.vals[key], u.reverted[key] = cur, true
			u.keys = append(u.keys, key)
		} else if _, ok := v.Pending[key]; ok {
			u.deletes = append(u.deletes, key)
		}
	}
	sort.Strings(u.keys)
	return u
}

// setBootOrder makes order the VM's pending boot order.
func (u *qemuUpdate) setBootOrder(order []string) {
	u.order = order
	u.v.setPending("boot", printBootOrder(order))
	u.modified["boot"] = true
}

// deleteQemuKey is one key of update_vm_api's delete loop.
func (s *Server) deleteQemuKey(u *qemuUpdate, key string) error {
	v := u.v
	u.modified[key] = true
	val, ok := v.Conf[key]
	pend, isPending := v.Pending[key]
	if !ok {
		val, ok = pend, isPending
	}
	if !ok {
		taskWarn(u.t, "cannot delete '%s' - not set in current configuration!", key)
		u.modified[key] = false
		return nil
	}
	v.dropPending(key)
	if slices.Contains(u.order, key) {
		u.setBootOrder(slices.DeleteFunc(u.order, func(d string) bool { return d == key }))
	}
	switch {
	case isUnusedKey(key):
		file, _ := diskFile(val)
		if err := s.checkProtection(v, fmt.Sprintf("can't remove unused disk '%s'", file)); err != nil {
			return err
		}
		if err := s.unusedInSnapshot(v, file); err != nil {
			return err
		}
		s.removeKey(v, key)
	case qemuDriveRe.MatchString(key):
		if err := s.checkProtection(v, fmt.Sprintf("can't remove drive '%s'", key)); err != nil {
			return err
		}
		if isPending {
			s.registerUnused(v, pend)
		}
		v.addPendingDelete(key, u.e.force)
	case key == "tags":
		delete(v.Conf, key)
	default:
		v.addPendingDelete(key, u.e.force)
	}
	return nil
}

// writeQemuKey is one key of update_vm_api's write loop: the value goes
// to [PENDING], a drive normalized and allocated first, cipassword hashed
// straight into the config.
func (s *Server) writeQemuKey(u *qemuUpdate, key string) error {
	v := u.v
	u.modified[key] = true
	val := u.vals[key]
	if p, ok := v.Pending[key]; ok && p == val {
		return nil
	}
	switch {
	case qemuDriveRe.MatchString(key):
		if err := s.writeQemuDrive(u, key, val); err != nil {
			return err
		}
	case key == "cipassword":
		v.Conf[key] = s.hashPassword(v, val)
	case key == "boot":
		nval, err := u.checkBoot(val)
		if err != nil {
			return err
		}
		v.setPending(key, nval)
	default:
		v.setPending(key, val)
	}
	v.removePendingDelete(key)
	return nil
}

// writeQemuDrive writes a drive to [PENDING]: a new value is normalized
// (allocating what it asks for), the pending value it replaces is
// registered unused, and a CD-ROM joins an explicit boot order.
func (s *Server) writeQemuDrive(u *qemuUpdate, key, val string) error {
	v := u.v
	oldPending, hadPending := v.Pending[key]
	if !u.reverted[key] {
		var created []*volume
		nval, err := s.normalizeDisk(v, key, val, &created)
		if err != nil {
			return err
		}
		for _, vol := range created {
			taskLog(u.t, "%s: successfully created disk '%s'", key, vol.volid())
		}
		val = nval
	}
	v.setPending(key, val)
	if hadPending {
		s.registerUnused(v, oldPending)
	}
	if len(u.order) > 0 && isCDROM(val, true) && !slices.Contains(u.order, key) {
		u.setBootOrder(append(u.order, key))
	}
	return nil
}

// checkBoot checks a new boot option's order: every device must exist in
// the config, [PENDING] or this update and not be deleted by it. An order
// replaces the legacy bootdisk.
func (u *qemuUpdate) checkBoot(val string) (string, error) {
	devs, ok := schema.PropValue(props(val), "order")
	if !ok || devs == "" {
		return val, nil
	}
	list := schema.SplitList(devs)
	for _, dev := range list {
		_, inConf := u.v.Conf[dev]
		_, inPending := u.v.Pending[dev]
		_, inParams := u.vals[dev]
		if !inConf && !inPending && !inParams || slices.Contains(u.deletes, dev) {
			return "", fmt.Errorf("invalid bootorder: device '%s' does not exist'", dev)
		}
	}
	if _, ok := u.v.Conf["bootdisk"]; ok {
		u.v.addPendingDelete("bootdisk", false)
	}
	return printBootOrder(list), nil
}

// applyPendingQemu is vmconfig_apply_pending: a stopped VM takes every
// pending change; replaced and deleted images become unusedN (or are
// freed when the delete was forced). A new cloud-init drive is generated,
// which drops the special section.
func (s *Server) applyPendingQemu(v *vm) {
	for _, key := range v.pendingDeleteKeys() {
		_, force := v.pendingDelete(key)
		val, ok := v.Conf[key]
		delete(v.Conf, key)
		v.removePendingDelete(key)
		if ok && qemuDriveRe.MatchString(key) {
			s.deleteOrDetach(v, val, force)
		}
	}
	cleanupPending(v)
	for _, key := range slices.Sorted(maps.Keys(v.Pending)) {
		val := v.Pending[key]
		v.dropPending(key)
		s.setKey(v, key, val)
		if qemuDriveRe.MatchString(key) && isCloudinitDrive(val) {
			v.CloudInit = nil
		}
	}
}

// deleteOrDetach is vmconfig_delete_or_detach_drive: forced, the VM's own
// image is freed; else it is registered as unused.
func (s *Server) deleteOrDetach(v *vm, val string, force bool) {
	if !force {
		s.registerUnused(v, val)
		return
	}
	if isCDROM(val, true) {
		return
	}
	file, _ := diskFile(val)
	if vol, ok := s.st.Volumes[file]; ok && vol.VMID == v.VMID {
		delete(s.st.Volumes, file)
	}
}

// updateCT is pve-container's update_vm (PUT config) under the config
// lock: every check first, since PVE writes nothing when one fails.
func (s *Server) updateCT(v *vm, e *configEdit, _ *task) error {
	if l := v.Conf["lock"]; l != "" {
		return fail(http.StatusInternalServerError, "CT is locked (%s)", l)
	}
	if e.digest != "" && e.digest != digest(v) {
		return fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
	}
	for _, key := range e.deletes {
		_, inConf := v.Conf[key]
		_, inPending := v.Pending[key]
		if !inConf && !inPending {
			continue // warned and skipped
		}
		switch {
		case key == "memory" || key == "rootfs" || key == "ostype":
			return fail(http.StatusInternalServerError, "unable to delete required option '%s'", key)
		case isUnusedKey(key) || strings.HasPrefix(key, "mp"):
			if err := s.checkProtection(v, fmt.Sprintf("can't remove CT %d drive '%s'", v.VMID, key)); err != nil {
				return err
			}
		case key == "unprivileged":
			return fail(http.StatusInternalServerError, "unable to delete read-only option: '%s'", key)
		}
	}
	for _, key := range e.keys {
		switch {
		case key == "rootfs" || strings.HasPrefix(key, "mp"):
			if err := s.checkProtection(v, fmt.Sprintf("can't update CT %d drive '%s'", v.VMID, key)); err != nil {
				return err
			}
		case key == "unprivileged":
			return fail(http.StatusInternalServerError, "unable to modify read-only option: '%s'", key)
		}
	}

	for _, key := range e.reverts {
		v.dropPending(key)
		v.removePendingDelete(key)
	}
	modified := map[string]bool{}
	for _, key := range e.deletes {
		_, inConf := v.Conf[key]
		_, inPending := v.Pending[key]
		if !inConf && !inPending {
			continue
		}
		modified[key] = true
		v.addPendingDelete(key, false)
	}
	for _, key := range e.keys {
		modified[key] = true
		v.setPending(key, e.vals[key])
		v.removePendingDelete(key)
	}
	cleanupPending(v)
	if v.Running {
		s.hotplugCT(v, modified)
		return nil
	}
	s.applyPendingCT(v, modified)
	return nil
}

// applyPendingCT is pve-container's vmconfig_apply_pending for the keys in
// sel (all when sel is nil: at start): a removed mount point's volume
// becomes unusedN, a new one is allocated.
func (s *Server) applyPendingCT(v *vm, sel map[string]bool) {
	for _, key := range v.pendingDeleteKeys() {
		if sel != nil && !sel[key] {
			continue
		}
		val, ok := v.Conf[key]
		delete(v.Conf, key)
		v.removePendingDelete(key)
		if ok {
			s.dropCTVolume(v, key, val)
		}
	}
	cleanupPending(v)
	for _, key := range slices.Sorted(maps.Keys(v.Pending)) {
		if sel != nil && !sel[key] {
			continue
		}
		val := v.Pending[key]
		if key == "rootfs" || strings.HasPrefix(key, "mp") {
			nval, err := s.allocMountPoint(v, key, val)
			if err != nil {
				continue // stays pending, as PVE's apply error leaves it
			}
			val = nval
		}
		v.dropPending(key)
		s.setKey(v, key, val)
	}
}

// dropCTVolume handles a container key's removal: a mount point's volume
// becomes unusedN, an unused volume is destroyed.
func (s *Server) dropCTVolume(v *vm, key, val string) {
	file, _ := diskFile(val)
	switch {
	case strings.HasPrefix(key, "mp"):
		s.detachVolume(v, file)
	case isUnusedKey(key):
		delete(s.st.Volumes, file)
	}
}

// applyPending applies every pending change as a guest starts (qemu-server
// vm_start, pve-container vm_start).
func (s *Server) applyPending(v *vm) {
	if v.Type == s.lxc.typ {
		s.applyPendingCT(v, nil)
		return
	}
	s.applyPendingQemu(v)
	if isCloudinitVM(v) {
		v.CloudInit = nil // the start regenerates the image
	}
}

// isCloudinitVM reports whether a VM has a cloud-init drive.
func isCloudinitVM(v *vm) bool {
	for key, val := range v.Conf {
		if qemuDriveRe.MatchString(key) && isCloudinitDrive(val) {
			return true
		}
	}
	return false
}

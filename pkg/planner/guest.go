package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// guest is what QEMU VMs and containers share: one cluster-wide vmid
// space, found by vmid or else by name among the guests as they are now
// (guestRows), vmids
// allocated at create, power state and pool membership reconciled. The
// QemuVM and LxcContainer kinds embed it and add what differs.
type guest struct {
	typ        pve.GuestType
	noun       string // "vm", "container": messages ("create vm 100")
	nameParam  string // the parameter that names the guest: name, hostname
	createPath string // the create call's path template (schema facts)
	// notInConfig are create parameters PVE does not keep in the config:
	// they steer the create call only (pool membership is read from
	// /cluster/resources and compared apart).
	notInConfig map[string]bool
	// replaceKeys are config keys PVE refuses to change on an existing
	// guest, with why: a change means a new guest.
	replaceKeys map[string]string

	// What else differs between the types, one value each (qemu.go,
	// lxc.go), read by the code they share instead of testing typ, as the
	// simulator's guestKind does (pkg/pve/pvesim/guest.go).

	specKind string // the spec kind of the type's guests: QemuVM, LxcContainer
	cli      string // the node's command line tool for the type: qm, pct
	// configMethod is the config write's method: POST for qemu-server's
	// asynchronous update_vm, PUT for pve-container's update_vm.
	configMethod string
	// quickConfig reports whether a config write of values is made
	// synchronously (pve.QemuConfigIsQuick for a VM; never for a
	// container).
	quickConfig func(values url.Values, running bool) bool
	// option is the permission table of a config key: acl.QemuOption,
	// acl.CTOption.
	option func(key string) acl.Option
	// ownValuePerms are the needs of a setting whose value decides them
	// (acl.Option.ByValue) beyond tags and NICs: a VM's drives, serial
	// ports and devices, a container's feature flags and mount points.
	ownValuePerms func(key, val, old string, deleting bool, sc setting) []engine.PermNeed
	// checksOldBridge: a NIC's change checks the bridge of its old value
	// too (pve-container), not only when the NIC is deleted (qemu-server).
	checksOldBridge bool
	// findNeeds are what finding the guest needs beyond the guest lists
	// (a container's template on its storage).
	findNeeds func(r *spec.Resource) []engine.PermNeed
	// createNeeds are what a create needs beyond its settings (a
	// container's template, root disk and privileged mode); it may take
	// keys out of vals that create_vm does not check, and returns the
	// default storage of new volumes.
	createNeeds func(r *spec.Resource, vals map[string]string, storage string) ([]engine.PermNeed, string)
	// createPrereqs are what a guest made anew needs on node beyond its
	// settings (a container's template and root disk storage).
	createPrereqs func(r *spec.Resource, node string) []engine.Prereq
	// isDisk: a spec key that holds a volume, for prerequisites
	// (acl.IsQemuDrive; a container's rootfs and mpN).
	isDisk func(key string) bool
	// isVolumeKey: a config key that holds a volume of the guest, for
	// snapshots (a VM's drives, a container's root and mount points).
	isVolumeKey func(key string) bool
	// diskContent is the storage content of the guest's volumes: images
	// (QEMU), rootdir (containers).
	diskContent string
	// defaultStorage is where a new volume that names no storage goes
	// ("": PVE's own default, a VM's); a container's is create_vm's.
	defaultStorage func(r *spec.Resource) string
	// moveSub is the call that moves a volume to another storage:
	// /move_disk (qemu-server move_vm_disk), /move_volume (pve-container
	// move_volume).
	moveSub string
	// moveFormat: a move passes the drive's format= on (qemu-server's
	// move_vm_disk takes one, pve-container's move_volume none).
	moveFormat bool
	// stopsToMove: a running guest is shut down to move its volumes and
	// started again (PVE moves a container's only while it is stopped).
	stopsToMove bool
	// restartMigrate: a running guest migrates in restart mode (PVE has
	// no live migration for containers), not online.
	restartMigrate bool
	// migrateNote is what the effects say a change of node does.
	migrateNote string
	// checksMigration: the plan asks PVE what would keep the guest from
	// migrating (GET …/qemu/{vmid}/migrate; containers have no such call).
	checksMigration bool
	// migrationBlockers is what PVE would refuse in migrating the guest
	// to target (running: while it runs).
	migrationBlockers func(r *spec.Resource, lo *engine.LiveObj, target string, running bool) error
	// ownPending is the type's own rule on whether changing key stays
	// pending on the running guest, before pve.GuestLiveRule's: decided
	// false leaves it to those.
	ownPending func(key string, live *pve.Config, val string, deleting bool) (pends, decided bool)
	// rebootCheck judges a guest that is status, not running, after its
	// reboot: an error ends the wait, nil waits on. since is when the
	// reboot task started (-1: not read yet). See rebootAndWait.
	rebootCheck func(ctx context.Context, x *engine.Execution, g guest, node string, vmid int, status string, since *int64) error
}

// guestState is what a guest's change carries from plan to apply.
type guestState struct {
	VMID int `json:"vmid,omitempty"` // the guest's vmid (0: allocated at create)
	// PrevNode is the node the guest lives on now when the change moves
	// it: a migration (update) or a replace.
	PrevNode string `json:"prevNode,omitempty"`
	// Created is the vmid a create (or a replace's create) got.
	Created int `json:"created,omitempty"`
	// Derived are parameters the plan derived from live state (a VM's
	// ipconfig0 from the address DNS holds for it).
	Derived map[string]string `json:"derived,omitempty"`
	// Clone is the template a create clones (a VM's image).
	Clone *guestRef `json:"clone,omitempty"`
	// Old is the guest that this one replaces (replace: OLD), destroyed
	// once this one is up.
	Old *guestRef `json:"old,omitempty"`
	// Regenerate: the update changes the input of the VM's cloud-init
	// drive, which PVE makes anew on request.
	Regenerate bool `json:"regenerate,omitempty"`
	// Reboot: the update reboots the running guest to apply what PVE
	// keeps pending (rebootOnPending).
	Reboot bool `json:"reboot,omitempty"`
	// Note is the user's text of the description of the template that a
	// Template's rebuild removes: the new one gets it back.
	Note string `json:"note,omitempty"`
	// Stopped: the plan saw the guest stopped, so a VM's update that
	// only rewrites its config is made synchronously (pve.QemuConfigIsQuick).
	Stopped bool `json:"stopped,omitempty"`
	// Owner is the stack a create marks the new guest with (owner.go);
	// "": no mark.
	Owner string `json:"owner,omitempty"`
}

// guestRef names a guest other than the change's own.
type guestRef struct {
	VMID   int    `json:"vmid"`
	Node   string `json:"node"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status,omitempty"` // as the plan found it
}

func (r *guestRef) String() string {
	if r.Name == "" {
		return fmt.Sprintf("%d on node %s", r.VMID, r.Node)
	}
	return fmt.Sprintf("%d (%s) on node %s", r.VMID, r.Name, r.Node)
}

// guestLive is what observe reads about a guest beside its config. A
// plan keeps one per guest, so what few guests need is in guestMore,
// made only for those (read it with more, write it with setMore).
type guestLive struct {
	VMID   int
	Status string // running | stopped
	Pool   string // the pool it belongs to ("" = none)
	// RenamedFrom is the old name the guest was found by (the spec's
	// renamedFrom; rename.go); "" when found by its own.
	RenamedFrom string
	rare        *guestMore
}

// guestMore is what observe reads for some guests only.
type guestMore struct {
	// Stubs are, for a guest found by name that does not exist, the
	// guests of its type PVE is still creating or cloning: they have no
	// name yet, and one of them may become this guest (guestbusy.go).
	Stubs []int
	// What a kind settles at plan time from live state besides the
	// guest's own (see guestState): Derived, Clone and Old. Unsettled is
	// why some of it could not be (DNS not answering, an ambiguous
	// replace), CloneErr why the template cannot be cloned: errors only
	// for a change that needs them (a create or replace for CloneErr),
	// never for a destroy.
	Derived   map[string]string
	Clone     *guestRef
	Old       *guestRef
	Unsettled error
	CloneErr  error
	// CloneConfig is the template's config, read for a create that clones
	// it (what the clone needs: its disks' storages, its bridges).
	CloneConfig *pve.Config
	// Pending are the config keys PVE keeps pending until the guest's
	// next start (read for a running guest with rebootOnPending).
	Pending []string
	// Migration is what PVE says would keep a VM from migrating (read
	// when the spec names another node).
	Migration *pve.MigrationCheck
	// Linked are the guests cloned from this template by linked clone
	// whose disks name its base volumes (read for a Template): PVE
	// refuses to destroy the template while they exist.
	Linked []guestRef
	// LinkedErr is why Linked could not be read: an error only for a
	// change that destroys the template.
	LinkedErr error
}

// more is what was read of guestMore (all zero when nothing was).
func (gl *guestLive) more() guestMore {
	if gl.rare == nil {
		return guestMore{}
	}
	return *gl.rare
}

// setMore returns guestMore to write, made on first use.
func (gl *guestLive) setMore() *guestMore {
	if gl.rare == nil {
		gl.rare = &guestMore{}
	}
	return gl.rare
}

// shutdownTimeout is how long (seconds) a guest gets to shut down before
// PVE stops it hard.
const shutdownTimeout = 180

func stateOf(c *engine.Change) *guestState { return engine.EnsureState[guestState](c) }

func liveOf(lo *engine.LiveObj) *guestLive {
	if gl, ok := lo.State.(*guestLive); ok && gl != nil {
		return gl
	}
	return &guestLive{}
}

func (g guest) NewState(lo *engine.LiveObj) any {
	gl := liveOf(lo)
	return &guestState{VMID: gl.VMID, Derived: gl.more().Derived, Clone: gl.more().Clone, Old: gl.more().Old, Stopped: gl.Status == "stopped"}
}

func (g guest) DecodeState(raw json.RawMessage) (any, error) {
	st := &guestState{}
	return st, json.Unmarshal(raw, st)
}

func (g guest) pinnedVMID(r *spec.Resource) int {
	id, _ := specVMID(r)
	return id
}

// guestTraits are a guest kind's traits (made once per kind, qemuTraits
// and lxcTraits: the engine asks for them often, and the func fields
// would allocate each time). A guest lives in the cluster-wide vmid
// space. One without a pinned vmid gets a new one, so its replacement can
// be built before the old guest is removed. Messages name it by its vmid
// ("VM 100", "container 200"); a PVE task (its config lock, a create) can
// hold it.
func (g guest) guestTraits() engine.KindTraits {
	return engine.KindTraits{
		Scope:        engine.ScopeGuest,
		ClaimsVMID:   true,
		PinnedVMID:   g.pinnedVMID,
		CreatesFirst: func(r *spec.Resource) bool { return g.pinnedVMID(r) == 0 },
		Noun:         guestNoun(string(g.typ)),
		Name:         func(c *engine.Change) string { return strconv.Itoa(stateOf(c).VMID) },
		Busy:         g.busy,
	}
}

func specVMID(r *spec.Resource) (int, error) {
	v := r.Params.Get("vmid")
	if v == "" {
		return 0, nil
	}
	id, err := strconv.Atoi(v)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("vmid %q is not a positive integer", v)
	}
	return id, nil
}

func (g guest) name(r *spec.Resource) string {
	if n := r.Params.Get(g.nameParam); n != "" {
		return n
	}
	return r.Name
}

// compareConfig compares the guest's config keys. done is true when the
// change is decided already (it must be replaced); otherwise c holds the
// config diff and the update's params, and the kind adds its own checks
// and compareCommon. A guest a task holds locked is compared as it is:
// the engine refuses any change to it (busy).
func (g guest) compareConfig(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) (done bool, err error) {
	cmp := compare.Comparer{M: b.Method("POST", g.createPath)}
	want := wanted(r, liveOf(lo).more().Derived)
	c.Diff = cmp.DiffParams(want, r.Remove, lo.Config, g.notInConfig)
	for i, d := range c.Diff {
		if why, ok := g.replaceKeys[d.Path]; ok {
			if want := engine.ParamNode(r); want != "" && want != lo.Node {
				stateOf(c).PrevNode, c.Node = lo.Node, want
			}
			return true, b.Replace(r, c, fmt.Sprintf("%s changes (%v → %v): %s", d.Path, d.Before, d.After, why))
		}
		if isMove(d) && cloudinitRe.MatchString(":"+driveFile(want[compare.TopKey(d.Path)])) {
			// A cloud-init drive holds nothing of its own: PVE makes it
			// anew on the new storage and frees the old one (qemu-server
			// vmconfig_register_unused_drive), so it changes in place
			// rather than moving.
			key := compare.TopKey(d.Path)
			c.Diff[i] = engine.FieldDiff{Path: key + ".file", Before: driveFile(lo.Config.Get(key)), After: driveFile(want[key])}
		}
	}
	if err := g.checkDisks(r, lo, c); err != nil {
		return true, err
	}
	c.Params = cmp.UpdateParams(c.Diff, want, lo.Config, func(d engine.FieldDiff) bool { return isResize(d) || isMove(d) })
	if len(c.Params) == 0 {
		c.Params = nil
	}
	if want := engine.ParamNode(r); want != "" && want != lo.Node {
		if err := g.planMigration(r, lo, c, want); err != nil {
			return true, err
		}
	}
	return false, nil
}

// updateGuest writes a guest's config: a VM's change that only rewrites
// its config synchronously (one call, no task to poll), any other with
// the task PVE advises for it (pve.QemuConfigIsQuick).
func (g guest) updateGuest(ctx context.Context, x *engine.Execution, c *engine.Change, values url.Values, stopped bool) error {
	vmid := stateOf(c).VMID
	if g.quickConfig(values, !(stopped || stateOf(c).Stopped)) {
		return x.Client.UpdateQemuSync(ctx, c.Node, vmid, values)
	}
	return x.Client.UpdateGuest(ctx, g.typ, c.Node, vmid, values)
}

func isResize(d engine.FieldDiff) bool { return strings.HasSuffix(d.Path, ".size") }

// updateConfig writes the changed config keys (with the digest of the
// plan), says which stay pending until the guest restarts, and grows the
// disks that grew.
func (g guest) updateConfig(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	vmid := stateOf(c).VMID
	params, digest := c.Params, c.Digest
	after, stopped, err := g.moveDisks(ctx, x, c)
	if err != nil {
		return err
	}
	if after != nil {
		// The moves changed the config: the update goes on from it.
		params, digest = g.remerge(c, after), after.Get("digest")
	}
	params = grownSizes(c, params)
	grownFirst := false
	if len(params) > 0 && hasResize(c) {
		// Grow first: PVE writes an existing volume's size as the storage
		// reports it when the drive is written (qemu-server create_disks:
		// volume_size_info), and a resize changes only the current value,
		// not a pending one (resize_vm); the update then reads the grown
		// size. The first resize carries the digest the plan read (a hand
		// edit since is refused, not grown over); it changes the digest.
		if err := g.resize(ctx, x, c, digest); err != nil {
			return err
		}
		grownFirst = true
		if digest != "" {
			cur, err := x.Client.GuestConfig(ctx, g.typ, c.Node, vmid)
			if err != nil {
				return fmt.Errorf("read config of %s %d: %w", g.noun, vmid, err)
			}
			digest = cur.Get("digest")
		}
	}
	if len(params) > 0 {
		values := toValues(params)
		if digest != "" {
			values.Set("digest", digest)
		}
		if err := g.updateGuest(ctx, x, c, values, stopped); err != nil {
			if pve.IsDigestMismatch(err) {
				return &engine.StaleError{Address: c.Address, Why: "digest", Err: err}
			}
			return fmt.Errorf("update %s %d: %w", g.noun, vmid, err)
		}
	}
	if !grownFirst {
		if err := g.resize(ctx, x, c, ""); err != nil {
			return err
		}
	}
	if stopped {
		if want := spec.Guest(c.Resource).Running; want == nil || *want {
			x.Msg("starting %s %d again", g.noun, vmid)
			if err := x.Client.GuestPower(ctx, g.typ, c.Node, vmid, "start", nil); err != nil {
				return fmt.Errorf("start %s %d: %w", g.noun, vmid, err)
			}
		}
	}
	return nil
}

// compareCommon adds what every guest compares beside its config: pool
// membership and power state.
func (g guest) compareCommon(r *spec.Resource, lo *engine.LiveObj, c *engine.Change) {
	gl := liveOf(lo)
	if d, ok := poolDiff(r, gl.Pool); ok {
		c.Diff = append(c.Diff, d)
	}
	// What the kind noted (a migration, moved disks) follows the diff's.
	c.Reasons = append(compare.Reasons(c.Diff), c.Reasons...)
	if gl.RenamedFrom != "" {
		c.Reasons = append([]string{renameReason(g, gl)}, c.Reasons...)
	}
	if want := spec.Guest(r).Running; want != nil {
		if got := gl.Status == "running"; got != *want {
			c.Diff = append(c.Diff, engine.FieldDiff{Path: "running", Before: got, After: *want})
			c.Reasons = append(c.Reasons, fmt.Sprintf("power state %s, wanted %s", gl.Status, powerWord(*want)))
		}
	}
	if len(c.Diff) > 0 {
		c.Action = engine.Update
	} else {
		c.Action = engine.NoOp
	}
	g.notePending(r, lo, c)
}

// Create makes the guest with a vmid of its own (the pinned one, the one
// a replace freed, or the next free one), then starts it if asked.
func (g guest) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	vmid, err := g.createGuest(ctx, x, c, g.createParams(c))
	if err != nil {
		return err
	}
	if want := spec.Guest(c.Resource).Running; want != nil && *want {
		x.Msg("starting %s %d", g.noun, vmid)
		if err := x.Client.GuestPower(ctx, g.typ, c.Node, vmid, "start", nil); err != nil {
			return fmt.Errorf("start %s %d: %w", g.noun, vmid, err)
		}
	}
	return nil
}

// createParams are the create call's parameters: the spec's (with those
// the plan derived) but node, which is in the path.
func (g guest) createParams(c *engine.Change) url.Values {
	params := url.Values{}
	for k, v := range wanted(c.Resource, stateOf(c).Derived) {
		if k != "node" {
			params.Set(k, v)
		}
	}
	return params
}

// createGuest sends the create call with the vmid the change gets and
// records it in the change's state.
func (g guest) createGuest(ctx context.Context, x *engine.Execution, c *engine.Change, params url.Values) (int, error) {
	st := stateOf(c)
	fixed, err := g.newVMID(c)
	if err != nil {
		return 0, err
	}
	vmid, err := engine.WithNewVMID(ctx, x, fixed, g.noun, func(vmid int) error {
		params.Set("vmid", strconv.Itoa(vmid))
		ownerValues(c, params, vmid)
		x.Msg("creating %s %d on node %s", g.noun, vmid, c.Node)
		return x.Client.CreateGuest(ctx, g.typ, c.Node, params)
	})
	if err != nil {
		return 0, fmt.Errorf("create %s %d: %w", g.noun, vmid, err)
	}
	st.Created = vmid
	return vmid, nil
}

// newVMID is the vmid a create must use (0: any free one): the pinned
// one, or the one a replace frees.
func (g guest) newVMID(c *engine.Change) (int, error) {
	fixed, err := specVMID(c.Resource)
	if err != nil {
		return 0, err
	}
	if fixed == 0 && c.Action == engine.Replace && !c.CreateFirst {
		fixed = stateOf(c).VMID // a replace keeps the vmid it frees
	}
	return fixed, nil
}

// wanted is r's parameters with those the plan derived from live state (a
// VM's ipconfig0 from DNS) added.
func wanted(r *spec.Resource, derived map[string]string) map[string]string {
	if len(derived) == 0 {
		return r.Params.Map()
	}
	out := make(map[string]string, r.Params.Len()+len(derived))
	for k, v := range r.Params.All() {
		out[k] = v
	}
	for k, v := range derived {
		out[k] = v
	}
	return out
}

// updateCommon moves the guest between pools and reconciles its power
// state, after the kind's own config changes.
func (g guest) updateCommon(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	vmid := stateOf(c).VMID
	for _, d := range c.Diff {
		if d.Path != "pool" {
			continue
		}
		if err := movePool(ctx, x, g.noun, vmid, d); err != nil {
			return fmt.Errorf("pool of %s %d: %w", g.noun, vmid, err)
		}
	}
	for _, d := range c.Diff {
		if d.Path != "running" {
			continue
		}
		// running: false asks the guest to shut down (ACPI), and stops it
		// hard only if it has not within the timeout, as an operator would.
		want, _ := d.After.(bool)
		action, params := "shutdown", url.Values{"timeout": {strconv.Itoa(shutdownTimeout)}, "forceStop": {"1"}}
		if want {
			action, params = "start", nil
		}
		// An earlier step of the update may have got it there already (a
		// shutdown before a migration); PVE refuses to do it twice.
		st, err := x.Client.GuestStatus(ctx, g.typ, c.Node, vmid)
		if err != nil {
			return fmt.Errorf("status of %s %d: %w", g.noun, vmid, err)
		}
		if (st.Status == "running") == want {
			continue
		}
		x.Msg("%s %s %d", action, g.noun, vmid)
		if err := x.Client.GuestPower(ctx, g.typ, c.Node, vmid, action, params); err != nil {
			return fmt.Errorf("%s %s %d: %w", action, g.noun, vmid, err)
		}
	}
	return nil
}

// Remove deletes the guest the change found (on the node a replace moves
// it from), shutting it down first (a hard stop after shutdownTimeout),
// then with purge=1 and destroy-unreferenced-disks=1.
func (g guest) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	st := stateOf(c)
	node := c.Node
	if st.PrevNode != "" {
		node = st.PrevNode
	}
	vmid := st.VMID
	if vmid == 0 {
		return nil // nothing was found at plan time
	}
	s, err := x.Client.GuestStatus(ctx, g.typ, node, vmid)
	if pve.IsNotFound(err) {
		x.Msg("%s %d is already gone", g.noun, vmid)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read status of %s %d: %w", g.noun, vmid, err)
	}
	if s.Status == "running" {
		x.Msg("shutting down %s %d (a hard stop after %s)", g.noun, vmid, durfmt.Format(shutdownTimeout*time.Second))
		if err := g.shutdown(ctx, x, node, vmid); err != nil {
			return err
		}
	}
	x.Msg("deleting %s %d", g.noun, vmid)
	if err := x.Client.DeleteGuest(ctx, g.typ, node, vmid); err != nil {
		return fmt.Errorf("delete %s %d: %w", g.noun, vmid, err)
	}
	return nil
}

func powerWord(running bool) string {
	if running {
		return "running"
	}
	return "stopped"
}

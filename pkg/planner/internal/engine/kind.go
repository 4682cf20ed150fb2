package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// KindOps is what the engine needs from one kind. The kinds live in
// package planner, a file or a few each (qemu.go, bridge.go, pool.go …),
// registered there (registry.go); the engine (observe.go, build.go,
// apply.go, verify.go) decides the lifecycle —
// destroy, state: absent, managed: false, missing objects, protection,
// replace — and never names a kind. A kind compares and acts.
type KindOps interface {
	// Observe finds r's live object, reading through lc's per-connection
	// caches so that every list is fetched once.
	Observe(ctx context.Context, lc *LiveConn, r *spec.Resource) (*LiveObj, error)
	// Compare decides an existing object the spec wants present: it fills
	// c's Diff, Params and Reasons and sets its Action to NoOp or Update,
	// or makes it a replace with b.replace.
	Compare(b *Builder, r *spec.Resource, lo *LiveObj, c *Change) error
	// Create, Update and Remove carry a change out against the live API; a
	// replace is remove then create (create then remove with CreateFirst).
	Create(ctx context.Context, x *Execution, c *Change) error
	Update(ctx context.Context, x *Execution, c *Change) error
	Remove(ctx context.Context, x *Execution, c *Change) error
	// Current re-reads c's object for Verify.
	Current(ctx context.Context, cl *pve.Client, c *Change) (*LiveObj, error)
	// Traits declares what the engine treats the kind as (KindTraits).
	Traits() KindTraits
}

// KindScope is where a kind's objects live.
type KindScope string

const (
	ScopeCluster KindScope = "cluster" // one for the cluster: a pool, a user, a storage definition
	ScopeNode    KindScope = "node"    // on one node: an interface, its DNS settings, a volume
	ScopeGuest   KindScope = "guest"   // a guest, in the cluster-wide vmid space
)

// KindTraits is what a kind declares about itself, once, in its traits
// method: the engine reads these facts instead of discovering marker
// interfaces by type assertion, and TestKindContract checks that they fit
// together. Only doors that carry behaviour stay interfaces (below).
type KindTraits struct {
	Scope KindScope
	// Singleton kinds stand for something every node has once (its DNS
	// settings): never created nor deleted, left as they are by destroy.
	Singleton bool
	// ClaimsVMID kinds occupy a vmid of the cluster-wide guest space;
	// PinnedVMID is the vmid r's spec fixes (0: none), reserved during
	// apply so that a guest without one does not take it first.
	ClaimsVMID bool
	PinnedVMID func(r *spec.Resource) int
	// CreatesFirst says whether r's replacement can be built beside the
	// old object (the identity allows two at once): its replace creates
	// the new one before it removes the old. nil: never.
	CreatesFirst func(r *spec.Resource) bool
	// Stages is the staging scope a change of the kind waits in until a
	// change of CommittedBy commits it: "node" is the object's node's
	// scope ("node/<node>", as a node's interfaces.new), any other value
	// one scope of the cluster ("cluster/sdn"). StagedWhat names what
	// waits there in messages ("network"); StagedAlready says whether
	// lo's scope holds uncommitted changes already.
	Stages        string
	StagedWhat    string
	CommittedBy   string
	StagedAlready func(lo *LiveObj) bool
	// Commits is the staging scope the kind's changes commit, named as
	// Stages names it. Such kinds implement committer and are planned
	// after every other kind, in every mode (a destroy stages removals
	// that need the commit too).
	Commits string
	// Rebuilt, when set, says the kind's objects are never updated in
	// place, only kept as they are or rebuilt (removed and made again),
	// and when, for explain; FieldEffect never calls a change in-place.
	Rebuilt string
	// Noun names the kind's objects in messages ("": spec.Noun), and
	// Name one object after it (nil: the value others name it by, or
	// its resource's name): "VM 100", "bridge vmbr1".
	Noun string
	Name func(c *Change) string
	// Busy says what PVE task holds r's object (a guest's config lock), or
	// what may be it when it was not found (nil: nothing). The engine
	// neither changes a busy object nor takes it for absent (busy.go).
	// nil: the kind's objects are never held.
	Busy func(r *spec.Resource, lo *LiveObj) *BusyError
}

// TraitsOf is kind's declared traits (the zero value for an unknown kind).
func TraitsOf(kind string) KindTraits {
	if k, ok := Kinds[kind]; ok {
		return k.Traits()
	}
	return KindTraits{}
}

// pinnedVMID is the vmid r's spec fixes, for a kind that claims vmids (0:
// none, or not such a kind).
func (t KindTraits) PinnedVMIDOf(r *spec.Resource) int {
	if !t.ClaimsVMID || t.PinnedVMID == nil {
		return 0
	}
	return t.PinnedVMID(r)
}

// Doors a kind may have, as optional interfaces: each carries behaviour.
// What used to be a marker is a KindTraits field now: singleton →
// Singleton, netStager → Stages/CommittedBy/StagedAlready, netCommitter →
// Commits (with committer), vmidClaimer → ClaimsVMID/PinnedVMID,
// createFirster → CreatesFirst, busyKind → Busy, rebuilder → Rebuilt,
// objectNamer → Noun/Name. TestKindContract fails for a kind that still
// has one of the old marker methods without its trait (oldMarkers).
type (
	// committer kinds (traits Commits) commit a staging scope's changes.
	Committer interface {
		PlanCommit(b *Builder, r *spec.Resource, lo *LiveObj, c *Change) error
		// foreign describes the staged changes pvectl did not make that
		// c would commit ("" when there are none): Apply refuses them
		// unless allowed.
		Foreign(c *Change) string
	}
	// stateful kinds keep a state of their own on their changes (a guest's
	// vmid): newState makes it for a change planned from lo, decodeState
	// reads it back from a plan file.
	stateful interface {
		NewState(lo *LiveObj) any
		DecodeState(raw json.RawMessage) (any, error)
	}
	// createChecker kinds find, at plan time, what PVE would refuse in a
	// create (a clash with what the node has already).
	createChecker interface {
		CheckCreate(b *Builder, r *spec.Resource, lo *LiveObj, c *Change) error
	}
	// removeChecker kinds find, at plan time, what PVE would refuse in a
	// delete (an interface another one still uses as its port).
	removeChecker interface {
		CheckRemove(b *Builder, r *spec.Resource, lo *LiveObj) error
	}
	// lateRemover kinds remove what a change replaces only after the
	// change's dependents finished, as OpenTofu destroys a deposed object
	// after the resources that used it were updated: a config drive's old
	// version goes once the VMs were re-pointed to the new one. Apply runs
	// the change's create or update, lets the dependents go, then
	// removeLate.
	lateRemover interface {
		RemovesLate(c *Change) bool
		RemoveLate(ctx context.Context, x *Execution, c *Change) error
	}
	// lateWriter kinds write part of a change only after the change's
	// dependents finished: a cluster Firewall whose IP sets a
	// SecurityGroup's rules use writes the sets, lets the group go, then
	// its rules, which name the group (firewall_late.go). Apply runs the
	// change's first part (create or update), lets the dependents go,
	// then writeLate.
	lateWriter interface {
		WritesLate(c *Change) bool
		WriteLate(ctx context.Context, x *Execution, c *Change) error
	}
	// provisioner kinds run a Provision change: provisioning files on a
	// guest that needs no other change (provision.go).
	provisioner interface {
		Provision(ctx context.Context, x *Execution, c *Change) error
	}
	// prerequisiter kinds name what their change needs to exist first (a
	// guest's pool, storages, bridges, template), for an object on node
	// that is lo now (nil: one made anew). The engine checks them at plan
	// time against the specs and the live state, and again, live, right
	// before a replace removes the old object (prereq.go).
	prerequisiter interface {
		Prereqs(r *spec.Resource, node string, lo *LiveObj) []Prereq
	}
)

// kinds is the registry of supported kinds, filled by register before
// any plan (registry.go); read-only after package init.
var Kinds = map[string]KindOps{}

// Register adds kind k under name; a name registered twice is a bug.
func Register(name string, k KindOps) {
	if _, dup := Kinds[name]; dup {
		panic("kind " + name + " registered twice")
	}
	Kinds[name] = k
}

// Family hooks: what a family of kinds adds to every plan and apply,
// registered with the kinds (registry.go); the engine runs them without
// knowing whose they are.
var (
	// planSteps run once every resource is planned (a guest's snapshot
	// before a risky change: snapshot.go).
	PlanSteps []func(ctx context.Context, b *Builder) error
	// applyWrappers run around a change's apply, the first registered
	// outermost (a snapshot taken first, rolled back on failure).
	ApplyWrappers []func(ctx context.Context, clients Clients, x *Execution, opts ApplyOptions, apply func() error) error
	// needRewriters settle the paths of needs that only the set and the
	// live state can name (a vnet's zone: sdn_vnetzone.go).
	NeedRewriters []func(set *spec.Set, lc *LiveConn, conn string, needs []PermNeed) []PermNeed
)

// rewriteNeeds passes needs through every needRewriter.
func rewriteNeeds(set *spec.Set, lc *LiveConn, conn string, needs []PermNeed) []PermNeed {
	for _, rw := range NeedRewriters {
		needs = rw(set, lc, conn, needs)
	}
	return needs
}

func KindOf(kind string) (KindOps, error) {
	k, ok := Kinds[kind]
	if !ok {
		return nil, fmt.Errorf("kind %s is not supported by the planner", kind)
	}
	return k, nil
}

// liveObj is one resource's live object as read at plan (or verify) time.
type LiveObj struct {
	Exists bool
	Node   string
	Config *pve.Config // the object's configuration as PVE reports it
	Digest string      // PVE's config digest, or our own sha1 over the fields
	// State is what the kind read beside the config (a guest's vmid, power
	// state and pool; whether a node has staged network changes).
	State any

	// load, when set, finishes reading the object; Observe runs the loads
	// of all resources concurrently (per-VM config reads dominate a plan).
	Load func(ctx context.Context) error
}

// execution is what a kind's apply gets: the client of the change's
// connection and a way to report progress.
type Execution struct {
	Client *pve.Client
	Hooks  Hooks
	Change *Change
	// vmids allocates the vmids of new guests on the change's connection,
	// one allocator per apply and connection (it knows the pinned ones).
	vmids *vmids
	Plan  *Plan // the plan being applied
	// allowForeign lets a network commit take staged changes pvectl did
	// not make, those the plan showed.
	AllowForeign bool
	// conn is the change's connection settings (DNS, SSH user and key for
	// provisioning); nil when unknown.
	Conn *spec.Connection
	// warnings collects the task warnings of the apply; nil: not kept.
	warnings *warnLog
	// outputs are what the apply's changes produced so far (outputs.go).
	Outputs *appliedOutputs
	// locks are the locks in PVE the apply's changes hold for the ones
	// after them (heldlock.go); Apply releases them at its end.
	Locks *heldLocks
}

func (x *Execution) Msg(format string, args ...any) {
	x.Hooks.Message(x.Change, fmt.Sprintf(format, args...))
}

// Phase tells the hooks that take it what the change is doing now (the
// zero Phase: what its action says again).
func (x *Execution) Phase(p Phase) {
	if ph, ok := x.Hooks.(PhaseHooks); ok {
		ph.Phase(x.Change, p)
	}
}

// Output hands a one-time value (an API token's secret) to the hooks; it
// never enters the plan, a message or an error.
func (x *Execution) Output(name, value string, sensitive bool) {
	x.Hooks.Output(x.Change, name, value, sensitive)
}

// planChange plans one resource, unless a PVE task holds its object: an
// object a task holds is never changed, and one that was not found while
// a task may be making it is not taken for absent (BusyError). One that
// needs no change is left as it is.
func (b *Builder) planChange(k KindOps, r *spec.Resource, lo *LiveObj) (*Change, error) {
	var held *BusyError
	if busy := k.Traits().Busy; busy != nil && !r.ReadOnly {
		held = busy(r, lo)
	}
	if held != nil && !lo.Exists {
		return nil, held
	}
	c, err := b.planLifecycle(k, r, lo)
	if err == nil {
		labelDiff(r, c)
	}
	if held != nil {
		if err != nil || c.Action != NoOp {
			return nil, held
		}
		c.Reasons = append(c.Reasons, held.What+": nothing to change")
	}
	return c, err
}

// planLifecycle settles the lifecycle of one resource — destroy, state:
// absent, managed: false, missing objects, protection — and asks the kind
// to compare only when the object exists and should stay.
func (b *Builder) planLifecycle(k KindOps, r *spec.Resource, lo *LiveObj) (*Change, error) {
	c := &Change{Node: lo.Node, Digest: lo.Digest, Fingerprint: Fingerprint(lo)}
	if st, ok := k.(stateful); ok {
		c.State = st.NewState(lo)
	}
	if nc, ok := k.(Committer); ok {
		return c, nc.PlanCommit(b, r, lo, c)
	}
	single := k.Traits().Singleton
	switch {
	case r.ReadOnly:
		if !lo.Exists {
			return nil, fmt.Errorf("%s does not exist, and it is managed: false (pvectl only reads it): create it in PVE, or drop managed: false to let pvectl create it", r.Address())
		}
		c.Action, c.Reasons = NoOp, []string{"managed: false: read only"}
	case single && (b.Opts.Destroy || r.State == spec.Absent):
		c.Action, c.Reasons = NoOp, []string{"nothing to remove"}
	case b.Opts.Destroy:
		switch {
		case !lo.Exists:
			c.Action, c.Reasons = NoOp, []string{"does not exist"}
		case r.Protected:
			c.Action, c.Reasons, c.Kept = NoOp, []string{"protected: skipped"}, true
		default:
			c.Action, c.Reasons = Delete, []string{"destroy"}
		}
	case r.State == spec.Absent:
		switch {
		case !lo.Exists:
			c.Action, c.Reasons = NoOp, []string{"does not exist"}
		case r.Protected:
			return nil, fmt.Errorf("%s is protected: refusing to delete it (state: absent)", r.Address())
		default:
			c.Action, c.Reasons = Delete, []string{"state: absent"}
		}
	case !lo.Exists && !single:
		c.Action, c.Reasons = Create, []string{"does not exist"}
		c.Diff = createDiff(r, c.Node)
		if cc, ok := k.(createChecker); ok {
			if err := cc.CheckCreate(b, r, lo, c); err != nil {
				return nil, err
			}
		}
	default:
		if err := k.Compare(b, r, lo, c); err != nil {
			return nil, err
		}
	}
	if rc, ok := k.(removeChecker); ok && c.Action == Delete {
		if err := rc.CheckRemove(b, r, lo); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// labelDiff names each diff line the user wrote as a convenience by it
// (spec.ShownAs): the plan text shows ip where the update sends
// ipconfig0.ip. Path is left as it is.
func labelDiff(r *spec.Resource, c *Change) {
	if len(c.Diff) == 0 {
		return
	}
	shown := spec.ShownAs(r)
	for i, d := range c.Diff {
		if l, ok := shown[d.Path]; ok && d.Line == "" {
			c.Diff[i].Label = l
		}
	}
}

// createDiff lists what a create will set, as "+" fields, each under the
// key the user wrote (ip, not the ipconfig0 it stands for). The node is the
// resolved one (node is the object's place, not a parameter), so a create
// whose spec leaves it out still shows where it lands.
func createDiff(r *spec.Resource, node string) []FieldDiff {
	params := r.Params.Clone()
	if params == nil {
		params = spec.NewParams(0)
	}
	params.Delete("node")
	for k := range spec.WrittenAs(r) {
		params.Delete(k) // the user's ip or vlan says it (an own field below)
	}
	if node != "" {
		params.Set("node", node)
	}
	var out []FieldDiff
	for _, k := range params.Keys() {
		out = append(out, compare.Diff(k, nil, params.Get(k)))
	}
	own := r.OwnFields()
	for _, k := range slices.Sorted(maps.Keys(own)) {
		switch v := own[k].(type) {
		case bool, string, int, float64: // running, image, ip…; lists and maps are not fields
			out = append(out, compare.Diff(k, nil, v))
		}
	}
	return out
}

// Replace turns c into a replace, unless r is protected. Kinds whose
// identity allows two objects at once build the new one first.
func (b *Builder) Replace(r *spec.Resource, c *Change, reason string) error {
	if r.Protected {
		return fmt.Errorf("%s is protected: refusing to replace it (%s)", r.Address(), reason)
	}
	c.Action = Replace
	c.Reasons = append(c.Reasons, reason)
	t := TraitsOf(r.Kind)
	if t.CreatesFirst != nil && t.CreatesFirst(r) {
		c.CreateFirst = true
		return nil
	}
	why := "the old one is destroyed first: the two cannot exist at once"
	if id := t.PinnedVMIDOf(r); id != 0 {
		why = fmt.Sprintf("the old one is destroyed first: the new one needs its vmid %d", id)
	}
	c.Reasons = append(c.Reasons, why)
	return nil
}

// apply carries out one change with its kind's calls.
func apply(ctx context.Context, k KindOps, x *Execution, c *Change) error {
	switch c.Action {
	case Create:
		return createChecked(ctx, k, x, c)
	case Update:
		return settled(ctx, k, x, c, k.Update(ctx, x, c))
	case ApplyNet:
		return k.Update(ctx, x, c)
	case Delete:
		return settled(ctx, k, x, c, k.Remove(ctx, x, c))
	case Provision:
		if p, ok := k.(provisioner); ok {
			return p.Provision(ctx, x, c)
		}
		return fmt.Errorf("internal error: %s does not provision", c.Resource.Kind)
	case Replace:
		if c.CreateFirst {
			if err := createChecked(ctx, k, x, c); err != nil {
				return err
			}
			if lr, ok := k.(lateRemover); ok && lr.RemovesLate(c) {
				return nil // removed after the dependents (Apply)
			}
			return k.Remove(ctx, x, c)
		}
		// The old one goes first: make sure the new one can be made
		// before there is no going back.
		if err := verifyPrereqs(ctx, k, x, c); err != nil {
			return err
		}
		if err := k.Remove(ctx, x, c); err != nil {
			return err
		}
		if err := createChecked(ctx, k, x, c); err != nil {
			return &ReplaceError{Removed: ObjectName(k, c), Node: c.Node, Err: err}
		}
	}
	return nil
}

// ObjectName names c's object in messages: "VM 100", "bridge vmbr1".
func ObjectName(k KindOps, c *Change) string {
	t := k.Traits()
	noun := t.Noun
	if noun == "" {
		noun = spec.Noun(c.Resource.Kind)
	}
	if t.Name != nil {
		return noun + " " + t.Name(c)
	}
	name := spec.RefValue(c.Resource)
	if name == "" {
		name = c.Resource.Name
	}
	return noun + " " + name
}

// ReplaceError is a replace that removed the old object and then failed
// to create the new one: the object is gone until a rerun makes it.
type ReplaceError struct {
	Removed string // "VM 100"
	Node    string // where the new one was to be made
	Err     error
}

func (e *ReplaceError) Error() string {
	where := ""
	if e.Node != "" {
		where = " on " + e.Node
	}
	return fmt.Sprintf("destroyed %s; creating it%s failed: %v", e.Removed, where, e.Err)
}

func (e *ReplaceError) Unwrap() error { return e.Err }

// neverCreated is embedded by kinds the engine never creates nor removes
// (singletons): reaching these is a bug in the engine.
type NeverCreated struct{}

func (NeverCreated) Create(context.Context, *Execution, *Change) error {
	return errors.New("internal error: this kind is never created")
}

func (NeverCreated) Remove(context.Context, *Execution, *Change) error {
	return errors.New("internal error: this kind is never removed")
}

// ParamNode is the node the spec names, if any.
func ParamNode(r *spec.Resource) string { return r.Params.Get("node") }

// DecodeNew is a stateful kind's decodeState for a state of type T: raw
// read into a new T.
func DecodeNew[T any](raw json.RawMessage) (any, error) {
	var st T
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// EnsureState is c's state as a *T, made (empty) when c has none yet.
func EnsureState[T any](c *Change) *T {
	if st, ok := c.State.(*T); ok && st != nil {
		return st
	}
	st := new(T)
	c.State = st
	return st
}

// ChangeState is c's state when it is a *T, nil otherwise.
func ChangeState[T any](c *Change) *T {
	st, _ := c.State.(*T)
	return st
}

// StartCommit begins a committer's planCommit: c is a noop until the
// plan finds something to commit, and the commit of a resource that is
// absent or managed: false commits nothing (false).
func StartCommit(r *spec.Resource, c *Change) bool {
	c.Action, c.Digest, c.Fingerprint = NoOp, "", ""
	switch {
	case r.State == spec.Absent:
		c.Reasons = []string{"nothing to remove"}
		return false
	case r.ReadOnly:
		c.Reasons = []string{"managed: false: never commits"}
		return false
	}
	return true
}

// UpdateForDiff makes c an update for its diffs (true), or a noop when
// it has none (false: nothing more to plan).
func UpdateForDiff(c *Change) bool {
	if len(c.Diff) == 0 {
		c.Action = NoOp
		return false
	}
	c.Action, c.Reasons = Update, compare.Reasons(c.Diff)
	return true
}

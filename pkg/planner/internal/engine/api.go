package engine

// This file fixes the exported surface that cmd is written against.

import (
	"context"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Action is what a Change does.
type Action rune

const (
	NoOp      Action = '='
	Create    Action = '+'
	Update    Action = '~'
	Replace   Action = '±' // rendered "-/+"
	Delete    Action = '-'
	Provision Action = '>'
	ApplyNet  Action = '!' // NetworkApply commit; JSON "apply"
)

// FieldDiff is one changed field (package compare, which makes them).
type FieldDiff = compare.FieldDiff

// Change is one resource's planned action.
type Change struct {
	Address string      `json:"address"`
	Action  Action      `json:"-"`
	Diff    []FieldDiff `json:"diff"`
	Reasons []string    `json:"reasons"`
	// Everything Apply needs, so that a saved plan applies without the spec.
	Resource *spec.Resource `json:"resource,omitempty"`
	Node     string         `json:"node,omitempty"`
	// State is what the change's kind keeps between plan and apply (a
	// guest's vmid, the node a replace moves it from); nil for most kinds.
	State any `json:"state,omitempty"`
	// Digest is the live config digest when planned ("" if none): an
	// update sends it, so PVE refuses to overwrite a concurrent edit.
	Digest string `json:"digest,omitempty"`
	// Fingerprint is pvectl's hash of the live object when planned, blind
	// to what pvectl itself writes (the description's [pvectl-…] block):
	// Verify refuses a saved plan whose object changed otherwise.
	Fingerprint string   `json:"fingerprint,omitempty"`
	DependsOn   []string `json:"dependsOn,omitempty"`
	// CreateFirst marks a replace that builds the new object before it
	// removes the old one (create before destroy).
	CreateFirst bool `json:"createFirst,omitempty"`
	// Params are the wire parameters an update sends (changed keys, live
	// property strings merged with the desired sub-keys, "delete").
	Params map[string]string `json:"params,omitempty"`
	// Redacted names the secret parameters a plan file left out; such a
	// change can only delete.
	Redacted []string `json:"redacted,omitempty"`
	// Kept marks a resource a destroy leaves alone because it is protected
	// or a protected resource needs it (Action is NoOp, Reasons say why).
	Kept bool `json:"kept,omitempty"`
	// KeptFor names the protected resource that needs a kept one ("" when
	// the resource is protected itself).
	KeptFor string `json:"keptFor,omitempty"`
	// Provision are the provisioning files the change runs once the guest
	// is up (provision.go); a change that does nothing else is a
	// Provision.
	Provision []ProvisionStep `json:"provision,omitempty"`
	// Snapshot is the snapshot apply takes of the change's guest right
	// before it (snapshot.go); nil: none.
	Snapshot *SnapshotStep `json:"snapshot,omitempty"`
	// Needs are the privileges the change's calls check (review.go):
	// apply checks the applying token against them before any write.
	Needs []Need `json:"needs,omitempty"`
	// Pruned marks the removal of an object its stack made that no
	// document names (Options.Prune): its Resource is made up from the
	// live object.
	Pruned bool `json:"pruned,omitempty"`
}

// Plan is the result of planning: a value, serialisable as a plan file.
type Plan struct {
	FormatVersion string    `json:"format_version"`
	Destroy       bool      `json:"destroy,omitempty"`
	Changes       []*Change `json:"changes"`
	// Endpoints records, per connection name the plan uses, the API root
	// (pve.Client.BaseURL, never a secret) it was made against, so that a
	// saved plan is not applied to another cluster (Verify).
	Endpoints map[string]string `json:"endpoints,omitempty"`
	// Connections records, per connection name the plan uses, its
	// settings without secrets (and where the secrets come from), so that
	// `apply FILE` needs neither the specs nor more than the secrets.
	Connections map[string]*SavedConnection `json:"connections,omitempty"`
	// PrivilegeWarnings are the privileges the plan's token lacks for its
	// changes (Options.ReviewPrivileges); empty otherwise.
	PrivilegeWarnings []PrivilegeWarning `json:"privilegeWarnings,omitempty"`
	// NotPlanned are the resources left out because their live state
	// cannot be known now (their node is down: degraded.go); apply fails
	// naming them after it applied the rest.
	NotPlanned []NotPlanned `json:"not_planned,omitempty"`
	// Orphans are the objects the plan's stack made that no document
	// names; Options.Prune plans their removal instead (owner.go).
	Orphans []Orphan `json:"orphans,omitempty"`
	// OwnedUnread says, per connection, why owned objects could not be
	// looked for: none of them is listed or pruned there.
	OwnedUnread []string `json:"ownedUnread,omitempty"`
}

// Summary counts changes per action.
type Summary struct {
	Create, Update, Replace, Delete, Provision, NoOp, Apply int
}

// Clients hands out the API client for a connection name ("" = the default).
type Clients interface {
	Client(connection string) (*pve.Client, error)
	// Connection returns the settings of a named connection ("" = the one
	// configured from PROXMOX_* variables / the profile); nil if unknown.
	Connection(name string) *spec.Connection
}

// Options tunes Plan.
type Options struct {
	Destroy bool     // plan the removal of every resource (reverse order)
	Targets []string // limit to these addresses and their dependencies (dependents for destroy)
	// Schema supplies parameter facts for semantic comparison; nil = schema.Default().
	Schema *schema.Table
	// BusyTimeout is how long PlanLive waits for objects a PVE task holds
	// (a locked guest, a guest still being created) before it refuses
	// them (0: it does not wait).
	BusyTimeout time.Duration
	// Waiting, when set, hears from PlanLive what it waits for and how
	// long it has waited.
	Waiting func(busy []*BusyError, waited time.Duration)
	// ReadConcurrency caps PlanLive's reads in flight per connection
	// (0: DefaultReadConcurrency).
	ReadConcurrency int
	// ReviewPrivileges plans changes whose calls the token may not make,
	// carrying the missing privileges as Plan.PrivilegeWarnings (a review
	// plan made with a read-only token) instead of failing them.
	ReviewPrivileges bool
	// Snapshot plans a snapshot of every guest right before a change
	// that touches its disks or reboots it (apply --snapshot), as a
	// guest's snapshotBeforeChange does for that guest (snapshot.go).
	Snapshot bool
	// Stack is the stack whose ownership marks the plan writes on what it
	// creates and whose owned objects it lists or prunes (owner.go); "":
	// each connection's stack, else DefaultStack.
	Stack string
	// Prune plans the removal of the stack's owned objects that no
	// document names (Plan.Orphans otherwise only lists them).
	Prune bool
	// DriveCache is the directory where plans keep what they showed of
	// each config drive version, so that a later plan can diff a new
	// version's content against it (drivecache.go); "": no cache.
	DriveCache string
}

// Hooks receive progress from Apply. All methods may be called concurrently.
type Hooks interface {
	PreApply(c *Change)
	PostApply(c *Change, err error)
	Skipped(c *Change, reason string)
	Message(c *Change, msg string) // e.g. "waiting for task UPID:…"
	// Output delivers a value that exists once, at apply time (a created
	// API token's secret): the CLI shows or writes it once, and it never
	// enters a plan file, a JSON line or a trace. sensitive marks secrets.
	Output(c *Change, name, value string, sensitive bool)
}

// TaskHooks is an optional extension of Hooks: a Hooks value that
// implements it hears about every PVE task of a change (waits beginning
// and ending, lock retries), e.g. to show progress or, on an interrupt,
// which tasks are still running.
type TaskHooks interface {
	Task(c *Change, ev pve.TaskEvent)
}

// PhaseHooks is an optional extension of Hooks: a Hooks value that
// implements it hears when a running change does something its action
// does not name (a VM being created is being provisioned), and when that
// ends, e.g. to say so in its still-running lines.
type PhaseHooks interface {
	Phase(c *Change, p Phase)
}

// Phase is what a running change is doing now. Name is a verb's -ing form
// ("provisioning"), Detail what it is at ("app.yaml", "reaching the
// guest"; may be ""). The zero Phase: the change is back to what its action says.
type Phase struct {
	Name, Detail string
}

// ApplyOptions tunes Apply.
type ApplyOptions struct {
	Parallelism int // default 4
	Hooks       Hooks
	// Stop, when closed, makes Apply start nothing new: the running
	// changes go on to their end and the others are skipped with
	// ReasonInterrupted. Cancelling Apply's ctx also stops waiting for the
	// running ones. nil: never.
	Stop <-chan struct{}
	// AllowForeignNetworkChanges lets a node's network commit take the
	// staged changes pvectl did not make that the plan showed. Without it
	// Apply refuses such a plan before it changes anything; changes that
	// appear after the plan are refused either way.
	AllowForeignNetworkChanges bool
	// AllowForeignSDNChanges lets the cluster's SDN commit (SdnApply)
	// take the pending SDN changes pvectl did not make that the plan
	// showed, as AllowForeignNetworkChanges does for a node's network.
	AllowForeignSDNChanges bool
	// AllowLockout applies firewall changes the plan warned may cut
	// pvectl's own access (CheckLockout); without it Apply refuses them.
	AllowLockout bool
	// Guard, when set, runs before each change starts (and before a late
	// step): an error fails the change unstarted. The run lock's Check is
	// one: a run that lost its lease stops before its next write.
	Guard func(ctx context.Context) error
	// KeepSnapshots is how many pvectl-… snapshots a guest keeps after
	// a change that took one (0: DefaultKeepSnapshots).
	KeepSnapshots int
	// RollbackOnFailure rolls a guest back to the snapshot taken before
	// its change when the change fails (otherwise the error says how).
	RollbackOnFailure bool
}

// ReasonInterrupted is the Skipped reason of a change that never started
// because the apply was interrupted.
const ReasonInterrupted = "not started (interrupted)"

// Result reports what Apply did and did not do.
type Result struct {
	Done    []string          // addresses applied
	Failed  map[string]error  // address → error
	Skipped map[string]string // address → reason it was not started (dependency failed, ReasonInterrupted)
	Kept    map[string]string // address → reason a destroy left it alone (protected)
	// Unknown are changes whose wait was stopped (ctx cancelled while they
	// ran): their PVE task may still be running, so they are neither done
	// nor failed; the next plan shows where they stand.
	Unknown map[string]error
	// Reverted are interface changes that were made and then undone when
	// their node's network commit failed and was reverted (revertOnFailure):
	// address → why. They are not in Done.
	Reverted map[string]string
	// Warnings are the warnings of tasks that succeeded with "WARNINGS: n"
	// (PVE counts them as done): address → one message per such task.
	Warnings map[string][]string
	// Interrupted is set when Stop was closed or ctx cancelled.
	Interrupted bool
}

// The entry points, in the order a run takes them: Observe reads, Build
// plans what was read (PlanLive does both and waits for busy objects),
// Verify checks a saved plan against PVE before Apply carries it out;
// Import writes documents for what exists.

// Observe reads the live state the Set needs in few calls: the token's
// permissions, /cluster/resources and /nodes once per connection, one
// guest list per node and guest type the Set has, one network list per
// node with network resources, the pool list once, one config per managed
// VM that exists. A resource whose reads the token may not make
// truthfully (PVE's lists hide what it may not audit) is not read: it
// fails with the privileges it lacks.
//
// It reads every resource of the Set, targets or not (the lists are per
// connection anyway, and the reads are what make a plan cheap to trust).
// What cannot be read for one resource, or for its whole connection, is
// kept in the Observed and reported by Build for the resources it plans:
// the error returned here is only ctx's.
func Observe(ctx context.Context, clients Clients, set *spec.Set) (*Observed, error) {
	return observeWith(ctx, clients, set, ObserveOptions{})
}

// ObserveWith is Observe with options.
func ObserveWith(ctx context.Context, clients Clients, set *spec.Set, opts ObserveOptions) (*Observed, error) {
	return observeWith(ctx, clients, set, opts)
}

// Build compares desired with observed and returns the Plan. (A function
// named Plan would collide with the type.)
func Build(ctx context.Context, set *spec.Set, obs *Observed, opts Options) (*Plan, error) {
	return buildPlan(ctx, set, obs, opts)
}

// PlanLive observes the live state and builds the plan (Observe, then
// Build). While the only problems are busy objects (BusyError), it waits
// for them and plans again, up to opts.BusyTimeout, telling
// opts.Waiting; what is still busy then is refused, saying how long it
// waited.
func PlanLive(ctx context.Context, clients Clients, set *spec.Set, opts Options) (*Plan, error) {
	return planLive(ctx, clients, set, opts)
}

// Verify re-reads live state for a saved plan and refuses it if a
// connection now points at another cluster than the plan was made against
// (Plan.Endpoints), or (error naming the resource) if any recorded config
// digest changed since it was made, an object to create now exists, or an
// object to update or delete is gone.
func Verify(ctx context.Context, clients Clients, plan *Plan) error {
	return verifyAll(ctx, clients, plan)
}

// Apply executes plan: every change after its dependencies, at most
// opts.Parallelism at once; a failure skips only its dependents.
// The error is non-nil when anything failed or was left undone; Result says
// what was and was not done.
//
// Stopping has two levels, as Terraform's interrupt: closing opts.Stop
// starts nothing new while the running changes go on to their end (their
// PVE tasks are waited for and reported by their real outcome);
// cancelling ctx also stops waiting for them (Result.Unknown).
func Apply(ctx context.Context, clients Clients, plan *Plan, opts ApplyOptions) (*Result, error) {
	return applyAll(ctx, clients, plan, opts)
}

// Import reads the selected live objects once and makes them documents,
// in dependency order: the lists every kind needs at once, the objects'
// own reads (configs) a few at a time, then the documents, which it
// plans against what it read (check). It returns an *ImportError when a
// selection is wrong (Invalid: before any API call) or finds nothing; an
// object that cannot be read, or whose document does not plan clean, is
// only left out (ImportResult.Problems).
func Import(ctx context.Context, clients Clients, opts ImportOptions) (*ImportResult, error) {
	return importAll(ctx, clients, opts)
}

// ProvisionStep is one provisioning file a change will run, and why
// (the plan's `provision` list; JSON "provision").
type ProvisionStep struct {
	File   string `json:"file"`   // as the spec names it
	Reason string `json:"reason"` // new | changed | forced | after an earlier change
	Hash   string `json:"hash"`   // the file's hash now
	// Recorded is the hash the description holds ("" when new).
	Recorded string `json:"recorded,omitempty"`
}

// SnapshotStep is the snapshot apply takes of a change's guest first.
type SnapshotStep struct {
	Type pve.GuestType `json:"type"`
	VMID int           `json:"vmid"`
	Node string        `json:"node"`
	// Why names what makes the change risky ("it changes scsi0").
	Why string `json:"why"`
}

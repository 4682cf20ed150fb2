package planner

// The engine's API as the CLI and the other packages use it: the entry
// points (Observe, Build, PlanLive, Apply, Verify, Import) and the types
// of plans and their changes. The engine (internal/engine) does the work;
// the kinds of this package are what it works on (registry.go).

import (
	"context"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
	"github.com/pvectl/pvectl/pkg/spec"
)

type (
	// Action is what a Change does.
	Action = engine.Action
	// ApplyOptions tunes Apply.
	ApplyOptions = engine.ApplyOptions
	// BusyError is a resource whose live object a PVE task holds (a guest
	// locked by a backup, or one that may still be being created): a plan
	// that judged it now would be wrong — "absent" for a guest that is being
	// created is a second guest — so Build refuses it, and PlanLive waits for
	// it first.
	BusyError = engine.BusyError
	// Change is one resource's planned action.
	Change = engine.Change
	// Clients hands out the API client for a connection name ("" = the default).
	Clients = engine.Clients
	// FieldDiff is one changed field (package compare, which makes them).
	FieldDiff = engine.FieldDiff
	// ForeignAllowed says which staging scopes' commits may take staged
	// changes pvectl did not make (the plan showed them): a node's network
	// (--allow-foreign-network-changes), the cluster's SDN
	// (--allow-foreign-sdn-changes).
	ForeignAllowed = engine.ForeignAllowed
	// Grant is one ACL entry that fixes a group of warnings.
	Grant = engine.Grant
	// Hooks receive progress from Apply. All methods may be called concurrently.
	Hooks = engine.Hooks
	// ImportError is an import that cannot be made at all: the selection
	// names what does not exist (or what the token may not read). One object
	// that cannot be read or does not plan clean is not one: it is in
	// ImportResult.Problems.
	ImportError = engine.ImportError
	// ImportOptions selects what Import reads.
	ImportOptions = engine.ImportOptions
	// ImportResult is what Import read.
	ImportResult = engine.ImportResult
	// NotPlanned is a resource the plan leaves out because its live state
	// cannot be known now.
	NotPlanned = engine.NotPlanned
	// Options tunes Plan.
	Options = engine.Options
	// Orphan is an object that its stack made and no document names.
	Orphan = engine.Orphan
	// Phase is what a running change is doing now. Name is a verb's -ing form
	// ("provisioning"), Detail what it is at ("app.yaml", "reaching the
	// guest"; may be ""). The zero Phase: the change is back to what its action says.
	Phase = engine.Phase
	// PhaseHooks is an optional extension of Hooks: a Hooks value that
	// implements it hears when a running change does something its action
	// does not name (a VM being created is being provisioned), and when that
	// ends, e.g. to say so in its still-running lines.
	PhaseHooks = engine.PhaseHooks
	// Plan is the result of planning: a value, serialisable as a plan file.
	Plan = engine.Plan
	// ProvisionStep is one provisioning file a change will run, and why
	// (the plan's `provision` list; JSON "provision").
	ProvisionStep = engine.ProvisionStep
	// ReplaceError is a replace that removed the old object and then failed
	// to create the new one: the object is gone until a rerun makes it.
	ReplaceError = engine.ReplaceError
	// Result reports what Apply did and did not do.
	Result = engine.Result
	// SavedConnection is what a plan file keeps of a connection so that
	// `apply FILE` can connect with only the secrets in the environment:
	// every setting but the secrets, and for those the names of the
	// environment variables that held them when the plan was made.
	SavedConnection = engine.SavedConnection
	// Summary counts changes per action.
	Summary = engine.Summary
	// TaskHooks is an optional extension of Hooks: a Hooks value that
	// implements it hears about every PVE task of a change (waits beginning
	// and ending, lock retries), e.g. to show progress or, on an interrupt,
	// which tasks are still running.
	TaskHooks = engine.TaskHooks
)

// The engine's constants the CLI uses: the actions of a change, the
// defaults, the plan file's format version.
const (
	ApplyNet               = engine.ApplyNet
	Create                 = engine.Create
	DefaultReadConcurrency = engine.DefaultReadConcurrency
	DefaultStack           = engine.DefaultStack
	Delete                 = engine.Delete
	FormatVersion          = engine.FormatVersion
	NoOp                   = engine.NoOp
	Provision              = engine.Provision
	ReasonInterrupted      = engine.ReasonInterrupted
	Replace                = engine.Replace
	Update                 = engine.Update
)

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
	return engine.Apply(ctx, clients, plan, opts)
}

// CheckForeign refuses a plan whose commits would make live staged
// changes that pvectl did not make (a node's network, the cluster's SDN),
// unless they are allowed. Apply checks it before anything runs (staging
// this plan's own changes and then refusing the commit would leave them
// half done); the CLI asks first, before its confirmation question.
func CheckForeign(plan *Plan, allow ForeignAllowed) error {
	return engine.CheckForeign(plan, allow)
}

// CheckLockout refuses a plan whose firewall changes would cut pvectl's
// own access, unless allow (--allow-lockout).
func CheckLockout(plan *Plan, allow bool) error {
	return engine.CheckLockout(plan, allow)
}

// CheckPrivileges checks, before apply writes anything, that each
// connection's token holds every privilege the plan's changes need (the
// needs the plan recorded): a saved plan made with a read-only token, or
// by another token, is refused here rather than half-applied.
func CheckPrivileges(ctx context.Context, clients Clients, plan *Plan) error {
	return engine.CheckPrivileges(ctx, clients, plan)
}

// Grants folds warnings into the fewest grants: per token and path
// family, the union of the privileges, as the smallest built-in role that
// holds them all. Root-only needs come last, one each.
func Grants(ws []engine.PrivilegeWarning) []Grant {
	return engine.Grants(ws)
}

// Import reads the selected live objects once and makes them documents,
// in dependency order: the lists every kind needs at once, the objects'
// own reads (configs) a few at a time, then the documents, which it
// plans against what it read (check). It returns an *ImportError when a
// selection is wrong (Invalid: before any API call) or finds nothing; an
// object that cannot be read, or whose document does not plan clean, is
// only left out (ImportResult.Problems).
func Import(ctx context.Context, clients Clients, opts ImportOptions) (*ImportResult, error) {
	return engine.Import(ctx, clients, opts)
}

// ImportableKinds lists the kinds Import can write, sorted.
func ImportableKinds() []string {
	return engine.ImportableKinds()
}

// PlanLive observes the live state and builds the plan (Observe, then
// Build). While the only problems are busy objects (BusyError), it waits
// for them and plans again, up to opts.BusyTimeout, telling
// opts.Waiting; what is still busy then is refused, saying how long it
// waited.
func PlanLive(ctx context.Context, clients Clients, set *spec.Set, opts Options) (*Plan, error) {
	return engine.PlanLive(ctx, clients, set, opts)
}

// ReadFile loads a plan saved by WriteFile.
func ReadFile(path string) (*Plan, error) {
	return engine.ReadFile(path)
}

// Verify re-reads live state for a saved plan and refuses it if a
// connection now points at another cluster than the plan was made against
// (Plan.Endpoints), or (error naming the resource) if any recorded config
// digest changed since it was made, an object to create now exists, or an
// object to update or delete is gone.
func Verify(ctx context.Context, clients Clients, plan *Plan) error {
	return engine.Verify(ctx, clients, plan)
}

// WriteFile saves p so that `apply FILE` can carry it out later. Secret
// values (secret parameters and own keys, the keys a document declares
// secret) are left out: one read from a ${VAR} is kept as a reference
// (the variable's name and a keyed hash), which ReadFile resolves from
// the environment again; any other is listed in the change's Redacted.
func WriteFile(path string, p *Plan) error {
	return engine.WriteFile(path, p)
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/internal/dag"
	"github.com/pvectl/pvectl/pkg/pve"
)

// DefaultParallelism caps concurrent changes when ApplyOptions leaves it 0.
const DefaultParallelism = 4

// applyAll is Apply (api.go).
func applyAll(ctx context.Context, clients Clients, plan *Plan, opts ApplyOptions) (*Result, error) {
	if err := CheckPlan(plan); err != nil {
		return nil, err
	}
	hooks := opts.Hooks
	if hooks == nil {
		hooks = NopHooks{}
	}
	if err := CheckForeign(plan, opts.Foreign()); err != nil {
		return nil, err
	}
	if err := CheckLockout(plan, opts.AllowLockout); err != nil {
		return nil, err
	}
	alloc := map[string]*vmids{}
	for conn, pinned := range reservedVMIDs(plan) {
		alloc[conn] = NewVMIDs(pinned)
	}
	for _, c := range plan.Changes {
		if c.Resource != nil && alloc[c.Resource.Connection] == nil {
			alloc[c.Resource.Connection] = NewVMIDs(nil)
		}
	}
	warnings := &warnLog{}
	outputs := &appliedOutputs{}
	locks := &heldLocks{}
	allow := func(c *Change) bool { return opts.Foreign().allows(TraitsOf(resourceKind(c)).Commits) }
	run := func(ctx context.Context, c *Change) error {
		if err := guard(ctx, opts.Guard); err != nil {
			return err
		}
		// The values its references name are known now: its
		// dependencies are done (outputs.go).
		if err := outputs.resolve(c); err != nil {
			return err
		}
		x := &Execution{Hooks: hooks, Change: c, Plan: plan, AllowForeign: allow(c), warnings: warnings, Outputs: outputs, Locks: locks}
		if c.Resource != nil {
			x.vmids = alloc[c.Resource.Connection]
		}
		err := wrapApply(ctx, clients, x, opts)
		if err == nil {
			outputs.record(c)
		}
		return err
	}
	late := func(c *Change) func(context.Context) error {
		if c.Resource == nil {
			return nil
		}
		var part func(ctx context.Context, x *Execution, c *Change) error
		if lr, ok := Kinds[c.Resource.Kind].(lateRemover); ok && lr.RemovesLate(c) {
			part = lr.RemoveLate
		} else if lw, ok := Kinds[c.Resource.Kind].(lateWriter); ok && lw.WritesLate(c) {
			part = lw.WriteLate
		}
		if part == nil {
			return nil
		}
		return func(ctx context.Context) error {
			if err := guard(ctx, opts.Guard); err != nil {
				return err
			}
			x := &Execution{Hooks: hooks, Change: c, Plan: plan, AllowForeign: allow(c), warnings: warnings, Locks: locks}
			return withExecution(ctx, clients, x, func(ctx context.Context, x *Execution) error {
				return part(ctx, x, c)
			})
		}
	}
	res := WalkPhases(ctx, opts.Stop, plan.Changes, opts.Parallelism, hooks, run, late)
	res.Warnings = warnings.all()
	res.settleReverts()
	// Locks a change took for the changes after it (SDN's) go back on
	// every path, failures and interrupts included.
	if err := locks.releaseAll(ctx); err != nil {
		return res, errors.Join(res.Err(), err)
	}
	return res, res.Err()
}

// guard runs g, if any, before a change writes.
func guard(ctx context.Context, g func(context.Context) error) error {
	if g == nil {
		return nil
	}
	return g(ctx)
}

// CheckPlan refuses plans Apply cannot walk safely: unknown versions, and
// dependencies that do not come first (a hand-edited file could otherwise
// make the walk wait forever).
func CheckPlan(plan *Plan) error {
	if plan == nil {
		return errors.New("apply: no plan")
	}
	if plan.FormatVersion != FormatVersion {
		return fmt.Errorf("apply: plan format version %q is not supported (want %q)", plan.FormatVersion, FormatVersion)
	}
	pos := map[string]int{}
	for i, c := range plan.Changes {
		if _, dup := pos[c.Address]; dup {
			return fmt.Errorf("apply: plan lists %s twice", c.Address)
		}
		pos[c.Address] = i
	}
	for i, c := range plan.Changes {
		for _, d := range c.DependsOn {
			if j, ok := pos[d]; ok && j >= i {
				return fmt.Errorf("apply: plan is not in dependency order (%s before its dependency %s)", c.Address, d)
			}
		}
	}
	return nil
}

// ForeignAllowed says which staging scopes' commits may take staged
// changes pvectl did not make (the plan showed them): a node's network
// (--allow-foreign-network-changes), the cluster's SDN
// (--allow-foreign-sdn-changes).
type ForeignAllowed struct{ Network, SDN bool }

// sdnScope is the staging scope of the cluster's SDN configuration.
const SDNScope = "cluster/sdn"

// allows says whether a commit of scope (a kind's Commits) may take
// foreign staged changes.
func (a ForeignAllowed) allows(scope string) bool {
	if scope == SDNScope {
		return a.SDN
	}
	return a.Network
}

// foreignFlag names the flag that lets a commit of scope take them.
func foreignFlag(scope string) string {
	if scope == SDNScope {
		return "--allow-foreign-sdn-changes"
	}
	return "--allow-foreign-network-changes"
}

func (o ApplyOptions) Foreign() ForeignAllowed {
	return ForeignAllowed{Network: o.AllowForeignNetworkChanges, SDN: o.AllowForeignSDNChanges}
}

// CheckForeign refuses a plan whose commits would make live staged
// changes that pvectl did not make (a node's network, the cluster's SDN),
// unless they are allowed. Apply checks it before anything runs (staging
// this plan's own changes and then refusing the commit would leave them
// half done); the CLI asks first, before its confirmation question.
func CheckForeign(plan *Plan, allow ForeignAllowed) error {
	var msgs []string
	var flags []string
	for _, c := range plan.Changes {
		nc, ok := Kinds[resourceKind(c)].(Committer)
		if !ok || c.Action == NoOp {
			continue
		}
		scope := TraitsOf(resourceKind(c)).Commits
		if allow.allows(scope) {
			continue
		}
		if f := nc.Foreign(c); f != "" {
			msgs = append(msgs, c.Address+": "+f)
			if fl := foreignFlag(scope); !slices.Contains(flags, fl) {
				flags = append(flags, fl)
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("refusing to commit staged changes that pvectl did not make (the plan lists them):\n  %s\nReview them; then revert them there, or apply with %s to commit them with this plan's changes. Nothing was changed",
		strings.Join(msgs, "\n  "), strings.Join(flags, " and "))
}

func resourceKind(c *Change) string {
	if c.Resource == nil {
		return ""
	}
	return c.Resource.Kind
}

// reservedVMIDs collects, per connection, the vmids the plan's VMs are
// pinned to, so that a VM without a vmid does not take one of them first.
func reservedVMIDs(plan *Plan) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for _, c := range plan.Changes {
		if c.Resource == nil {
			continue
		}
		id := TraitsOf(c.Resource.Kind).PinnedVMIDOf(c.Resource)
		if id == 0 {
			continue
		}
		conn := c.Resource.Connection
		if out[conn] == nil {
			out[conn] = map[int]bool{}
		}
		out[conn][id] = true
	}
	return out
}

func ApplyChange(ctx context.Context, clients Clients, x *Execution) error {
	c := x.Change
	if c.Resource == nil {
		return errors.New("the plan holds no resource data for this change")
	}
	if len(c.Redacted) > 0 && c.Action != Delete {
		return fmt.Errorf("the plan file omits secret parameter(s) %s: apply from the specs (-f) instead", strings.Join(c.Redacted, ", "))
	}
	k, err := KindOf(c.Resource.Kind)
	if err != nil {
		return err
	}
	return withExecution(ctx, clients, x, func(ctx context.Context, x *Execution) error {
		return apply(ctx, k, x, c)
	})
}

// withExecution runs fn with the change's client and its task events
// reported to hooks.
func withExecution(ctx context.Context, clients Clients, x *Execution, fn func(context.Context, *Execution) error) error {
	c, hooks := x.Change, x.Hooks
	cl, err := clients.Client(c.Resource.Connection)
	if err != nil {
		return err
	}
	th, _ := hooks.(TaskHooks)
	ctx = pve.WithTaskObserver(ctx, func(ev pve.TaskEvent) {
		if ev.Warned() {
			msg := TaskWarningMessage(*ev.Status, ev.Warnings)
			hooks.Message(c, msg)
			x.warnings.add(c.Address, msg)
		}
		if th != nil {
			th.Task(c, ev)
		}
	})
	x.Client = cl
	if x.Conn == nil && clients != nil {
		x.Conn = clients.Connection(c.Resource.Connection)
	}
	return fn(ctx, x)
}

// TaskWarningMessage says that a task of the change succeeded with
// complaints: PVE counts it as done, but the user should read them.
func TaskWarningMessage(st pve.TaskStatus, warnings []string) string {
	if len(warnings) == 0 {
		return fmt.Sprintf("task %s finished with %s (see its log)", st.UPID, st.ExitStatus)
	}
	return fmt.Sprintf("task %s finished with warnings: %s", st.UPID, strings.Join(warnings, "; "))
}

// Walk is walkPhases without late steps.
func Walk(ctx context.Context, stop <-chan struct{}, changes []*Change, parallelism int, hooks Hooks, run func(context.Context, *Change) error) *Result {
	return WalkPhases(ctx, stop, changes, parallelism, hooks, run, nil)
}

// WalkPhases runs every change once its dependencies are ready (the
// generic walk of internal/dag): noops complete at once, real work holds
// one of parallelism slots, and a failure skips its transitive
// dependents. A closed stop starts nothing new (running changes finish);
// a cancelled ctx also ends the running changes' waits, whose outcome is
// then unknown.
//
// late, when it gives a step for a change, splits the change in two, as
// OpenTofu destroys a deposed object after its dependents were updated:
// the dependents start after run, and the late step runs once they all
// finished without a failure (otherwise it is left out, and the next plan
// shows it again). PostApply comes after the late step.
func WalkPhases(ctx context.Context, stop <-chan struct{}, changes []*Change, parallelism int, hooks Hooks,
	run func(context.Context, *Change) error, late func(*Change) func(context.Context) error) *Result {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	res := &Result{Failed: map[string]error{}, Skipped: map[string]string{}, Kept: map[string]string{}, Unknown: map[string]error{},
		Reverted: map[string]string{}, Warnings: map[string][]string{}}
	var mu sync.Mutex
	byAddr := make(map[string]*Change, len(changes))
	steps := make([]dag.Step, 0, len(changes))
	for _, c := range changes {
		byAddr[c.Address] = c
		steps = append(steps, dag.Step{ID: c.Address, Deps: c.DependsOn, Idle: c.Action == NoOp})
	}
	w := &dag.Walker{
		Parallelism: parallelism,
		Stop:        stop,
		Run:         func(ctx context.Context, addr string) error { return run(ctx, byAddr[addr]) },
		Start:       func(addr string) { hooks.PreApply(byAddr[addr]) },
		Idle: func(addr string) {
			if c := byAddr[addr]; c.Kept {
				reason := strings.Join(c.Reasons, "; ")
				mu.Lock()
				res.Kept[addr] = reason
				mu.Unlock()
				hooks.Skipped(c, reason)
			}
		},
		Skipped: func(addr, cause string) {
			reason := "dependency " + cause + " failed"
			mu.Lock()
			if cause == "" {
				reason, res.Interrupted = ReasonInterrupted, true
			}
			res.Skipped[addr] = reason
			mu.Unlock()
			hooks.Skipped(byAddr[addr], reason)
		},
		Held: func(addr, why string) {
			if why == "interrupted" {
				mu.Lock()
				res.Interrupted = true
				mu.Unlock()
			}
			hooks.Message(byAddr[addr], heldMessage(byAddr[addr])+why)
		},
		Done: func(addr string, err error) bool {
			hooks.PostApply(byAddr[addr], err)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && ctx.Err() != nil && !isAnswer(err):
				// Waiting was stopped: PVE may still be carrying it out.
				res.Unknown[addr] = err
				res.Interrupted = true
				return false
			case err != nil:
				res.Failed[addr] = err
				return true
			}
			return false
		},
	}
	if late != nil {
		w.Late = func(addr string) func(context.Context) error { return late(byAddr[addr]) }
	}
	succeeded, stopped := w.Walk(ctx, steps)
	if stopped {
		res.Interrupted = true
	}
	for _, c := range changes {
		if succeeded[c.Address] {
			res.Done = append(res.Done, c.Address)
		}
	}
	return res
}

// isAnswer reports whether err is PVE's own verdict (a task that failed,
// a refused request) rather than a wait or request cut short.
func isAnswer(err error) bool {
	var te *pve.TaskError
	var ae *pve.APIError
	return errors.As(err, &te) || errors.As(err, &ae)
}

// Err summarises a Result: nil when nothing failed or was left undone.
func (r *Result) Err() error {
	if len(r.Failed) == 0 && len(r.Unknown) == 0 {
		interrupted := 0
		for _, why := range r.Skipped {
			if why == ReasonInterrupted {
				interrupted++
			}
		}
		if interrupted == 0 && !r.Interrupted {
			return nil
		}
		return fmt.Errorf("apply interrupted: %d change(s) not started", interrupted)
	}
	msgs := make([]string, 0, len(r.Failed)+len(r.Unknown))
	for _, a := range slices.Sorted(maps.Keys(r.Failed)) {
		msgs = append(msgs, a+": "+r.Failed[a].Error())
	}
	for _, a := range slices.Sorted(maps.Keys(r.Unknown)) {
		msgs = append(msgs, a+": outcome unknown: "+r.Unknown[a].Error())
	}
	sort.Strings(msgs)
	unknown := ""
	if len(r.Unknown) > 0 {
		unknown = fmt.Sprintf("%d outcome unknown, ", len(r.Unknown))
	}
	return fmt.Errorf("apply: %d failed, %s%d skipped, %d done\n%s", len(r.Failed), unknown, len(r.Skipped), len(r.Done), strings.Join(msgs, "\n"))
}

type NopHooks struct{}

func (NopHooks) PreApply(*Change)                     {}
func (NopHooks) PostApply(*Change, error)             {}
func (NopHooks) Skipped(*Change, string)              {}
func (NopHooks) Message(*Change, string)              {}
func (NopHooks) Output(*Change, string, string, bool) {}

// heldMessage says what a change whose late part was left out did not do.
func heldMessage(c *Change) string {
	if c != nil && c.Resource != nil {
		if _, ok := Kinds[c.Resource.Kind].(lateWriter); ok {
			return "left its rules and options unwritten (they wait for its dependents): "
		}
	}
	return "kept what it removes after its dependents: "
}

// lockoutGuarded kinds can plan a change that cuts pvectl's access.
type lockoutGuarded interface{ Lockout(c *Change) string }

// CheckLockout refuses a plan whose firewall changes would cut pvectl's
// own access, unless allow (--allow-lockout).
func CheckLockout(plan *Plan, allow bool) error {
	if allow {
		return nil
	}
	var msgs []string
	for _, c := range plan.Changes {
		if g, ok := Kinds[resourceKind(c)].(lockoutGuarded); ok {
			if m := g.Lockout(c); m != "" {
				msgs = append(msgs, c.Address+": "+m)
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New("refusing to apply a firewall that may lock pvectl out:\n  " + strings.Join(msgs, "\n  ") + "\nNothing was changed")
}

// wrapApply applies x's change inside the applyWrappers, the first
// outermost.
func wrapApply(ctx context.Context, clients Clients, x *Execution, opts ApplyOptions) error {
	apply := func() error { return ApplyChange(ctx, clients, x) }
	for i := len(ApplyWrappers) - 1; i >= 0; i-- {
		w, inner := ApplyWrappers[i], apply
		apply = func() error { return w(ctx, clients, x, opts, inner) }
	}
	return apply()
}

package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/pkg/pve"
)

// DefaultParallelism caps concurrent changes when ApplyOptions leaves it 0.
const DefaultParallelism = 4

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
	if err := checkPlan(plan); err != nil {
		return nil, err
	}
	hooks := opts.Hooks
	if hooks == nil {
		hooks = nopHooks{}
	}
	reserved := reservedVMIDs(plan)
	run := func(ctx context.Context, c *Change) error {
		return applyChange(ctx, clients, hooks, c, reserved[c.Resource.Connection])
	}
	res := walk(ctx, opts.Stop, plan.Changes, opts.Parallelism, hooks, run)
	return res, res.err()
}

// checkPlan refuses plans Apply cannot walk safely: unknown versions, and
// dependencies that do not come first (a hand-edited file could otherwise
// make the walk wait forever).
func checkPlan(plan *Plan) error {
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

// reservedVMIDs collects, per connection, the vmids the plan's VMs are
// pinned to, so that a VM without a vmid does not take one of them first.
func reservedVMIDs(plan *Plan) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for _, c := range plan.Changes {
		if c.Resource == nil {
			continue
		}
		vc, ok := kinds[c.Resource.Kind].(vmidClaimer)
		if !ok {
			continue
		}
		id := vc.pinnedVMID(c.Resource)
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

func applyChange(ctx context.Context, clients Clients, hooks Hooks, c *Change, reserved map[int]bool) error {
	if c.Resource == nil {
		return errors.New("the plan holds no resource data for this change")
	}
	if len(c.Redacted) > 0 && c.Action != Delete {
		return fmt.Errorf("the plan file omits secret parameter(s) %s: apply from the specs (-f) instead", strings.Join(c.Redacted, ", "))
	}
	k, err := kindOf(c.Resource.Kind)
	if err != nil {
		return err
	}
	cl, err := clients.Client(c.Resource.Connection)
	if err != nil {
		return err
	}
	th, _ := hooks.(TaskHooks)
	ctx = pve.WithTaskObserver(ctx, func(ev pve.TaskEvent) {
		if ev.Warned() {
			hooks.Message(c, taskWarningMessage(*ev.Status, ev.Warnings))
		}
		if th != nil {
			th.Task(c, ev)
		}
	})
	return apply(ctx, k, &execution{client: cl, hooks: hooks, change: c, reserved: reserved}, c)
}

// taskWarningMessage says that a task of the change succeeded with
// complaints: PVE counts it as done, but the user should read them.
func taskWarningMessage(st pve.TaskStatus, warnings []string) string {
	if len(warnings) == 0 {
		return fmt.Sprintf("task %s finished with %s (see its log)", st.UPID, st.ExitStatus)
	}
	return fmt.Sprintf("task %s finished with warnings: %s", st.UPID, strings.Join(warnings, "; "))
}

// vertex is one change during a walk.
type vertex struct {
	c     *Change
	done  chan struct{}
	cause string // set when this change failed or was skipped for a failure: the failed address
}

// walk runs every change once its dependencies are finished (the DAG walk
// of OpenTofu's internal/dag): noops complete at once, real work holds one
// of parallelism slots, and a failure skips its transitive dependents.
// A closed stop starts nothing new (running changes finish); a cancelled
// ctx also ends the running changes' waits, whose outcome is then unknown.
func walk(ctx context.Context, stop <-chan struct{}, changes []*Change, parallelism int, hooks Hooks, run func(context.Context, *Change) error) *Result {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	res := &Result{Failed: map[string]error{}, Skipped: map[string]string{}, Kept: map[string]string{}, Unknown: map[string]error{}}
	var mu sync.Mutex
	done := map[string]bool{}
	vs := map[string]*vertex{}
	for _, c := range changes {
		vs[c.Address] = &vertex{c: c, done: make(chan struct{})}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return ctx.Err() != nil
		}
	}
	skip := func(v *vertex, reason string) {
		mu.Lock()
		res.Skipped[v.c.Address] = reason
		if reason == ReasonInterrupted {
			res.Interrupted = true
		}
		mu.Unlock()
		hooks.Skipped(v.c, reason)
	}
	keep := func(v *vertex) {
		reason := strings.Join(v.c.Reasons, "; ")
		mu.Lock()
		res.Kept[v.c.Address] = reason
		mu.Unlock()
		hooks.Skipped(v.c, reason)
	}
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for _, c := range changes {
		v := vs[c.Address]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(v.done)
			for _, d := range v.c.DependsOn {
				dv := vs[d]
				if dv == nil {
					continue
				}
				<-dv.done
				if dv.cause != "" && v.cause == "" {
					v.cause = dv.cause
				}
			}
			if v.cause != "" {
				skip(v, "dependency "+v.cause+" failed")
				return
			}
			if v.c.Action == NoOp { // not work: nothing to start or stop
				if v.c.Kept {
					keep(v)
				}
				return
			}
			if stopped() {
				skip(v, ReasonInterrupted)
				return
			}
			select {
			case sem <- struct{}{}:
			case <-stop:
				skip(v, ReasonInterrupted)
				return
			case <-ctx.Done():
				skip(v, ReasonInterrupted)
				return
			}
			defer func() { <-sem }()
			if stopped() {
				skip(v, ReasonInterrupted)
				return
			}
			hooks.PreApply(v.c)
			err := run(ctx, v.c)
			hooks.PostApply(v.c, err)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && ctx.Err() != nil && !isAnswer(err):
				// Waiting was stopped: PVE may still be carrying it out.
				res.Unknown[v.c.Address] = err
				res.Interrupted = true
			case err != nil:
				v.cause = v.c.Address
				res.Failed[v.c.Address] = err
			default:
				done[v.c.Address] = true
			}
		}()
	}
	wg.Wait()
	if stopped() {
		res.Interrupted = true
	}
	for _, c := range changes {
		if done[c.Address] {
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

// err summarises a Result: nil when nothing failed or was left undone.
func (r *Result) err() error {
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

type nopHooks struct{}

func (nopHooks) PreApply(*Change)                     {}
func (nopHooks) PostApply(*Change, error)             {}
func (nopHooks) Skipped(*Change, string)              {}
func (nopHooks) Message(*Change, string)              {}
func (nopHooks) Output(*Change, string, string, bool) {}

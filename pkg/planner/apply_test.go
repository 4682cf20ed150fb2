package planner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
)

// recHooks records what Apply reports.
type recHooks struct {
	mu       sync.Mutex
	pre      []string
	post     []string
	skipped  []string
	messages []string
	outputs  []output
	phases   []string // "address: name/detail", "address: -" for the zero Phase
}

// output is one value handed to Hooks.Output.
type output struct {
	addr, name, value string
	sensitive         bool
}

func (h *recHooks) PreApply(c *engine.Change) {
	h.mu.Lock()
	h.pre = append(h.pre, c.Address)
	h.mu.Unlock()
}
func (h *recHooks) PostApply(c *engine.Change, err error) {
	h.mu.Lock()
	h.post = append(h.post, fmt.Sprintf("%s err=%v", c.Address, err))
	h.mu.Unlock()
}
func (h *recHooks) Skipped(c *engine.Change, reason string) {
	h.mu.Lock()
	h.skipped = append(h.skipped, c.Address+": "+reason)
	h.mu.Unlock()
}
func (h *recHooks) Output(c *engine.Change, name, value string, sensitive bool) {
	h.mu.Lock()
	h.outputs = append(h.outputs, output{c.Address, name, value, sensitive})
	h.mu.Unlock()
}

func (h *recHooks) Message(c *engine.Change, msg string) {
	h.mu.Lock()
	h.messages = append(h.messages, c.Address+": "+msg)
	h.mu.Unlock()
}

func (h *recHooks) Phase(c *engine.Change, p engine.Phase) {
	h.mu.Lock()
	s := c.Address + ": " + p.Name + "/" + p.Detail
	if p == (engine.Phase{}) {
		s = c.Address + ": -"
	}
	h.phases = append(h.phases, s)
	h.mu.Unlock()
}

func ch(addr string, a engine.Action, deps ...string) *engine.Change {
	return &engine.Change{Address: addr, Action: a, DependsOn: deps, Diff: []engine.FieldDiff{}, Reasons: []string{}}
}

func TestWalkFailureSkipsDependentsOnly(t *testing.T) {
	changes := []*engine.Change{
		ch("A/a", engine.Create),
		ch("B/b", engine.Update, "A/a"),
		ch("C/c", engine.Create, "B/b"),
		ch("D/d", engine.Create),
		ch("E/e", engine.Create, "D/d"),
		ch("F/f", engine.NoOp, "D/d"),
	}
	var mu sync.Mutex
	var ran []string
	run := func(ctx context.Context, c *engine.Change) error {
		mu.Lock()
		ran = append(ran, c.Address)
		mu.Unlock()
		if c.Address == "A/a" {
			return errors.New("boom")
		}
		return nil
	}
	h := &recHooks{}
	res := engine.Walk(context.Background(), nil, changes, 2, h, run)
	sort.Strings(ran)
	if diff := cmp.Diff([]string{"A/a", "D/d", "E/e"}, ran); diff != "" {
		t.Errorf("ran: got %v (-want +got):\n%s", ran, diff)
	}
	if diff := cmp.Diff([]string{"D/d", "E/e"}, res.Done); diff != "" {
		t.Errorf("Done: got %v (-want +got):\n%s", res.Done, diff)
	}
	wantSkipped := map[string]string{"B/b": "dependency A/a failed", "C/c": "dependency A/a failed"}
	if diff := cmp.Diff(wantSkipped, res.Skipped); diff != "" {
		t.Errorf("Skipped: (-want +got):\n%s", diff)
	}
	if len(res.Failed) != 1 || res.Failed["A/a"] == nil {
		t.Errorf("Failed: got %v want only A/a", res.Failed)
	}
	err := res.Err()
	if err == nil || !strings.Contains(err.Error(), "1 failed, 2 skipped, 2 done") || !strings.Contains(err.Error(), "A/a: boom") {
		t.Errorf("err: got %v want a summary naming A/a", err)
	}
}

func TestWalkParallelismCap(t *testing.T) {
	const n, par = 10, 3
	var changes []*engine.Change
	for i := range n {
		changes = append(changes, ch(fmt.Sprintf("Pool/p%02d", i), engine.Create))
	}
	var cur, peak atomic.Int32
	entered := make(chan struct{})
	release := make(chan struct{})
	run := func(ctx context.Context, c *engine.Change) error {
		v := cur.Add(1)
		for {
			p := peak.Load()
			if v <= p || peak.CompareAndSwap(p, v) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		cur.Add(-1)
		return nil
	}
	done := make(chan *engine.Result)
	go func() { done <- engine.Walk(context.Background(), nil, changes, par, engine.NopHooks{}, run) }()
	// Fill every slot, then trade one release for one entry: if the cap
	// leaked, a fourth run would have entered and raised the peak.
	for range par {
		<-entered
	}
	for range n - par {
		release <- struct{}{}
		<-entered
	}
	for range par {
		release <- struct{}{}
	}
	res := <-done
	if got := peak.Load(); got != par {
		t.Errorf("peak concurrency: got %d want %d", got, par)
	}
	if len(res.Done) != n {
		t.Errorf("Done: got %d want %d", len(res.Done), n)
	}
}

func TestWalkNoopsDoNotTakeSlots(t *testing.T) {
	// With one slot held by a blocked change, noops elsewhere still finish.
	changes := []*engine.Change{ch("A/a", engine.Create), ch("B/b", engine.NoOp), ch("C/c", engine.NoOp, "B/b")}
	release := make(chan struct{})
	var ran atomic.Int32
	run := func(ctx context.Context, c *engine.Change) error {
		ran.Add(1)
		<-release
		return nil
	}
	done := make(chan *engine.Result)
	go func() { done <- engine.Walk(context.Background(), nil, changes, 1, engine.NopHooks{}, run) }()
	close(release)
	res := <-done
	if got := ran.Load(); got != 1 {
		t.Errorf("runs: got %d want 1 (noops run nothing)", got)
	}
	if diff := cmp.Diff([]string{"A/a"}, res.Done); diff != "" {
		t.Errorf("Done: (-want +got):\n%s", diff)
	}
}

func TestWalkCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	changes := []*engine.Change{ch("A/a", engine.Create), ch("B/b", engine.Create, "A/a")}
	res := engine.Walk(ctx, nil, changes, 2, engine.NopHooks{}, func(context.Context, *engine.Change) error {
		t.Error("run called after cancel")
		return nil
	})
	want := map[string]string{"A/a": engine.ReasonInterrupted, "B/b": engine.ReasonInterrupted}
	if diff := cmp.Diff(want, res.Skipped); diff != "" {
		t.Errorf("Skipped (-want +got):\n%s", diff)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "interrupted: 2 change(s) not started") {
		t.Errorf("err: got %v want an interruption error", err)
	}
}

// A closed stop starts nothing new, but the running change goes on to its
// end and counts by its real outcome; what never started is interrupted,
// not failed. A noop is not work and is not reported.
func TestWalkStopLetsRunningFinish(t *testing.T) {
	for _, outcome := range []string{"done", "failed"} {
		t.Run(outcome, func(t *testing.T) {
			stop := make(chan struct{})
			// One slot: whichever of A and C takes it first runs; the
			// other waits for the slot when the stop comes.
			changes := []*engine.Change{ch("A/a", engine.Create), ch("B/b", engine.Create, "A/a"), ch("C/c", engine.Create), ch("D/d", engine.NoOp)}
			running := make(chan string, 1)
			var calls atomic.Int32
			run := func(ctx context.Context, c *engine.Change) error {
				if calls.Add(1) > 1 {
					t.Errorf("%s started after the stop", c.Address)
					return nil
				}
				running <- c.Address
				<-stop // interrupted while running
				if ctx.Err() != nil {
					t.Error("the running change's ctx was cancelled by a stop")
				}
				if outcome == "failed" {
					return &pve.TaskError{UPID: "UPID:pve:1:2:3:qmcreate:100:root@pam:", ExitStatus: "boom"}
				}
				return nil
			}
			done := make(chan *engine.Result)
			go func() { done <- engine.Walk(context.Background(), stop, changes, 1, engine.NopHooks{}, run) }()
			first := <-running
			close(stop)
			res := <-done
			other := map[string]string{"A/a": "C/c", "C/c": "A/a"}[first]
			wantDone, wantFailed := []string{first}, 0
			wantSkipped := map[string]string{"B/b": engine.ReasonInterrupted, other: engine.ReasonInterrupted}
			if outcome == "failed" {
				wantDone, wantFailed = nil, 1
				if first == "A/a" {
					wantSkipped["B/b"] = "dependency A/a failed"
				}
			}
			if diff := cmp.Diff(wantDone, res.Done); diff != "" {
				t.Errorf("Done (-want +got):\n%s", diff)
			}
			if len(res.Failed) != wantFailed || len(res.Unknown) != 0 {
				t.Errorf("Failed %v Unknown %v, want %d failed and none unknown", res.Failed, res.Unknown, wantFailed)
			}
			if diff := cmp.Diff(wantSkipped, res.Skipped); diff != "" {
				t.Errorf("Skipped (-want +got):\n%s", diff)
			}
			if !res.Interrupted || res.Err() == nil {
				t.Errorf("Interrupted %v err %v, want an interrupted result with an error", res.Interrupted, res.Err())
			}
		})
	}
}

// Cancelling ctx (a second interrupt) stops waiting: a change cut short is
// of unknown outcome, one PVE answered stays failed.
func TestWalkAbortMakesOutcomeUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	changes := []*engine.Change{ch("A/a", engine.Create), ch("B/b", engine.Create), ch("C/c", engine.Create, "A/a")}
	var started sync.WaitGroup
	started.Add(2)
	run := func(ctx context.Context, c *engine.Change) error {
		started.Done()
		<-ctx.Done()
		if c.Address == "B/b" {
			return fmt.Errorf("create: %w", &pve.APIError{Status: 500, Message: "refused"})
		}
		return fmt.Errorf("wait for task: %w (the task may still be running)", ctx.Err())
	}
	done := make(chan *engine.Result)
	go func() { done <- engine.Walk(ctx, nil, changes, 2, engine.NopHooks{}, run) }()
	started.Wait()
	cancel()
	res := <-done
	if len(res.Unknown) != 1 || res.Unknown["A/a"] == nil {
		t.Errorf("Unknown: got %v want A/a", res.Unknown)
	}
	if len(res.Failed) != 1 || res.Failed["B/b"] == nil {
		t.Errorf("Failed: got %v want B/b", res.Failed)
	}
	if res.Skipped["C/c"] != engine.ReasonInterrupted {
		t.Errorf("C/c: got %q want %q", res.Skipped["C/c"], engine.ReasonInterrupted)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "1 outcome unknown") {
		t.Errorf("err: got %v", err)
	}
}

func TestWalkProtectedNoopIsKept(t *testing.T) {
	prot := ch("QemuVM/db", engine.NoOp)
	prot.Reasons, prot.Kept = []string{"protected: skipped"}, true
	h := &recHooks{}
	res := engine.Walk(context.Background(), nil, []*engine.Change{prot, ch("LinuxBridge/b", engine.Delete, "QemuVM/db")}, 2, h,
		func(context.Context, *engine.Change) error { return nil })
	if diff := cmp.Diff(map[string]string{"QemuVM/db": "protected: skipped"}, res.Kept); diff != "" {
		t.Errorf("Kept: (-want +got):\n%s", diff)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("Skipped: got %v, want none", res.Skipped)
	}
	if diff := cmp.Diff([]string{"LinuxBridge/b"}, res.Done); diff != "" {
		t.Errorf("Done: (-want +got):\n%s", diff)
	}
	if err := res.Err(); err != nil {
		t.Errorf("err: got %v want nil", err)
	}
	if diff := cmp.Diff([]string{"QemuVM/db: protected: skipped"}, h.skipped); diff != "" {
		t.Errorf("hooks.Skipped: (-want +got):\n%s", diff)
	}
}

func TestCheckPlan(t *testing.T) {
	tests := []struct {
		name   string
		plan   *engine.Plan
		errHas string
	}{
		{name: "ok", plan: &engine.Plan{FormatVersion: "1", Changes: []*engine.Change{ch("A/a", engine.Create), ch("B/b", engine.Create, "A/a")}}},
		{name: "nil", errHas: "no plan"},
		{name: "version", plan: &engine.Plan{FormatVersion: "9"}, errHas: "format version"},
		{name: "order", plan: &engine.Plan{FormatVersion: "1", Changes: []*engine.Change{ch("B/b", engine.Create, "A/a"), ch("A/a", engine.Create)}}, errHas: "dependency order"},
		{name: "duplicate", plan: &engine.Plan{FormatVersion: "1", Changes: []*engine.Change{ch("A/a", engine.Create), ch("A/a", engine.Create)}}, errHas: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := engine.CheckPlan(tt.plan)
			if tt.errHas == "" {
				if err != nil {
					t.Errorf("checkPlan: got %v want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("checkPlan: got %v want error containing %q", err, tt.errHas)
			}
		})
	}
}

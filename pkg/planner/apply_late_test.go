package planner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
)

// TestWalkLateStep: a change's late step runs after its (direct)
// dependents finished, also with one slot (the first part gives its slot back), and
// PostApply comes after it; a failed dependent leaves it out; a failing
// late step fails the change.
func TestWalkLateStep(t *testing.T) {
	tests := []struct {
		name     string
		failing  string // address whose run fails
		lateErr  error
		want     []string
		wantDone []string
		failed   []string
	}{
		{name: "after the dependents", want: []string{
			"pre D/d", "run D/d", "pre V/a", "run V/a", "post V/a err=<nil>", "pre V/b", "run V/b", "post V/b err=<nil>",
			"late D/d", "post D/d err=<nil>"},
			wantDone: []string{"D/d", "V/a", "V/b"}},
		{name: "a dependent fails", failing: "V/b", want: []string{
			"pre D/d", "run D/d", "pre V/a", "run V/a", "post V/a err=<nil>", "pre V/b", "run V/b", "post V/b err=boom",
			"D/d: kept what it removes after its dependents: V/b did not finish", "post D/d err=<nil>"},
			wantDone: []string{"D/d", "V/a"}, failed: []string{"V/b"}},
		{name: "the late step fails", lateErr: errors.New("in use"), want: []string{
			"pre D/d", "run D/d", "pre V/a", "run V/a", "post V/a err=<nil>", "pre V/b", "run V/b", "post V/b err=<nil>",
			"late D/d", "post D/d err=in use"},
			wantDone: []string{"V/a", "V/b"}, failed: []string{"D/d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// V/b depends on D/d too: the late step waits for direct dependents.
			changes := []*engine.Change{ch("D/d", engine.Update), ch("V/a", engine.Update, "D/d"), ch("V/b", engine.Update, "D/d", "V/a")}
			h := &seqHooks{}
			run := func(_ context.Context, c *engine.Change) error {
				h.add("run " + c.Address)
				if c.Address == tc.failing {
					return errors.New("boom")
				}
				return nil
			}
			late := func(c *engine.Change) func(context.Context) error {
				if c.Address != "D/d" {
					return nil
				}
				return func(context.Context) error { h.add("late D/d"); return tc.lateErr }
			}
			res := engine.WalkPhases(context.Background(), nil, changes, 1, h, run, late)
			if diff := cmp.Diff(tc.want, h.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDone, res.Done); diff != "" {
				t.Errorf("done (-want +got):\n%s", diff)
			}
			var failed []string
			for a := range res.Failed {
				failed = append(failed, a)
			}
			if diff := cmp.Diff(tc.failed, failed); diff != "" {
				t.Errorf("failed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWalkLateStepInterrupted: a stop before the late step leaves it out
// and marks the walk interrupted.
func TestWalkLateStepInterrupted(t *testing.T) {
	stop := make(chan struct{})
	changes := []*engine.Change{ch("D/d", engine.Update), ch("V/a", engine.Update, "D/d")}
	h := &seqHooks{}
	run := func(_ context.Context, c *engine.Change) error {
		if c.Address == "V/a" {
			close(stop)
		}
		return nil
	}
	late := func(c *engine.Change) func(context.Context) error {
		if c.Address != "D/d" {
			return nil
		}
		return func(context.Context) error { h.add("late D/d"); return nil }
	}
	res := engine.WalkPhases(context.Background(), stop, changes, 2, h, run, late)
	if !res.Interrupted || strings.Contains(h.String(), "late D/d") || h.index("D/d: kept what it removes after its dependents: interrupted") < 0 {
		t.Errorf("interrupted=%v, events:\n%s", res.Interrupted, h)
	}
}

package dag

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// record is what a walk's hooks heard.
type record struct {
	mu     sync.Mutex
	events []string
}

func (r *record) add(s string) { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }

func (r *record) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.events...)
	sort.Strings(out)
	return out
}

func TestWalkFailureSkipsDependents(t *testing.T) {
	rec := &record{}
	w := &Walker{
		Parallelism: 2,
		Run: func(_ context.Context, id string) error {
			if id == "b" {
				return errors.New("boom")
			}
			return nil
		},
		Skipped: func(id, cause string) { rec.add("skip " + id + " for " + cause) },
		Idle:    func(id string) { rec.add("idle " + id) },
	}
	ok, stopped := w.Walk(context.Background(), []Step{
		{ID: "a"}, {ID: "b", Deps: []string{"a"}}, {ID: "c", Deps: []string{"b"}}, {ID: "d", Deps: []string{"c"}},
		{ID: "n", Idle: true, Deps: []string{"a"}},
	})
	if stopped {
		t.Error("stopped")
	}
	if diff := cmp.Diff(map[string]bool{"a": true}, ok); diff != "" {
		t.Errorf("succeeded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"idle n", "skip c for b", "skip d for b"}, rec.sorted()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestWalkLatePartWaitsForDependents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failing  string
		wantLate bool
	}{
		{"dependents fine", "", true},
		{"a dependent failed", "user", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &record{}
			w := &Walker{
				Parallelism: 1, // the late part must not hold the only slot while it waits
				Run: func(_ context.Context, id string) error {
					rec.add("run " + id)
					if id == tc.failing {
						return errors.New("boom")
					}
					return nil
				},
				Late: func(id string) func(context.Context) error {
					if id != "old" {
						return nil
					}
					return func(context.Context) error { rec.add("late old"); return nil }
				},
				Held: func(id, why string) { rec.add("held " + id + ": " + why) },
			}
			w.Walk(context.Background(), []Step{{ID: "old"}, {ID: "user", Deps: []string{"old"}}})
			want := []string{"run old", "run user"}
			if tc.wantLate {
				want = append(want, "late old")
			} else {
				want = append(want, "held old: user did not finish")
			}
			sort.Strings(want)
			if diff := cmp.Diff(want, rec.sorted()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWalkStopStartsNothing(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	rec := &record{}
	w := &Walker{Parallelism: 4, Stop: stop,
		Run:     func(context.Context, string) error { t.Error("ran after stop"); return nil },
		Skipped: func(id, cause string) { rec.add("skip " + id + " for " + cause) },
	}
	ok, stopped := w.Walk(context.Background(), []Step{{ID: "a"}, {ID: "b", Deps: []string{"a"}}})
	if !stopped || len(ok) != 0 {
		t.Errorf("stopped %v, succeeded %v; want stopped, none", stopped, ok)
	}
	if diff := cmp.Diff([]string{"skip a for ", "skip b for "}, rec.sorted()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

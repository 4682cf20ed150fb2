package pve

import (
	"testing"
	"time"
)

func TestPollDelay(t *testing.T) {
	const fine, longest = 250 * time.Millisecond, 2 * time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		expect  time.Duration
		known   bool
		elapsed time.Duration
		want    time.Duration
	}{
		{name: "unknown type: fine steps first", elapsed: ms(10), want: fine},
		{name: "unknown type: fine steps for 2 s", elapsed: ms(1900), want: fine},
		{name: "unknown type: then a quarter of its age", elapsed: ms(4000), want: ms(1000)},
		{name: "unknown type: capped", elapsed: time.Minute, want: longest},
		{name: "known: young: a fine step", expect: ms(2000), known: true, elapsed: ms(10), want: fine},
		{name: "known: steps double with the age", expect: ms(2000), known: true, elapsed: ms(600), want: ms(600)},
		{name: "known: but stop just before the end", expect: ms(2000), known: true, elapsed: ms(1000), want: ms(875)},
		{name: "known: a long task's steps are capped", expect: time.Minute, known: true, elapsed: ms(10000), want: longest},
		{name: "known: fine steps near the end", expect: ms(2000), known: true, elapsed: ms(1875), want: fine},
		{name: "known: fine steps a while after", expect: ms(2000), known: true, elapsed: ms(3900), want: fine},
		{name: "known: then backing off", expect: ms(2000), known: true, elapsed: ms(8000), want: longest},
		{name: "known short task: fine steps", expect: ms(100), known: true, elapsed: ms(5), want: fine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pollDelay(fine, longest, tt.expect, tt.known, tt.elapsed); got != tt.want {
				t.Errorf("pollDelay = %s, want %s", got, tt.want)
			}
		})
	}
}

// No task is polled more often than once per fine step, whatever it
// learned: every delay of a whole wait is at least the fine step.
func TestPollDelayNeverBelowFineStep(t *testing.T) {
	const fine, longest = 250 * time.Millisecond, 2 * time.Second
	for _, expect := range []time.Duration{0, time.Millisecond, 300 * time.Millisecond, 2 * time.Second, time.Hour} {
		for _, known := range []bool{false, true} {
			for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += 37 * time.Millisecond {
				if d := pollDelay(fine, longest, expect, known, elapsed); d < fine || d > longest {
					t.Fatalf("expect %s known %v elapsed %s: delay %s outside [%s, %s]", expect, known, elapsed, d, fine, longest)
				}
			}
		}
	}
}

func TestTaskPacerLearns(t *testing.T) {
	var p taskPacer
	if _, ok := p.expected("qmcreate"); ok {
		t.Fatal("a new pacer knows qmcreate")
	}
	p.learn("qmcreate", 2*time.Second)
	p.learn("qmcreate", 4*time.Second)
	p.learn("", time.Second) // no type: ignored
	p.learn("qmstart", -1)   // nonsense: ignored
	if d, ok := p.expected("qmcreate"); !ok || d != 3*time.Second {
		t.Errorf("qmcreate expected %s %v, want 3s", d, ok)
	}
	if _, ok := p.expected("qmstart"); ok {
		t.Error("qmstart learned from a negative duration")
	}
}

// The poll budget hands out one slot per gap across all waits.
func TestTaskPacerBudget(t *testing.T) {
	var p taskPacer
	now := time.Unix(1000, 0)
	gap := 31250 * time.Microsecond
	for i := range 64 {
		if w := p.reserve(now, gap); w != time.Duration(i)*gap {
			t.Fatalf("reservation %d waits %s, want %s", i, w, time.Duration(i)*gap)
		}
	}
	// Later, the budget has refilled.
	if w := p.reserve(now.Add(time.Minute), gap); w != 0 {
		t.Errorf("after a minute: wait %s, want 0", w)
	}
}

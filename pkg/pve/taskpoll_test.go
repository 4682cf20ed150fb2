package pve

import (
	"fmt"
	"testing"
	"time"
)

var prodSteps = pollSteps{fine: DefaultPollMin, longest: DefaultPollMax}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPollDelay(t *testing.T) {
	fine, longest := prodSteps.fine, prodSteps.longest
	twoSec := taskStats{mean: 2 * time.Second, dev: ms(5)} // window 1.9375 s .. 2.0625 s
	tests := []struct {
		name  string
		st    taskStats
		known bool
		age   time.Duration
		want  time.Duration
	}{
		{name: "unknown type: a fine step first", age: 0, want: fine},
		{name: "unknown type: half steps while young", age: fine, want: fine / 2},
		{name: "unknown type: half steps for 4 steps", age: ms(99), want: fine / 2},
		{name: "unknown type: then fine steps for 8 steps", age: ms(100), want: fine},
		{name: "unknown type: fine steps up to 8 steps", age: ms(190), want: fine},
		{name: "unknown type: then an eighth of its age", age: ms(4000), want: ms(500)},
		{name: "unknown type: capped", age: time.Minute, want: longest},
		{name: "known: young: a fine step", st: twoSec, known: true, age: 0, want: fine},
		{name: "known: steps double with the age", st: twoSec, known: true, age: ms(600), want: ms(600)},
		{name: "known: but stop at the window, on the grid through its end", st: twoSec, known: true, age: ms(1000), want: ms(950)},
		{name: "known: at least half a step into the window", st: twoSec, known: true, age: ms(1930), want: ms(20)},
		{name: "known: a quarter step before the expected end", st: twoSec, known: true, age: ms(1975), want: ms(18) + 750*time.Microsecond},
		{name: "known: then at it", st: twoSec, known: true, age: ms(1993) + 750*time.Microsecond, want: ms(6) + 250*time.Microsecond},
		{name: "known: eighth steps for a step past the expected end", st: twoSec, known: true, age: ms(2000), want: fine / 8},
		{name: "known: on the eighth grid, at least an eighth step on", st: twoSec, known: true, age: ms(2010), want: ms(5) + 625*time.Microsecond},
		{name: "known: the last eighth step", st: twoSec, known: true, age: ms(2021) + 875*time.Microsecond, want: fine / 8},
		{name: "known: then fine steps in the window", st: twoSec, known: true, age: ms(2025), want: fine},
		{name: "known: overrun: fine steps at first", st: twoSec, known: true, age: ms(2100), want: fine},
		{name: "known: overrun: steps grow with it", st: twoSec, known: true, age: ms(3062) + 500*time.Microsecond, want: ms(250)},
		{name: "known: long task's steps are capped", st: taskStats{mean: time.Hour}, known: true, age: ms(10000), want: longest},
		{name: "known: a wide deviation widens the window", st: taskStats{mean: 2 * time.Second, dev: ms(400)}, known: true, age: ms(1300), want: fine},
		{name: "known short task: on the grid through its end", st: taskStats{mean: ms(48)}, known: true, age: ms(5), want: ms(18)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := prodSteps.delay(tt.st, tt.known, tt.age); got != tt.want {
				t.Errorf("delay = %s, want %s", got, tt.want)
			}
		})
	}
}

// waitOf plays a whole wait of a task that ends at dur against the
// schedule (no round trips): how many polls it takes and how late the
// poll that sees it stopped comes.
func waitOf(s pollSteps, st taskStats, known bool, dur time.Duration) (polls int, lag time.Duration) {
	age := time.Duration(0)
	for polls = 0; ; polls++ {
		age += s.next(st, known, polls, age)
		if age >= dur {
			return polls + 1, age - dur
		}
	}
}

// A task of a type the client knows is noticed within a fine step of its
// end, whatever its length, and a long one costs fewer than 4 polls/s.
func TestPollScheduleKnownTasks(t *testing.T) {
	for _, dur := range []time.Duration{ms(30), ms(50), ms(300), 2 * time.Second, 30 * time.Second, 10 * time.Minute, 30 * time.Minute} {
		// The end falls anywhere between two polls: try phases across a step.
		for _, off := range []time.Duration{0, ms(7), ms(13), ms(24)} {
			end := dur + off
			st := taskStats{mean: dur, dev: dur / 50}
			t.Run(fmt.Sprintf("%s+%s", dur, off), func(t *testing.T) {
				polls, lag := waitOf(prodSteps, st, true, end)
				if lag > prodSteps.fine {
					t.Errorf("noticed %s late, want ≤ %s", lag, prodSteps.fine)
				}
				if rate := float64(polls) / end.Seconds(); end >= 10*time.Second && rate > 4 {
					t.Errorf("%d polls in %s: %.2f/s, want ≤ 4/s", polls, end, rate)
				}
			})
		}
	}
}

// A task that fails early is seen at about twice the age it failed at,
// not at its type's expected end.
func TestPollScheduleEarlyFailure(t *testing.T) {
	st := taskStats{mean: 10 * time.Minute, dev: time.Second}
	for _, fail := range []time.Duration{ms(10), time.Second, 10 * time.Second} {
		_, lag := waitOf(prodSteps, st, true, fail)
		if lag > max(fail, prodSteps.fine) {
			t.Errorf("a task that failed at %s was seen %s late, want ≤ %s", fail, lag, fail)
		}
	}
}

// A task of a type not seen yet is seen within an eighth of its age
// (a fine step while young).
func TestPollScheduleUnknownTasks(t *testing.T) {
	for _, dur := range []time.Duration{ms(30), ms(180), time.Second, time.Minute} {
		_, lag := waitOf(prodSteps, taskStats{}, false, dur)
		if want := max(dur/youngSteps+prodSteps.fine, prodSteps.fine); lag > want {
			t.Errorf("%s task of an unknown type noticed %s late, want ≤ %s", dur, lag, want)
		}
	}
}

// Whatever the schedule wants, no task polls more than its budget: a
// burst, then one poll per pollEarnSteps fine steps of its age.
func TestPollBudgetBoundsEveryWait(t *testing.T) {
	s := prodSteps
	stats := []taskStats{{}, {mean: ms(50)}, {mean: 2 * time.Second, dev: 2 * time.Second}, {mean: time.Hour, dev: time.Hour}}
	for _, st := range stats {
		for _, known := range []bool{false, true} {
			age := time.Duration(0)
			for polls := 0; age < 2*time.Hour; polls++ {
				age += s.next(st, known, polls, age)
				allowed := pollBurst + int(age/(pollEarnSteps*s.fine))
				if polls+1 > allowed {
					t.Fatalf("stats %+v known %v: poll %d at %s, budget %d", st, known, polls+1, age, allowed)
				}
				if polls > 1e6 {
					t.Fatal("runaway schedule")
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
	p.learn("", time.Second) // no type: ignored
	p.learn("qmstart", -1)   // nonsense: ignored
	st, ok := p.expected("qmcreate")
	if !ok || st.mean != 2*time.Second || st.dev != 250*time.Millisecond {
		t.Errorf("qmcreate after one: %+v %v, want mean 2s dev 250ms", st, ok)
	}
	// The same duration again and again: the deviation shrinks.
	for range 20 {
		p.learn("qmcreate", 2*time.Second)
	}
	if st, _ := p.expected("qmcreate"); st.mean != 2*time.Second || st.dev > 2*time.Millisecond {
		t.Errorf("qmcreate after 21 of 2s: %+v, want mean 2s, dev ~0", st)
	}
	// A slower one moves the mean by a quarter of the difference.
	p.learn("qmcreate", 3*time.Second)
	if st, _ := p.expected("qmcreate"); st.mean != 2250*time.Millisecond {
		t.Errorf("mean after a 3s task: %s, want 2.25s", st.mean)
	}
	if _, ok := p.expected("qmstart"); ok {
		t.Error("qmstart learned from a negative duration")
	}
}

// Tasks of one type that take the same time: once the client has seen a
// few, the grid of its polls settles just after their end, and they are
// noticed a few ms after it (not half a fine step on average).
func TestPollScheduleLearnsTheEnd(t *testing.T) {
	for _, dur := range []time.Duration{ms(30), ms(50), ms(137), 2 * time.Second, time.Minute} {
		var p taskPacer
		var lag time.Duration
		for range 40 {
			st, known := p.expected("qmcreate")
			age := time.Duration(0)
			for polls := 0; ; polls++ {
				next := age + prodSteps.next(st, known, polls, age)
				if next >= dur {
					lag = next - dur
					p.learn("qmcreate", prodSteps.observedEnd(age, next))
					break
				}
				age = next
			}
		}
		// A long type's first task is seen late (an eighth of its age):
		// its learned end comes down an eighth of the way per task.
		want := prodSteps.fine / 4
		if dur > 10*time.Second {
			want = prodSteps.fine / 2
		}
		if lag > want {
			t.Errorf("%s tasks: the 40th noticed %s late, want ≤ %s", dur, lag, want)
		}
	}
}

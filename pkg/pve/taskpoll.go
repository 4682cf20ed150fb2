package pve

import (
	"context"
	"math"
	"sync"
	"time"
)

// Task polling. PVE has no way to wait for a task: its status is polled
// (GET /nodes/{node}/tasks/{upid}/status). The schedule aims the polls at
// the moment a task is likely to end, so that tasks of every length are
// noticed within a fine step (25 ms by default) of their end, while the
// load stays bounded per task:
//
//   - The client learns how long each task type takes (qmcreate, qmstart,
//     qmconfig, …): a smoothed mean and a smoothed deviation of the
//     durations it saw (as TCP learns a round trip), each taken as the age
//     of the first "stopped" poll when the "running" one before was about
//     a fine step earlier (else the middle of the two: observedEnd).
//   - A task of a type it knows is polled at doubling ages from the fine
//     step (a task that fails early is seen at twice the age it failed
//     at) up to its window: the expected end ± a margin (twice the
//     deviation, 1/32 of the duration, at least two fine steps). In the
//     window its polls fall on a grid of fine steps through the expected
//     end, plus one a quarter step before it and eighth steps for one
//     step after it (onGrid): as the end is
//     learned from the first stopped poll, the grid settles just after
//     the tasks' end, and a task that ends as expected is seen a few ms
//     after it. A task that overruns the window is polled at steps growing
//     with the overrun.
//   - A task of a type it does not know is polled a fine step after it
//     started, then every half step up to four steps (the first tasks of
//     an apply are all of types not seen yet: a whole wave of them waits
//     for the poll after their end), every fine step up to eight, then
//     every eighth of its age (it is seen at most 12.5 % late).
//   - Steps are capped at pollMax (2 s).
//   - Each task has its own poll budget: a burst of pollBurst polls, then
//     one poll per pollEarnSteps fine steps (4/s by default). A task that
//     runs long cannot average more than 4 polls/s, and a wait never waits
//     for another one: with --parallelism P, P waits poll independently
//     (there is no client-wide budget to share, which capped whole applies
//     of short tasks at about 32 tasks/s).

// The production poll steps: a task is noticed within DefaultPollMin of
// its expected end; no step is longer than DefaultPollMax.
const (
	DefaultPollMin = 25 * time.Millisecond
	DefaultPollMax = 2 * time.Second
)

// pollBurst is the polls a task may spend before its budget's rate binds:
// enough for the fine steps of a young task of a type not seen yet.
const pollBurst = 20

// pollEarnSteps: a task earns one poll per this many fine steps (4/s at
// 25 ms).
const pollEarnSteps = 10

// A task of an unknown type is polled every half fine step until it is
// halfSteps half steps old (the first wave of a short task type is seen
// ≤ 12.5 ms after its end), then every fine step until an eighth of its
// age (1/youngSteps) is longer: from there its polls are the ones it had
// before half steps (round 8), so a long task is seen as it was.
const (
	halfSteps  = 8
	youngSteps = 8
)

// endSplit: for a fine step past a task type's expected end, the polls
// come every 1/endSplit of a fine step (3 ms at 25 ms): most tasks end
// there, and each ms they wait unseen is a ms every task after them
// waits too (a create at --parallelism P hands its slot to the next).
const endSplit = 8

// The smoothing of the learned mean and deviation (as RFC 6298's α and
// β; the mean's weight is twice RFC 6298's, so that the grid of polls
// follows a type whose tasks got shorter within a few tasks).
const (
	learnMean = 0.25
	learnDev  = 0.25
)

// taskStats is what the client learned about one task type.
type taskStats struct {
	mean, dev time.Duration
}

// taskPacer holds the learned task durations of a client.
type taskPacer struct {
	mu     sync.Mutex
	expect map[string]taskStats // by task type
}

// expected is the learned duration of a task type (false: not known).
func (p *taskPacer) expected(typ string) (taskStats, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.expect[typ]
	return s, ok
}

// observedEnd is the duration to learn from a task last seen running at
// age running and stopped at age stopped: after a fine step, the stopped
// poll (an upper bound of its end, so that the grid of the next tasks'
// polls settles just after their end); after a longer one, the middle.
func (s pollSteps) observedEnd(running, stopped time.Duration) time.Duration {
	if stopped-running <= s.fine*5/2 {
		return stopped
	}
	return (running + stopped) / 2
}

// learn folds one observed duration into its type's mean and deviation.
func (p *taskPacer) learn(typ string, d time.Duration) {
	if typ == "" || d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expect == nil {
		p.expect = map[string]taskStats{}
	}
	old, ok := p.expect[typ]
	if !ok {
		p.expect[typ] = taskStats{mean: d, dev: d / 8}
		return
	}
	diff := math.Abs(float64(d - old.mean))
	p.expect[typ] = taskStats{
		mean: old.mean + time.Duration(learnMean*float64(d-old.mean)),
		dev:  old.dev + time.Duration(learnDev*(diff-float64(old.dev))),
	}
}

// pollSteps are a client's poll steps: fine is the shortest (and the one
// near an expected end), longest the longest.
type pollSteps struct {
	fine, longest time.Duration
}

// window is where a task of these stats is expected to end: its mean ±
// a margin.
func (s pollSteps) window(st taskStats) (from, to time.Duration) {
	m := max(2*st.dev, st.mean/32, 2*s.fine)
	return st.mean - m, st.mean + m
}

// delay is how long to wait before the next status poll of a task that
// has run for age, whose type's stats are st (when known).
func (s pollSteps) delay(st taskStats, known bool, age time.Duration) time.Duration {
	if !known {
		switch {
		case age < s.fine:
			return s.fine - age
		case age < halfSteps*s.fine/2:
			return s.fine / 2
		}
		return min(max(age/youngSteps, s.fine), s.longest)
	}
	from, to := s.window(st)
	if age >= to {
		return min(max((age-to)/4, s.fine), s.longest)
	}
	// Up to the window, steps double with the task's age: a task that
	// fails early (on its lock, after PVE's 1 s or 10 s wait) is seen at
	// twice the age it failed at, not at the window.
	next := age + min(max(age, s.fine), s.longest)
	if next >= from {
		// In the window, the polls fall on a grid of fine steps through
		// the expected end, so that one comes just after it.
		next = s.onGrid(st.mean, max(age+s.fine/endSplit, from))
	}
	return next - age
}

// onGrid is the first time at or after t on the grid of fine steps
// through anchor, with one more point a quarter step before the anchor:
// a task that ends up to then is seen there and moves the learned end
// (the anchor) down; so the anchor settles less than a quarter step after
// the tasks' end.
func (s pollSteps) onGrid(anchor, t time.Duration) time.Duration {
	if q := s.fine / endSplit; t > anchor && t <= anchor+s.fine && q > 0 {
		// Just past the expected end the points come every 1/endSplit
		// step: a task that ends a little later than its type's mean is
		// seen a few ms after it, not a whole step.
		return anchor + (t-anchor+q-1)/q*q
	}
	k := (t - anchor) / s.fine // truncated toward zero
	g := anchor + k*s.fine
	if g < t {
		g += s.fine
	}
	if early := anchor - s.fine/4; early >= t && early < g {
		return early
	}
	return g
}

// budgetWait is how much longer than its schedule a task of age that
// has been polled polls times must wait for its budget: it may have
// polled pollBurst times plus one per pollEarnSteps fine steps of age.
func (s pollSteps) budgetWait(polls int, age time.Duration) time.Duration {
	over := polls + 1 - pollBurst
	if over <= 0 {
		return 0
	}
	return max(time.Duration(over)*pollEarnSteps*s.fine-age, 0)
}

// next is the wait before the next poll of a task that has run for age
// and been polled polls times: its schedule, then its budget.
func (s pollSteps) next(st taskStats, known bool, polls int, age time.Duration) time.Duration {
	d := s.delay(st, known, age)
	return d + s.budgetWait(polls, age+d)
}

// nextPoll waits before the next poll of a task of type typ, polled polls
// times so far, whose last poll was sent at sent and seen by PVE when the
// task had run for looked. The schedule is kept in PVE's time, so a round
// trip does not stretch the steps.
func (c *Client) nextPoll(ctx context.Context, typ string, polls int, sent time.Time, looked time.Duration) error {
	st, known := c.pacer.expected(typ)
	return Sleep(ctx, time.Until(sent.Add(c.pollSteps().next(st, known, polls, looked))))
}

func (c *Client) pollSteps() pollSteps {
	return pollSteps{fine: c.cfg.pollMin, longest: c.cfg.pollMax}
}

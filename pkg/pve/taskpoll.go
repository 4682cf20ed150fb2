package pve

import (
	"context"
	"sync"
	"time"
)

// Task polling. PVE has no way to wait for a task: its status is polled
// (GET /nodes/{node}/tasks/{upid}/status). A geometric backoff notices a
// task late by up to the last step (half its run time on average: a 2 s
// task was seen 1.1 s late), so the schedule adapts instead:
//
//   - The client learns how long each task type takes (qmcreate, qmstart,
//     …): a moving average of the durations it saw, each taken as the
//     middle of the last "running" and the first "stopped" poll.
//   - A task is polled once as soon as it started (a task that fails at
//     once is seen at once). One of a type the client knows is then
//     polled at doubling ages (a task that fails early is seen at twice
//     the age it failed at) but not past just before its expected end,
//     then every fine step (pollMin, 250 ms) until a while after it.
//   - A task of a type it does not know is polled every fine step for its
//     first 8 steps (2 s: most guest tasks end by then).
//   - After that the step grows with the task's age (a quarter of it),
//     capped at pollMax: a long task costs few polls.
//
// So no task is polled more often than once per fine step (4 polls/s), a
// task that ends near its expected time is noticed within a fine step of
// its end, and all of a client's polls share a budget (config.pollGap: 32/s by
// default: 8 tasks' worth of fine polls) so that many parallel waits do
// not become a flood of status calls.

// taskLearnWeight is the weight of the newest duration in the average.
const taskLearnWeight = 0.5

// fineSteps is how many fine steps a task of an unknown type is polled
// at, and how long past its expected end a known one keeps them.
const fineSteps = 8

// taskPacer holds what the client learned about task durations and the
// shared poll budget.
type taskPacer struct {
	mu     sync.Mutex
	expect map[string]time.Duration // by task type
	next   time.Time                // when the budget allows the next poll
}

// expected is the learned duration of a task type (false: not known).
func (p *taskPacer) expected(typ string) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.expect[typ]
	return d, ok
}

// learn folds one observed duration into the average of its type.
func (p *taskPacer) learn(typ string, d time.Duration) {
	if typ == "" || d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expect == nil {
		p.expect = map[string]time.Duration{}
	}
	if old, ok := p.expect[typ]; ok {
		d = time.Duration(taskLearnWeight*float64(d) + (1-taskLearnWeight)*float64(old))
	}
	p.expect[typ] = d
}

// reserve takes a slot of the client's poll budget (one poll per gap) and
// returns how long to wait for it.
func (p *taskPacer) reserve(now time.Time, gap time.Duration) time.Duration {
	if gap <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at := now
	if p.next.After(at) {
		at = p.next
	}
	p.next = at.Add(gap)
	return at.Sub(now)
}

// pollDelay is how long to wait before the next status poll of a task
// that has run for elapsed, whose type is expected to take expect (when
// known); fine and longest are the shortest and the longest step.
func pollDelay(fine, longest, expect time.Duration, known bool, elapsed time.Duration) time.Duration {
	if known {
		// Sleep until just before the expected end (half a fine step
		// early, so the end falls between two fine polls), but no longer
		// than the task's age: a task that fails early (on its lock,
		// after PVE's 1 s or 10 s wait) is seen at twice the age it
		// failed at, not at the expected end.
		if until := expect - elapsed - fine/2; until > fine {
			return min(until, max(elapsed, fine), longest)
		}
		if elapsed < expect+fineSteps*fine {
			return fine
		}
	} else if elapsed < fineSteps*fine {
		return fine
	}
	return min(max(elapsed/4, fine), longest)
}

// nextPoll waits before the next poll of a task of type typ whose last
// poll was sent at sent and seen by PVE when the task had run for looked:
// its own schedule (kept in PVE's time, so a round trip does not stretch
// the steps), then the client's poll budget.
func (c *Client) nextPoll(ctx context.Context, typ string, sent time.Time, looked time.Duration) error {
	expect, known := c.pacer.expected(typ)
	d := pollDelay(c.cfg.pollMin, c.cfg.pollMax, expect, known, looked)
	if err := sleep(ctx, time.Until(sent.Add(d))); err != nil {
		return err
	}
	return sleep(ctx, c.pacer.reserve(time.Now(), c.cfg.pollGap))
}

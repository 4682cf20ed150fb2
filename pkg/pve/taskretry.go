package pve

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// PVE takes a guest's config lock inside the task for most task-starting
// calls (pve-guest-common AbstractConfig.pm lock_config, called from the
// forked worker in qemu-server and pve-container): when another task holds
// it for longer than the worker waits (10 s; 1 s for a clone), the call
// answers a UPID and the *task* fails with "can't lock file '…' - got
// timeout", having done nothing. StartTask retries the synchronous form of
// that failure; the calls below also retry this one.

// taskLockTimeoutRe is a task that failed on the lock it takes first: its
// exit status is lock_file_full's message and nothing else. A lock failure
// wrapped in another message ("clone failed: …") happened after the task
// did something, and is not retried.
var taskLockTimeoutRe = lazyre.New(`^can't lock file '[^']*' - got timeout$`)

// IsTaskLockTimeout reports whether err is a task that failed on taking
// its guest lock, before it did anything.
func IsTaskLockTimeout(err error) bool {
	var te *TaskError
	return errors.As(err, &te) && taskLockTimeoutRe.MatchString(strings.TrimSpace(te.ExitStatus))
}

// bare500 is a 500 without PVE's message (OutcomeUnknown).
func bare500(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == 500 && ae.Bare
}

// RunIdempotentTask is RunTask for a call that may safely be made again:
// a call answered with a plain 500 (createretry.go: PVE did nothing) is
// sent again, reported as a TaskFaultRetry; a task that failed on its
// guest lock is started again, with the backoff
// and number of tries of the synchronous lock-timeout retry, and each
// retry is reported to ctx's TaskObserver as a TaskLockRetry whose UPID is
// the failed task's (and whose Err is its *TaskError). Only calls whose repetition
// cannot do more than the first (a config change with its digest, power
// actions, delete, a resize to an absolute size, template, a network
// reload, a clone that locks before it writes) belong here.
func (c *Client) RunIdempotentTask(ctx context.Context, method, path string, params url.Values) error {
	tries := max(c.cfg.retries, 1)
	for attempt := 1; ; attempt++ {
		sent := c.serverNow()
		upid, err := c.StartTask(ctx, method, path, params)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// The call may have been carried out: its task is looked for
			// (createretry.go) and waited for when found; when not, PVE
			// never started it. A call whose task cannot be looked up is
			// given up — but after a bare 500 it is repeated, as before
			// such a 500 counted as unknown (it is safe to repeat), unless
			// it is a clone, which its caller looks up (cloneretry.go).
			if node, typ, vmid, ok := guestTaskOf(method, path); mayHaveReached(err) && !ok && (!bare500(err) || strings.HasSuffix(path, "/clone")) {
				return err
			} else if mayHaveReached(err) && ok {
				found, ok, lerr := c.findGuestTask(ctx, node, typ, vmid, sent)
				if lerr != nil {
					return fmt.Errorf("%w (looking for its task failed too: %v)", err, lerr)
				}
				if ok {
					observe(ctx, TaskEvent{Phase: TaskFound, UPID: found, Request: method + " " + path, Attempt: attempt, Err: err})
					upid = found
				}
			}
		}
		if err != nil && upid.IsZero() {
			// A plain 500 is the API handler failing before it forked
			// the worker, and a call that got lost on its way was not
			// found started: nothing was done, and it may be repeated.
			if !(passingServerError(err) || mayHaveReached(err)) || attempt >= tries {
				return err
			}
			observe(ctx, TaskEvent{Phase: TaskFaultRetry, Request: method + " " + path, Attempt: attempt, Err: err})
			if serr := Sleep(ctx, c.backoff(attempt)); serr != nil {
				return fmt.Errorf("%w (while retrying: %w)", err, serr)
			}
			continue
		}
		if upid.IsZero() {
			return nil
		}
		_, err = c.WaitTask(ctx, upid)
		if err == nil || !IsTaskLockTimeout(err) {
			return err
		}
		if attempt >= tries {
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		observe(ctx, TaskEvent{Phase: TaskLockRetry, UPID: upid, Request: method + " " + path, Attempt: attempt, Err: err})
		if serr := Sleep(ctx, c.backoff(attempt)); serr != nil {
			return fmt.Errorf("%w (while retrying: %w)", err, serr)
		}
	}
}

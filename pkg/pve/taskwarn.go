package pve

import (
	"context"
	"strings"
)

// TaskPhase says what a TaskEvent reports.
type TaskPhase int

const (
	// TaskWaiting: WaitTask began to wait for a task (it is running in PVE).
	TaskWaiting TaskPhase = iota + 1
	// TaskDone: the wait ended. Status is the final status when the task
	// stopped (Err is then nil for OK and WARNINGS), nil when the wait
	// itself failed (ctx cancelled, deadline, no answer): the task may
	// still be running.
	TaskDone
	// TaskLockRetry: a task-starting request met PVE's "can't lock file …
	// got timeout" and is sent again after a pause (Request, Attempt, Err).
	// When the task itself failed on the lock (RunIdempotentTask), UPID is
	// that task and Err its *TaskError.
	TaskLockRetry
	// TaskFaultRetry: a task-starting request failed in passing (Err) and
	// PVE did not start it — a plain 500 for a call that is safe to
	// repeat, or a create whose task was looked for and not found; it is
	// sent again after a pause (Request, Attempt).
	TaskFaultRetry
	// TaskFound: a create got no usable answer (Err), but its task was
	// found running or done in PVE (UPID) and is waited for instead of
	// sending the create again (Request, Attempt).
	TaskFound
)

// TaskEvent is what a TaskObserver hears about the tasks of one ctx.
type TaskEvent struct {
	Phase TaskPhase
	UPID  UPID // TaskWaiting, TaskDone
	// Status is the stopped task's status (TaskDone); its ExitStatus is
	// scrubbed of secrets.
	Status *TaskStatus
	// Warnings are the "WARN: " lines (prefix cut off, scrubbed) of a task
	// that stopped with "WARNINGS: n"; empty when its log was unreadable.
	Warnings []string
	Err      error  // TaskDone: why the task or the wait failed; TaskLockRetry: the lock timeout; TaskFaultRetry, TaskFound: the fault
	Request  string // TaskLockRetry, TaskFaultRetry, TaskFound: "METHOD path"
	Attempt  int    // TaskLockRetry, TaskFaultRetry, TaskFound: the attempt that failed (1 = the first)
}

// Warned reports whether the event is a task that succeeded with warnings
// (exit status "WARNINGS: n"). PVE counts such tasks as successful, so
// without an observer nobody would see the complaints.
func (e TaskEvent) Warned() bool {
	return e.Phase == TaskDone && e.Status != nil && e.Err == nil &&
		warningsRe.MatchString(strings.TrimSpace(e.Status.ExitStatus))
}

// TaskObserver hears about the tasks waited for under a ctx: when a wait
// begins and ends (with the outcome and any warnings) and when a
// task-starting request is retried after a lock timeout. It may be called
// from several goroutines (one per change) and must not block for long.
type TaskObserver func(TaskEvent)

type taskObserverKey struct{}

// WithTaskObserver returns a ctx under which WaitTask, StartTask (and
// every call that starts or waits for a task) report to f. The observer
// rides on the ctx so that callers can attribute tasks to their own unit
// of work (a planned change) without a client per unit; what is running
// at any moment (for an interrupt, for progress lines) is known from it.
func WithTaskObserver(ctx context.Context, f TaskObserver) context.Context {
	return context.WithValue(ctx, taskObserverKey{}, f)
}

func observe(ctx context.Context, ev TaskEvent) {
	if f, _ := ctx.Value(taskObserverKey{}).(TaskObserver); f != nil {
		f(ev)
	}
}

func hasObserver(ctx context.Context) bool {
	f, _ := ctx.Value(taskObserverKey{}).(TaskObserver)
	return f != nil
}

const (
	// maxWarnLogLines bounds how much of a task's log is read for its
	// warnings: imports and backups log a line per progress step.
	maxWarnLogLines = 10 * logFirstPage
	// maxWarnings bounds the warnings handed to an observer.
	maxWarnings = 20
)

// taskWarnings reads a task's log page by page and keeps its "WARN: " lines.
func (c *Client) taskWarnings(ctx context.Context, upid UPID) []string {
	secrets := c.secretsOf(nil)
	var out []string
	for start := 0; start < maxWarnLogLines; {
		lines, total, err := c.taskLog(ctx, upid, start, logFirstPage)
		if err != nil {
			break
		}
		for _, l := range lines {
			if w, ok := strings.CutPrefix(l.T, "WARN: "); ok && len(out) < maxWarnings {
				out = append(out, scrub(w, secrets))
			}
		}
		start += len(lines)
		if len(lines) == 0 || start >= total {
			break
		}
	}
	return out
}

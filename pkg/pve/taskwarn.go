package pve

import (
	"context"
	"strings"
)

// TaskObserver is told about a task that succeeded with warnings (exit
// status "WARNINGS: n"), with the warnings its log holds ("WARN: " cut off;
// none when the log could not be read). PVE counts such tasks as
// successful, so without an observer nobody would see the complaints.
type TaskObserver func(st TaskStatus, warnings []string)

type taskObserverKey struct{}

// WithTaskObserver returns a ctx under which WaitTask (and every call that
// waits for a task) reports tasks ending with warnings to f. The observer
// rides on the ctx so that callers can attribute warnings to their own unit
// of work (a planned change) without a client per unit.
func WithTaskObserver(ctx context.Context, f TaskObserver) context.Context {
	return context.WithValue(ctx, taskObserverKey{}, f)
}

func taskObserverOf(ctx context.Context) TaskObserver {
	f, _ := ctx.Value(taskObserverKey{}).(TaskObserver)
	return f
}

const (
	// maxWarnLogLines bounds how much of a task's log is read for its
	// warnings: imports and backups log a line per progress step.
	maxWarnLogLines = 10 * logFirstPage
	// maxWarnings bounds the warnings handed to an observer.
	maxWarnings = 20
)

// reportWarnings tells ctx's observer about a task that stopped with
// warnings. It is best effort: the task succeeded.
func (c *Client) reportWarnings(ctx context.Context, upid UPID, st TaskStatus) {
	if !warningsRe.MatchString(strings.TrimSpace(st.ExitStatus)) {
		return
	}
	f := taskObserverOf(ctx)
	if f == nil {
		return
	}
	f(st, c.taskWarnings(ctx, upid))
}

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

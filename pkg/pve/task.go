package pve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
type TaskStatus struct {
	UPID       string `json:"upid"`
	Node       string `json:"node"`
	Status     string `json:"status"` // running | stopped
	ExitStatus string `json:"exitstatus,omitempty"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	// User is the user a task runs as; for a token's task PVE names the
	// token apart in TokenID (pve-manager Tasks.pm convert_token_task).
	User    string `json:"user"`
	TokenID string `json:"tokenid,omitempty"`
}

const (
	logTailLines = 20
	// logFirstPage is read first; most failed tasks log less than this.
	logFirstPage = 500
	// maxPollFailures bounds how many consecutive status polls may fail on
	// the transport or with a 5xx before WaitTask gives up.
	maxPollFailures = 3
)

var warningsRe = lazyre.New(`^WARNINGS: \d+$`)

// succeeded reports whether a stopped task's exit status means success;
// "WARNINGS: n" is success (the object exists).
func succeeded(exit string) bool {
	exit = strings.TrimSpace(exit)
	return exit == "OK" || warningsRe.MatchString(exit)
}

// StartTask sends a request that starts a PVE task and returns its UPID.
// Lock-timeout 500s are retried with capped, jittered exponential backoff;
// nothing is re-sent once a task has started. An answer of null (the call
// finished synchronously) gives the zero UPID and no error.
func (c *Client) StartTask(ctx context.Context, method, path string, params url.Values) (UPID, error) {
	method = strings.ToUpper(method)
	tries := max(c.cfg.retries, 1)
	for attempt := 1; ; attempt++ {
		resp, err := c.DoRaw(ctx, method, path, params)
		if err == nil {
			return taskID(method, path, resp)
		}
		if method != http.MethodGet && mayHaveReached(err) {
			// The request may have reached PVE: a task may be running, so
			// sending it again could start a second one.
			return UPID{}, fmt.Errorf("%w (the request may have reached PVE and its task may be running: look before retrying)", err)
		}
		if !IsLockTimeout(err) || attempt >= tries {
			if IsLockTimeout(err) && attempt > 1 {
				return UPID{}, fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
			}
			return UPID{}, err
		}
		observe(ctx, TaskEvent{Phase: TaskLockRetry, Request: method + " " + path, Attempt: attempt, Err: err})
		if serr := Sleep(ctx, c.backoff(attempt)); serr != nil {
			return UPID{}, fmt.Errorf("%s %s: %w while retrying after a lock timeout", method, path, serr)
		}
	}
}

// backoff is the pause after the attempt-th lock timeout: base·2^(attempt-1),
// capped, with "equal jitter" so parallel appliers contending for one lock
// spread out but still wait at least half the step.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.retryBase
	for i := 1; i < attempt && d < c.cfg.retryCap; i++ {
		d *= 2
	}
	d = min(d, c.cfg.retryCap)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func taskID(method, path string, resp *Response) (UPID, error) {
	if isNull(resp.Data) {
		return UPID{}, nil
	}
	var s string
	if err := json.Unmarshal(resp.Data, &s); err != nil {
		return UPID{}, fmt.Errorf("%s %s: want a task id, got %s", method, path, truncate(compactJSON(resp.Data), 200))
	}
	u, err := ParseUPID(s)
	if err != nil {
		return UPID{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return u, nil
}

// WaitTask polls the task until it stops. "OK" and "WARNINGS: n" succeed;
// anything else is a *TaskError carrying the log tail. The exit status is
// scrubbed of secrets (a task may echo a parameter into it). ctx's
// TaskObserver hears when the wait begins and how it ended.
func (c *Client) WaitTask(ctx context.Context, upid UPID) (st *TaskStatus, err error) {
	if upid.IsZero() || upid.Node == "" {
		return nil, errors.New("wait for task: empty task id")
	}
	observe(ctx, TaskEvent{Phase: TaskWaiting, UPID: upid})
	var warnings []string
	defer func() {
		observe(ctx, TaskEvent{Phase: TaskDone, UPID: upid, Status: st, Warnings: warnings, Err: err})
	}()
	if c.cfg.taskTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.taskTimeout)
		defer cancel()
	}
	path := taskPath(upid) + "/status"
	started := time.Now()
	var lastRunning time.Duration // when a poll last saw it running
	failures := 0
	// The first poll waits a step too: a task that has just been started
	// is running (taskpoll.go).
	sent, looked := started, time.Duration(0)
	for polls := 0; ; polls++ {
		if err := c.nextPoll(ctx, upid.Type, polls, sent, looked); err != nil {
			return nil, c.waitAborted(ctx, upid, err)
		}
		var st TaskStatus
		sent = time.Now()
		err := c.Do(ctx, http.MethodGet, path, nil, &st)
		// PVE looked at the task about half a round trip after the poll
		// was sent: the schedule is kept in that time.
		looked = sent.Add(time.Since(sent) / 2).Sub(started)
		switch {
		case err == nil:
			failures = 0
			if st.Status == "stopped" {
				st.ExitStatus = scrub(st.ExitStatus, c.secretsOf(nil))
				if succeeded(st.ExitStatus) {
					// It ended between the last two polls.
					c.pacer.learn(upid.Type, c.pollSteps().observedEnd(lastRunning, looked))
					if warningsRe.MatchString(strings.TrimSpace(st.ExitStatus)) && hasObserver(ctx) {
						warnings = c.taskWarnings(ctx, upid)
					}
					return &st, nil
				}
				return &st, &TaskError{UPID: upid.Raw, ExitStatus: st.ExitStatus, LogTail: c.logTail(ctx, upid)}
			}
			lastRunning = looked
		case ctx.Err() != nil:
			return nil, c.waitAborted(ctx, upid, err)
		case isStatus(err, http.StatusBadRequest) && time.Since(started) < c.cfg.taskStartGrace:
			// The status file of a task that just started is not there yet.
		case transient(err):
			failures++
			if failures >= maxPollFailures {
				return nil, fmt.Errorf("wait for task %s: %w", upid.Raw, err)
			}
		default:
			return nil, fmt.Errorf("wait for task %s: %w", upid.Raw, err)
		}
	}
}

func (c *Client) waitAborted(ctx context.Context, upid UPID, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("wait for task %s: timed out, the task may still be running: %w", upid.Raw, ctx.Err())
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("wait for task %s: %w (the task may still be running)", upid.Raw, err)
}

// transient reports errors worth another status poll: no answer at all, or
// a 5xx such as PVE's internal proxy errors (595, 596, 599).
func transient(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var ae *APIError
	return errors.As(err, &ae) && ae.Status >= 500
}

func isStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// logLine is one entry of GET /nodes/{node}/tasks/{upid}/log.
type logLine struct {
	N int    `json:"n"`
	T string `json:"t"`
}

// taskLog reads limit lines of a task's log from line start (0-based) and
// the log's full length.
func (c *Client) taskLog(ctx context.Context, upid UPID, start, limit int) ([]logLine, int, error) {
	resp, err := c.DoRaw(ctx, http.MethodGet, taskPath(upid)+"/log", url.Values{
		"start": {strconv.Itoa(start)},
		"limit": {strconv.Itoa(limit)},
	})
	if err != nil {
		return nil, 0, err
	}
	var ls []logLine
	if !isNull(resp.Data) {
		if err := json.Unmarshal(resp.Data, &ls); err != nil {
			return nil, 0, err
		}
	}
	return ls, resp.Total, nil
}

// logTail fetches the last lines of a task's log. It is best effort: the
// task already failed, and that is the error to report.
func (c *Client) logTail(ctx context.Context, upid UPID) []string {
	lines, total, err := c.taskLog(ctx, upid, 0, logFirstPage)
	if err != nil {
		return nil
	}
	if total > len(lines) && len(lines) == logFirstPage {
		if more, _, err := c.taskLog(ctx, upid, total-logTailLines, logTailLines); err == nil && len(more) > 0 {
			lines = more
		}
	}
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	secrets := c.secretsOf(nil)
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, scrub(l.T, secrets))
	}
	return out
}

// RunTask is StartTask followed by WaitTask. A call that answers null instead
// of a UPID (some synchronous variants) succeeds immediately.
func (c *Client) RunTask(ctx context.Context, method, path string, params url.Values) error {
	upid, err := c.StartTask(ctx, method, path, params)
	if err != nil {
		return err
	}
	if upid.IsZero() {
		return nil
	}
	_, err = c.WaitTask(ctx, upid)
	return err
}

func taskPath(upid UPID) string {
	return "/nodes/" + url.PathEscape(upid.Node) + "/tasks/" + url.PathEscape(upid.Raw)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TaskRow is one row of GET /nodes/{node}/tasks. Status is the exit
// status of an ended task ("OK", "WARNINGS: n" or the error) and empty
// while it runs.
type TaskRow struct {
	UPID      string `json:"upid"`
	Type      string `json:"type"`
	ID        string `json:"id"`
	User      string `json:"user"`
	StartTime int64  `json:"starttime"`
	EndTime   int64  `json:"endtime,omitempty"`
	Status    string `json:"status,omitempty"`
}

// Running reports whether the task has not ended yet (PVE lists a running
// task without a status, or with "RUNNING").
func (r TaskRow) Running() bool { return r.Status == "" || r.Status == "RUNNING" }

// Succeeded reports whether an ended task succeeded ("OK" or "WARNINGS: n").
func (r TaskRow) Succeeded() bool { return !r.Running() && succeeded(r.Status) }

// NodeTasks lists GET /nodes/{node}/tasks, newest first, filtered by
// params (vmid, typefilter, source, limit…).
func (c *Client) NodeTasks(ctx context.Context, node string, params url.Values) ([]TaskRow, error) {
	var rows []TaskRow
	if err := c.Do(ctx, http.MethodGet, apiPath("nodes", node, "tasks"), params, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/pve"
)

// eventsVersion is the format_version of every JSON line of apply and
// destroy (docs/apply-events.schema.json).
const eventsVersion = "1"

// stillRunningEvery is how often a running change says it is still at it,
// as Terraform's "Still creating... [10s elapsed]".
const stillRunningEvery = 10 * time.Second

// progressView renders apply progress: plain lines, coloured lines on a
// terminal, or JSON lines. It implements planner.Hooks,
// planner.TaskHooks and planner.PhaseHooks, and so knows what is running
// at any moment and what it does (for the still-running lines and for
// interrupts).
type progressView struct {
	w    io.Writer
	json bool
	ok   lipgloss.Style
	bad  lipgloss.Style
	note lipgloss.Style
	// every is the still-running interval (0: none).
	every time.Duration
	// notices gets the lines about interrupts: w for humans, the error
	// stream beside JSON lines.
	notices io.Writer
	// secrets is where the one-time secrets block goes: w for humans, the
	// error stream beside JSON lines (which never hold a secret).
	secrets io.Writer

	mu      sync.Mutex
	running map[string]*runningChange // by address
	locks   map[string]bool           // lock retries shown: address + request
	aborted bool                      // a second interrupt stopped the waiting
	outputs []output                  // one-time values, shown once at the end
}

var (
	_ planner.TaskHooks  = (*progressView)(nil)
	_ planner.PhaseHooks = (*progressView)(nil)
)

// runningChange is a change between PreApply and PostApply.
type runningChange struct {
	c     *planner.Change
	start time.Time
	tasks []pve.UPID    // the tasks it waits for now (normally one)
	phase planner.Phase // what it does now, when its action does not say (zero: it does)
	stop  chan struct{}
}

// output is a one-time value a change produced (an API token's secret).
type output struct {
	addr, name, value string
}

func newProgressView(w io.Writer, asJSON, color bool) *progressView {
	// A renderer of our own: colour is decided by the CLI (flag, NO_COLOR,
	// terminal), not by lipgloss probing the process's stdout.
	r := lipgloss.NewRenderer(w)
	r.SetColorProfile(termenv.Ascii)
	if color {
		r.SetColorProfile(termenv.ANSI)
	}
	return &progressView{
		w: w, json: asJSON, secrets: w, notices: w, every: stillRunningEvery,
		running: map[string]*runningChange{}, locks: map[string]bool{},
		ok:   r.NewStyle().Foreground(lipgloss.Color("2")),
		bad:  r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		note: r.NewStyle().Foreground(lipgloss.Color("3")),
	}
}

// event writes one JSON line (typ and fields) or one human line. Human
// lines show tasks by their short name; JSON keeps full UPIDs.
func (v *progressView) event(typ string, c *planner.Change, fields map[string]any, line string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.eventLocked(typ, c, fields, line)
}

func (v *progressView) eventLocked(typ string, c *planner.Change, fields map[string]any, line string) {
	if v.json {
		ev := map[string]any{"format_version": eventsVersion, "type": typ, "time": time.Now().UTC().Format(time.RFC3339Nano)}
		if c != nil {
			ev["address"] = c.Address
			ev["action"] = c.Action.String()
		}
		maps.Copy(ev, fields)
		b, _ := json.Marshal(ev)
		fmt.Fprintln(v.w, string(b))
		return
	}
	fmt.Fprintln(v.w, pve.ShortenUPIDs(line))
}

func (v *progressView) PreApply(c *planner.Change) {
	if c.Action == planner.NoOp {
		return
	}
	rc := &runningChange{c: c, start: time.Now(), stop: make(chan struct{})}
	v.mu.Lock()
	v.running[c.Address] = rc
	v.mu.Unlock()
	v.event("change_start", c, nil, fmt.Sprintf("%s: %s...", c.Address, capitalize(progressVerb(c.Action))))
	if v.every > 0 {
		go v.tick(rc)
	}
}

// tick says every v.every that rc is still running, and which task it
// waits for, until rc ends.
func (v *progressView) tick(rc *runningChange) {
	t := time.NewTicker(v.every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-rc.stop:
			return
		case <-t.C:
		}
		elapsed := time.Duration(n) * v.every
		v.mu.Lock()
		if v.running[rc.c.Address] != rc { // ended while this tick waited for the lock
			v.mu.Unlock()
			return
		}
		verb := progressVerb(rc.c.Action)
		fields := map[string]any{"progress": "still_running", "elapsed_seconds": elapsed.Seconds()}
		detail := durfmt.Format(elapsed) + " elapsed"
		if ph := rc.phase; ph.Name != "" {
			verb = ph.Name
			pf := map[string]any{"name": ph.Name}
			if ph.Detail != "" {
				pf["detail"] = ph.Detail
				detail += ", " + ph.Detail
			}
			fields["phase"] = pf
		}
		fields["message"] = "still " + verb
		if len(rc.tasks) > 0 {
			u := rc.tasks[len(rc.tasks)-1]
			fields["task"] = taskFields(u)
			detail += ", task " + u.Type
		}
		v.eventLocked("change_progress", rc.c, fields,
			fmt.Sprintf("%s: Still %s… [%s]", rc.c.Address, verb, detail))
		v.mu.Unlock()
	}
}

func (v *progressView) PostApply(c *planner.Change, err error) {
	v.mu.Lock()
	rc := v.running[c.Address]
	delete(v.running, c.Address)
	aborted := v.aborted
	v.mu.Unlock()
	if c.Action == planner.NoOp && err == nil {
		return
	}
	var took time.Duration
	if rc != nil {
		close(rc.stop)
		took = durfmt.Round(time.Since(rc.start))
	}
	fields := map[string]any{"elapsed_seconds": took.Seconds()}
	if err != nil {
		fields["error"] = err.Error()
		shown := err.Error()
		if s := streamedError(err); s != "" {
			shown = s
		}
		line := fmt.Sprintf("%s: failed after %s: %s", c.Address, durfmt.Format(took), shown)
		if aborted && !isAnswer(err) {
			fields["outcome_unknown"] = true
			line = fmt.Sprintf("%s: stopped waiting after %s (outcome unknown): %v", c.Address, durfmt.Format(took), err)
		}
		v.event("change_failed", c, fields, paint(v.bad, line))
		return
	}
	noun := capitalize(c.Action.String())
	if c.Action == planner.ApplyNet {
		noun = "Network commit" // not "Apply complete" in the middle of an apply
	}
	v.event("change_complete", c, fields, paint(v.ok, fmt.Sprintf("%s: %s complete after %s", c.Address, noun, durfmt.Format(took))))
}

// Skipped: a kept resource is shown as it happens; changes that did not
// start are listed by the summary (in JSON only there).
func (v *progressView) Skipped(c *planner.Change, reason string) {
	if v.json {
		return
	}
	line := fmt.Sprintf("%s: not started: %s", c.Address, reason)
	switch {
	case c.Kept:
		line = fmt.Sprintf("%s: kept (%s)", c.Address, keptWhy(c))
	case reason == planner.ReasonInterrupted:
		line = fmt.Sprintf("%s: %s", c.Address, reason)
	}
	v.event("", c, nil, paint(v.note, line))
}

// keptWhy says why a destroy left a resource alone.
func keptWhy(c *planner.Change) string {
	if c.KeptFor != "" {
		return "protected " + c.KeptFor + " needs it"
	}
	return "protected"
}

func (v *progressView) Message(c *planner.Change, msg string) {
	v.event("change_progress", c, map[string]any{"progress": "message", "message": msg}, fmt.Sprintf("%s: %s", c.Address, msg))
}

// Phase keeps what a running change does now, for its still-running
// lines: "Still provisioning… [20s elapsed, app.yaml]" rather than its
// action's "Still creating…". The steps themselves come as messages.
func (v *progressView) Phase(c *planner.Change, p planner.Phase) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if rc := v.running[c.Address]; rc != nil {
		rc.phase = p
	}
}

// Task follows a change's PVE tasks. JSON lines report each; humans see
// only what needs them: a lock retry, once per request (warnings come as
// messages).
func (v *progressView) Task(c *planner.Change, ev pve.TaskEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rc := v.running[c.Address]
	switch ev.Phase {
	case pve.TaskWaiting:
		if rc != nil {
			rc.tasks = append(rc.tasks, ev.UPID)
		}
		if v.json {
			v.eventLocked("change_progress", c, map[string]any{"progress": "task_started", "task": taskFields(ev.UPID),
				"message": "waiting for task " + ev.UPID.Raw}, "")
		}
	case pve.TaskDone:
		if rc != nil {
			rc.tasks = slices.DeleteFunc(rc.tasks, func(u pve.UPID) bool { return u.Raw == ev.UPID.Raw })
		}
		if v.json {
			f := map[string]any{"progress": "task_done", "task": taskFields(ev.UPID)}
			switch {
			case ev.Status != nil:
				f["exit_status"] = ev.Status.ExitStatus
				f["message"] = "task " + ev.UPID.Raw + " finished: " + ev.Status.ExitStatus
			default:
				f["message"] = "stopped waiting for task " + ev.UPID.Raw + " (it may still be running)"
			}
			v.eventLocked("change_progress", c, f, "")
		}
	case pve.TaskLockRetry:
		key := c.Address + " " + ev.Request
		if v.locks[key] {
			return
		}
		v.locks[key] = true
		why := fmt.Sprint(ev.Err)
		var ae *pve.APIError
		var te *pve.TaskError
		switch {
		case errors.As(ev.Err, &ae):
			why = ae.Message
		case errors.As(ev.Err, &te): // the task failed on the lock and is started again
			why = te.ExitStatus
		}
		msg := fmt.Sprintf("locked in PVE (%s): retrying %s", why, ev.Request)
		f := map[string]any{"progress": "lock_retry", "message": msg, "request": ev.Request}
		if !ev.UPID.IsZero() {
			f["task"] = taskFields(ev.UPID)
		}
		v.eventLocked("change_progress", c, f, fmt.Sprintf("%s: %s", c.Address, msg))
	case pve.TaskFaultRetry, pve.TaskFound:
		// Each is rare and says something about the cluster: every one is shown.
		progress, msg := "fault_retry", fmt.Sprintf("%s failed in passing (%s); PVE did not start it: sending it again", ev.Request, pve.Brief(ev.Err))
		switch {
		case ev.Phase == pve.TaskFound && ev.UPID.IsZero(): // a clone found by its new guest alone
			progress, msg = "task_found", fmt.Sprintf("%s got no usable answer (%s), but PVE made it: adopted", ev.Request, pve.Brief(ev.Err))
		case ev.Phase == pve.TaskFound:
			progress, msg = "task_found", fmt.Sprintf("%s got no usable answer (%s), but PVE started its task %s: waiting for it", ev.Request, pve.Brief(ev.Err), ev.UPID.Raw)
		}
		f := map[string]any{"progress": progress, "message": msg, "request": ev.Request}
		if !ev.UPID.IsZero() {
			f["task"] = taskFields(ev.UPID)
		}
		v.eventLocked("change_progress", c, f, fmt.Sprintf("%s: %s", c.Address, msg))
	}
}

func taskFields(u pve.UPID) map[string]any {
	return map[string]any{"upid": u.Raw, "node": u.Node, "type": u.Type, "id": u.ID}
}

// Output keeps a one-time value for the end of the run. A sensitive one
// is announced by name only; its value appears once, in the block that
// summary prints, and nowhere else.
func (v *progressView) Output(c *planner.Change, name, value string, sensitive bool) {
	if !sensitive {
		v.event("output", c, map[string]any{"name": name, "value": value, "sensitive": false},
			fmt.Sprintf("%s: %s = %s", c.Address, name, value))
		return
	}
	v.mu.Lock()
	v.outputs = append(v.outputs, output{c.Address, name, value})
	v.mu.Unlock()
	v.event("output", c, map[string]any{"name": name, "sensitive": true},
		fmt.Sprintf("%s: %s received (shown once, at the end)", c.Address, name))
}

// runningCount is how many changes are in progress: each waits for its
// PVE task (or is about to start or read one).
func (v *progressView) runningCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.running)
}

// interrupted says, on the first interrupt, what apply now waits for.
func (v *progressView) interrupted() {
	n := v.runningCount()
	fmt.Fprintf(v.notices, "\nInterrupt received: waiting for %d running PVE task%s to finish (interrupt again to stop waiting)\n", n, plural(n))
}

// abandoned says, on the second interrupt, which tasks may go on in PVE
// without pvectl: full UPIDs, so they can be found in PVE's task list.
func (v *progressView) abandoned() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.aborted = true
	var lines []string
	for _, addr := range slices.Sorted(maps.Keys(v.running)) {
		rc := v.running[addr]
		for _, u := range rc.tasks {
			lines = append(lines, fmt.Sprintf("  %s (node %s, %s)", u.Raw, u.Node, addr))
		}
		if len(rc.tasks) == 0 {
			lines = append(lines, fmt.Sprintf("  %s: between PVE calls", addr))
		}
	}
	if len(lines) == 0 {
		fmt.Fprintln(v.notices, "\nInterrupt received again: stopped waiting.")
		return
	}
	fmt.Fprintln(v.notices, "\nInterrupt received again: stopped waiting. These PVE tasks may still be running:")
	for _, l := range lines {
		fmt.Fprintln(v.notices, l)
	}
}

// printSecrets writes the one-time secrets, once, in a block that says so.
func (v *progressView) printSecrets() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.outputs) == 0 {
		return
	}
	fmt.Fprintln(v.secrets)
	fmt.Fprintln(v.secrets, "----- BEGIN ONE-TIME SECRETS: PVE shows these once; store them now -----")
	for _, o := range v.outputs {
		fmt.Fprintf(v.secrets, "%s %s: %s\n", o.addr, o.name, o.value)
	}
	fmt.Fprintln(v.secrets, "----- END ONE-TIME SECRETS -----")
	v.outputs = nil
}

// paint styles text line by line: lipgloss pads a multi-line block to its
// widest line, which would leave trailing blanks on an error's log tail.
func paint(st lipgloss.Style, text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return strings.Join(lines, "\n")
}

func progressVerb(a planner.Action) string {
	switch a {
	case planner.Create:
		return "creating"
	case planner.Update:
		return "updating"
	case planner.Replace:
		return "replacing"
	case planner.Delete:
		return "destroying"
	case planner.Provision:
		return "provisioning"
	case planner.ApplyNet:
		return "committing staged network changes"
	}
	return "checking"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

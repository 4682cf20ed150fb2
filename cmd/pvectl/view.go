package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/pvectl/pvectl/pkg/planner"
)

// progressView renders apply progress: plain lines, coloured lines on a
// terminal, or JSON lines. It implements planner.Hooks.
type progressView struct {
	w    io.Writer
	json bool
	ok   lipgloss.Style
	bad  lipgloss.Style
	note lipgloss.Style

	mu      sync.Mutex
	start   map[string]time.Time
	outputs []output // one-time values, shown once at the end
	// secrets is where the one-time secrets block goes: w for humans, the
	// error stream beside JSON lines (which never hold a secret).
	secrets io.Writer
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
		w: w, json: asJSON, start: map[string]time.Time{}, secrets: w,
		ok:   r.NewStyle().Foreground(lipgloss.Color("2")),
		bad:  r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		note: r.NewStyle().Foreground(lipgloss.Color("3")),
	}
}

func (v *progressView) paint(s lipgloss.Style, text string) string { return s.Render(text) }

func (v *progressView) event(typ string, c *planner.Change, fields map[string]any, line string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.json {
		ev := map[string]any{"type": typ, "time": time.Now().UTC().Format(time.RFC3339Nano)}
		if c != nil {
			ev["address"] = c.Address
			ev["action"] = c.Action.String()
		}
		for k, val := range fields {
			ev[k] = val
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintln(v.w, string(b))
		return
	}
	fmt.Fprintln(v.w, line)
}

func (v *progressView) PreApply(c *planner.Change) {
	v.mu.Lock()
	v.start[c.Address] = time.Now()
	v.mu.Unlock()
	if c.Action == planner.NoOp {
		return
	}
	v.event("apply_start", c, nil, fmt.Sprintf("%s: %s...", c.Address, progressVerb(c.Action)))
}

func (v *progressView) PostApply(c *planner.Change, err error) {
	v.mu.Lock()
	took := roundDuration(time.Since(v.start[c.Address]))
	v.mu.Unlock()
	if err != nil {
		v.event("apply_errored", c, map[string]any{"error": err.Error()},
			v.paint(v.bad, fmt.Sprintf("%s: failed after %s: %v", c.Address, took, err)))
		return
	}
	if c.Action == planner.NoOp {
		return
	}
	v.event("apply_complete", c, map[string]any{"elapsed_seconds": took.Seconds()},
		v.paint(v.ok, fmt.Sprintf("%s: %s complete after %s", c.Address, doneNoun(c.Action), took)))
}

func (v *progressView) Skipped(c *planner.Change, reason string) {
	line := fmt.Sprintf("%s: not done: %s", c.Address, reason)
	if c.Kept {
		line = fmt.Sprintf("%s: kept (%s)", c.Address, keptWhy(c))
	}
	v.event("apply_skipped", c, map[string]any{"reason": reason}, v.paint(v.note, line))
}

// keptWhy says why a destroy left a resource alone.
func keptWhy(c *planner.Change) string {
	if c.KeptFor != "" {
		return "protected " + c.KeptFor + " needs it"
	}
	return "protected"
}

func (v *progressView) Message(c *planner.Change, msg string) {
	v.event("apply_progress", c, map[string]any{"message": msg}, fmt.Sprintf("%s: %s", c.Address, msg))
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

// summary says what was done and what was not.
func (v *progressView) summary(p *planner.Plan, res *planner.Result, verb string) {
	if res == nil {
		return
	}
	defer v.printSecrets()
	title := capitalize(verb)
	byAddr := map[string]*planner.Change{}
	for _, c := range p.Changes {
		byAddr[c.Address] = c
	}
	var done, failed, notDone, kept []string
	for _, a := range res.Done {
		if c := byAddr[a]; c != nil && c.Action != planner.NoOp {
			done = append(done, a)
		}
	}
	for a, err := range res.Failed {
		failed = append(failed, fmt.Sprintf("%s: %v", a, err))
	}
	for a, why := range res.Skipped {
		notDone = append(notDone, fmt.Sprintf("%s (%s)", a, why))
	}
	for a := range res.Kept {
		if c := byAddr[a]; c != nil {
			kept = append(kept, fmt.Sprintf("%s (%s)", a, keptWhy(c)))
		}
	}
	for _, l := range [][]string{done, failed, notDone, kept} {
		sort.Strings(l)
	}
	if v.json {
		v.event("summary", nil, map[string]any{"done": nonNil(done), "failed": nonNil(failed), "not_done": nonNil(notDone), "kept": nonNil(kept)}, "")
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(v.w, "  %s:\n", title)
		for _, it := range items {
			fmt.Fprintf(v.w, "    %s\n", it)
		}
	}
	keptNote := ""
	if len(kept) > 0 {
		keptNote = fmt.Sprintf(", %d kept (protected)", len(kept))
	}
	fmt.Fprintln(v.w)
	if len(failed) == 0 && len(notDone) == 0 {
		fmt.Fprintln(v.w, v.paint(v.ok, fmt.Sprintf("%s complete: %d changed%s.", title, len(done), keptNote)))
		section("kept", kept)
		return
	}
	fmt.Fprintln(v.w, v.paint(v.bad, fmt.Sprintf("%s incomplete: %d changed, %d failed, %d not done%s.", title, len(done), len(failed), len(notDone), keptNote)))
	section("done", done)
	section("failed", failed)
	section("not done", notDone)
	section("kept", kept)
	fmt.Fprintln(v.w, "Fix the cause and run the same command again: pvectl converges from wherever it stopped.")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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

func doneNoun(a planner.Action) string { return capitalize(a.String()) }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// roundDuration keeps two significant parts: 12ms, 1.3s, 2m5s.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/pve"
)

// doneNouns say what a done change of each action did, in the order the
// summary counts them: "2 created, 1 updated, 1 network commit".
var doneNouns = []struct {
	action    planner.Action
	one, many string
}{
	{action: planner.Create, one: "created", many: "created"},
	{action: planner.Update, one: "updated", many: "updated"},
	{action: planner.Replace, one: "replaced", many: "replaced"},
	{action: planner.Delete, one: "destroyed", many: "destroyed"},
	{action: planner.Provision, one: "provisioned", many: "provisioned"},
	{action: planner.ApplyNet, one: "network commit", many: "network commits"},
}

// item is one line of a summary list: an address and what to say of it.
type item struct {
	Address string `json:"address"`
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	// Shown is the text summary's reason when it differs from Reason (a
	// provisioning failure without the output printed as it ran).
	Shown string `json:"-"`
}

// outcome sorts a Result into the summary's lists.
type outcome struct {
	counts                            map[string]int // done changes per action name
	done, failed, notStarted, unknown []item
	kept                              []item
	// reverted were made and then undone by a failed network commit's
	// revert; warnings are one item per task that succeeded with
	// "WARNINGS: n" (its change is done).
	reverted, warnings []item
	// notPlanned were left out of the plan: their node is down.
	notPlanned  []planner.NotPlanned
	interrupted bool
}

func summarize(p *planner.Plan, res *planner.Result) outcome {
	o := outcome{counts: map[string]int{}, interrupted: res.Interrupted}
	byAddr := map[string]*planner.Change{}
	for _, c := range p.Changes {
		byAddr[c.Address] = c
	}
	action := func(a string) string {
		if c := byAddr[a]; c != nil {
			return c.Action.String()
		}
		return ""
	}
	for _, a := range res.Done {
		if c := byAddr[a]; c != nil && c.Action != planner.NoOp {
			o.done = append(o.done, item{Address: a, Action: c.Action.String()})
			o.counts[c.Action.String()]++
		}
	}
	for _, a := range slices.Sorted(maps.Keys(res.Failed)) {
		o.failed = append(o.failed, item{Address: a, Action: action(a), Reason: res.Failed[a].Error(), Shown: streamedError(res.Failed[a])})
		// A replace that destroyed the old object and failed to make the
		// new one did destroy: the count says so, beside the failure.
		if re := (*planner.ReplaceError)(nil); errors.As(res.Failed[a], &re) {
			o.counts[planner.Delete.String()]++
		}
	}
	for _, a := range slices.Sorted(maps.Keys(res.Unknown)) {
		o.unknown = append(o.unknown, item{Address: a, Action: action(a), Reason: res.Unknown[a].Error()})
	}
	for _, a := range slices.Sorted(maps.Keys(res.Skipped)) {
		o.notStarted = append(o.notStarted, item{Address: a, Action: action(a), Reason: res.Skipped[a]})
	}
	for _, a := range slices.Sorted(maps.Keys(res.Reverted)) {
		o.reverted = append(o.reverted, item{Address: a, Action: action(a), Reason: res.Reverted[a]})
	}
	for _, a := range slices.Sorted(maps.Keys(res.Warnings)) {
		for _, w := range res.Warnings[a] {
			o.warnings = append(o.warnings, item{Address: a, Action: action(a), Reason: w})
		}
	}
	o.notPlanned = p.NotPlanned
	for _, a := range slices.Sorted(maps.Keys(res.Kept)) {
		if c := byAddr[a]; c != nil {
			o.kept = append(o.kept, item{Address: a, Action: c.Action.String(), Reason: keptWhy(c)})
		}
	}
	return o
}

// countLine is "2 created, 1 updated, 1 network commit" ("0 changed" when
// nothing was done).
func (o outcome) countLine() string {
	var parts []string
	for _, n := range doneNouns {
		k := o.counts[n.action.String()]
		switch {
		case k == 1:
			parts = append(parts, "1 "+n.one)
		case k > 1:
			parts = append(parts, fmt.Sprintf("%d %s", k, n.many))
		}
	}
	if len(parts) == 0 {
		return "0 changed"
	}
	return strings.Join(parts, ", ")
}

// summary says what was done and what was not.
func (v *progressView) summary(p *planner.Plan, res *planner.Result, verb string) {
	if res == nil {
		return
	}
	defer v.printSecrets()
	o := summarize(p, res)
	state := o.state()
	if v.json {
		v.event("summary", nil, map[string]any{
			"operation": verb, "outcome": state, "counts": o.counts,
			"done": nonNil(o.done), "failed": nonNil(o.failed), "not_started": nonNil(o.notStarted),
			"unknown": nonNil(o.unknown), "kept": nonNil(o.kept),
			"reverted": nonNil(o.reverted), "warnings": nonNil(o.warnings),
			"not_planned": nonNil(o.notPlanned),
		}, "")
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.printSummary(o, verb, state)
}

// state is the outcome in one word: complete, interrupted or incomplete.
func (o outcome) state() string {
	switch {
	case o.interrupted:
		return "interrupted"
	case len(o.failed)+len(o.notStarted)+len(o.unknown)+len(o.notPlanned) > 0:
		return "incomplete"
	}
	return "complete"
}

// printSummary is the text summary (v.mu held): the count line, then one
// section per list that has items, then what to do next when the run did
// not complete.
func (v *progressView) printSummary(o outcome, verb, state string) {
	w := v.w
	keptNote := o.keptNote()
	title := capitalize(verb)
	fmt.Fprintln(w)
	if state == "complete" {
		fmt.Fprintln(w, paint(v.ok, fmt.Sprintf("%s complete: %s%s.", title, o.countLine(), keptNote)))
		printSection(w, "kept", o.kept, withReason)
		printSection(w, "task warnings (done, but read them)", o.warnings, withError)
		return
	}
	line := fmt.Sprintf("%s %s: %s", title, state, o.countLine())
	if not := o.notDone(); len(not) > 0 {
		line += "; " + strings.Join(not, ", ")
	}
	fmt.Fprintln(w, paint(v.bad, line+keptNote+"."))
	printSection(w, "done", o.done, func(it item) string { return it.Address + " (" + doneNoun(it.Action) + ")" })
	printSection(w, "failed", o.failed, withError)
	printSection(w, "outcome unknown (stopped waiting; the PVE task may still be running)", o.unknown, withError)
	printSection(w, "not started", o.notStarted, func(it item) string {
		if it.Reason == planner.ReasonInterrupted {
			return it.Address + " (interrupted)"
		}
		return withReason(it)
	})
	printSection(w, "reverted (made, then undone)", o.reverted, withReason)
	notPlanned := make([]item, len(o.notPlanned))
	for i, n := range o.notPlanned {
		notPlanned[i] = item{Address: n.Address, Reason: n.Reason}
	}
	printSection(w, "not planned (their node is down; run again once it is back)", notPlanned, withError)
	printSection(w, "kept", o.kept, withReason)
	printSection(w, "task warnings (done, but read them)", o.warnings, withError)
	if state == "interrupted" {
		fmt.Fprintf(w, "Run the same command again to finish: pvectl converges from wherever it stopped.\n")
		return
	}
	fmt.Fprintln(w, "Fix the cause and run the same command again: pvectl converges from wherever it stopped.")
}

// keptNote follows the count line: ", 1 kept (protected), 2 task
// warnings", "" when there are neither.
func (o outcome) keptNote() string {
	note := ""
	if len(o.kept) > 0 {
		note = fmt.Sprintf(", %d kept (protected)", len(o.kept))
	}
	if n := len(o.warnings); n > 0 {
		note += fmt.Sprintf(", %d task warning%s", n, plural(n))
	}
	return note
}

// notDone counts what was not done: "1 failed", "2 not started" …
func (o outcome) notDone() []string {
	var not []string
	if n := len(o.failed); n > 0 {
		not = append(not, fmt.Sprintf("%d failed", n))
	}
	if n := len(o.unknown); n > 0 {
		not = append(not, fmt.Sprintf("%d outcome unknown", n))
	}
	if n := len(o.notStarted); n > 0 {
		not = append(not, fmt.Sprintf("%d not started", n))
	}
	if n := len(o.reverted); n > 0 {
		not = append(not, fmt.Sprintf("%d reverted", n))
	}
	if n := len(o.notPlanned); n > 0 {
		not = append(not, fmt.Sprintf("%d not planned", n))
	}
	return not
}

// printSection writes a titled list of items, one line each (show), or
// nothing when there are none.
func printSection(w io.Writer, title string, items []item, show func(item) string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", title)
	for _, it := range items {
		fmt.Fprintf(w, "    %s\n", pve.ShortenUPIDs(indentMore(show(it))))
	}
}

// withReason shows an item as its address and reason in parentheses.
func withReason(it item) string { return it.Address + " (" + it.Reason + ")" }

// withError shows an item as its address and error (Shown, when set).
func withError(it item) string {
	if it.Shown != "" {
		return it.Address + ": " + it.Shown
	}
	return it.Address + ": " + it.Reason
}

// indentMore keeps the continuation lines of a multi-line error (a task
// log tail) under their item.
func indentMore(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

func doneNoun(action string) string {
	for _, n := range doneNouns {
		if n.action.String() == action {
			return n.one
		}
	}
	return action
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// isAnswer reports whether err is PVE's own verdict (a failed task, a
// refused request) rather than a wait or request that was cut short.
func isAnswer(err error) bool {
	var te *pve.TaskError
	var ae *pve.APIError
	return errors.As(err, &te) || errors.As(err, &ae)
}

// streamedError is err's text without the output tail of a provisioning
// file that failed: the text view printed that output line by line as it
// ran (the "| " lines), so it is shown once. "" for other errors, and for
// a failure with no output (its text says all there is).
func streamedError(err error) string {
	var re *provision.RunError
	if !errors.As(err, &re) || len(re.Tail) == 0 {
		return ""
	}
	return strings.Replace(err.Error(), re.Error(), re.Brief()+" (its output is above)", 1)
}

package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Options tunes Human.
type Options struct {
	Color bool // ANSI colours (the CLI turns them off for --no-color, NO_COLOR, non-TTYs)
}

// verbs say what a change will do, after "# Kind/name".
var verbs = map[planner.Action]string{
	planner.Create:    "will be created",
	planner.Update:    "will be updated in-place",
	planner.Replace:   "must be replaced",
	planner.Delete:    "will be destroyed",
	planner.Provision: "will be provisioned",
	planner.ApplyNet:  "will commit staged network changes",
}

// verbOf is what c will do: a commit names what it commits (network,
// SDN configuration).
func verbOf(c *planner.Change) string {
	if c.Action == planner.ApplyNet && c.Resource != nil {
		if what := planner.Commits(c.Resource.Kind); what != "" {
			return "will commit staged " + what + " changes"
		}
	}
	return verbs[c.Action]
}

type palette struct {
	add, change, remove, note lipgloss.Style
}

func newPalette(w io.Writer, color bool) palette {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return palette{
		add:    r.NewStyle().Foreground(lipgloss.Color("2")),
		change: r.NewStyle().Foreground(lipgloss.Color("3")),
		remove: r.NewStyle().Foreground(lipgloss.Color("1")),
		note:   r.NewStyle().Faint(true),
	}
}

func (pl palette) action(a planner.Action) lipgloss.Style {
	switch a {
	case planner.Create:
		return pl.add
	case planner.Delete, planner.Replace:
		return pl.remove
	}
	return pl.change
}

// Human writes the plan the way Terraform users expect to read it.
func Human(w io.Writer, p *planner.Plan, opts Options) error {
	pl := newPalette(w, opts.Color)
	var b strings.Builder
	if !p.HasChanges() {
		// A destroy that keeps only protected resources still says why, and
		// so does a node with staged changes nothing here commits.
		notes := 0
		for _, c := range p.Changes {
			if note := noopNote(c); note != "" {
				b.WriteString(note + "\n")
				notes++
			}
		}
		if ob := orphansBlock(pl, p); ob != "" {
			b.WriteString(strings.TrimPrefix(ob, "\n"))
			notes++
		}
		switch {
		case len(p.NotPlanned) > 0:
			b.WriteString("No changes to what can be seen now.\n" + notPlannedBlock(pl, p))
		case p.Destroy:
			b.WriteString("Nothing to destroy.\n")
		case notes > 0:
			b.WriteString("No changes to make; see the notes above.\n")
		default:
			b.WriteString("No changes. Live state matches the specs.\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("pvectl will perform the following actions:\n")
	for _, c := range p.Changes {
		if c.Action == planner.NoOp {
			if note := noopNote(c); note != "" {
				b.WriteString("\n" + note + "\n")
			}
			continue
		}
		st := pl.action(c.Action)
		verb := verbOf(c)
		if c.Action == planner.Replace && c.CreateFirst {
			verb += " (the new one is created before the old one is destroyed)"
		}
		fmt.Fprintf(&b, "\n  # %s %s\n", c.Address, verb)
		fmt.Fprintf(&b, "  %s %s%s\n", st.Render(c.Symbol()), c.Address, renamedNote(c))
		for _, d := range c.Diff {
			b.WriteString(field(pl, d, "      "))
		}
		for _, s := range c.Provision {
			b.WriteString("      " + pl.change.Render(">") + " run " + s.File + " (" + s.Reason + ")\n")
		}
		for _, r := range c.Reasons {
			if len(c.Provision) > 0 && strings.HasPrefix(r, "provision: ") {
				continue // listed above, file by file
			}
			if echoesDiff(r, c.Diff) || (c.Action == planner.Create && r == "does not exist") {
				continue // the diff line, or the verb, says it
			}
			b.WriteString("      " + pl.note.Render("# "+r) + "\n")
		}
	}
	b.WriteString(orphansBlock(pl, p))
	b.WriteString(notPlannedBlock(pl, p))
	b.WriteString("\n" + summaryLine(p.Summary()) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// quietReasons are noop reasons that say nothing the user must act on.
var quietReasons = map[string]bool{"does not exist": true, "nothing to remove": true, "managed: false: read only": true, "recipe unchanged": true}

// noopNote is what the plan says about a change that does nothing: why a
// destroy keeps it, or a reason worth reading (a VM locked by a task,
// network changes left staged); "" for plain noops.
func noopNote(c *planner.Change) string {
	if note := keptNote(c); note != "" {
		return note
	}
	if c.Action != planner.NoOp {
		return ""
	}
	var notes []string
	for _, r := range c.Reasons {
		if !quietReasons[r] {
			notes = append(notes, fmt.Sprintf("  # %s: %s", c.Address, r))
		}
	}
	return strings.Join(notes, "\n")
}

// keptNote is the line for a resource a destroy keeps because it, or a
// resource needing it, is protected ("" for other noops).
func keptNote(c *planner.Change) string {
	if !c.Kept {
		return ""
	}
	if c.KeptFor != "" {
		return fmt.Sprintf("  # %s will be kept: protected %s needs it", c.Address, c.KeptFor)
	}
	return fmt.Sprintf("  # %s is protected and will be kept", c.Address)
}

// field renders one diff as its line(s), each starting with indent: a
// multi-line text (a description, cloud-init user data) as a line diff.
func field(pl palette, d planner.FieldDiff, indent string) string {
	d = shown(d)
	if d.Line != "" {
		st := map[string]lipgloss.Style{"+": pl.add, "-": pl.remove, "~": pl.change}[itemSymbol(d)]
		return indent + st.Render(itemSymbol(d)) + " " + d.Line + "\n"
	}
	if lines, ok := textDiff(d.Before, d.After); ok {
		var b strings.Builder
		b.WriteString(indent + pl.change.Render("~") + " " + d.Shown() + ":\n")
		for _, l := range lines {
			st := pl.note
			switch l.op {
			case '+':
				st = pl.add
			case '-':
				st = pl.remove
			}
			b.WriteString(indent + "    " + st.Render(string(l.op)) + " " + l.text + "\n")
		}
		return b.String()
	}
	switch {
	case d.Before == nil:
		return indent + pl.add.Render("+") + " " + d.Shown() + ": " + value(d.After) + "\n"
	case d.After == nil:
		return indent + pl.remove.Render("-") + " " + d.Shown() + ": " + value(d.Before) + "\n"
	}
	return indent + pl.change.Render("~") + " " + d.Shown() + ": " + value(d.Before) + " → " + value(d.After) + "\n"
}

// itemSymbol is a list item's marker: "+" added, "-" removed, "~"
// changed or moved.
func itemSymbol(d planner.FieldDiff) string {
	switch {
	case d.Before == nil:
		return "+"
	case d.After == nil:
		return "-"
	}
	return "~"
}

// number is a value PVE's wire form carries as a string but people read
// as a number: shown without quotes.
var number = lazyre.New(`^-?[0-9]+(\.[0-9]+)?$`)

func value(v any) string {
	if s, ok := v.(string); ok {
		if number.MatchString(s) {
			return s
		}
		if spec.HasOutputRef(s) {
			// Another resource's output, put in at apply time.
			return fmt.Sprintf("%q (known after apply)", s)
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// renamedNote is " (renamed from OLD)" for a change that renames its
// object in place (renamedFrom), "" otherwise.
func renamedNote(c *planner.Change) string {
	for _, r := range c.Reasons {
		if old, ok := strings.CutPrefix(r, "renamed from "); ok {
			old, _, _ = strings.Cut(old, " ")
			return " (renamed from " + old + ")"
		}
	}
	return ""
}

// echoesDiff reports a reason that only repeats a diff line ("memory
// changed" beside "~ memory: 2048 → 4096"); the JSON keeps it.
func echoesDiff(reason string, diffs []planner.FieldDiff) bool {
	key, verb, ok := strings.Cut(reason, " ")
	if !ok || (verb != "changed" && verb != "added" && verb != "removed") {
		return false
	}
	for _, d := range diffs {
		if top, _, _ := strings.Cut(d.Path, "."); top == key {
			return true
		}
	}
	return false
}

func summaryLine(s planner.Summary) string {
	line := fmt.Sprintf("Plan: %d to create, %d to update, %d to replace, %d to destroy", s.Create, s.Update, s.Replace, s.Delete)
	if s.Provision > 0 {
		line += fmt.Sprintf(", %d to provision", s.Provision)
	}
	if s.Apply == 1 {
		line += ", 1 network commit"
	} else if s.Apply > 1 {
		line += fmt.Sprintf(", %d network commits", s.Apply)
	}
	return line + "."
}

type jsonPlan struct {
	FormatVersion string       `json:"format_version"`
	Changes       []jsonChange `json:"changes"`
	Summary       jsonSummary  `json:"summary"`
	// NotPlanned lists what the plan leaves out because its live state
	// cannot be known now (a node offline or unreachable); absent when none.
	NotPlanned []planner.NotPlanned `json:"not_planned,omitempty"`
	// Orphans lists what the plan's stack made and no document names
	// (removed only with --prune); absent when none.
	Orphans []planner.Orphan `json:"orphans,omitempty"`
}

type jsonChange struct {
	Address string              `json:"address"`
	Action  string              `json:"action"`
	Diff    []planner.FieldDiff `json:"diff"`
	Reasons []string            `json:"reasons"`
	// Provision lists the provisioning files the change runs, and why;
	// absent when it runs none.
	Provision []planner.ProvisionStep `json:"provision,omitempty"`
}

// contractDiff is a diff as the JSON contract has it: path, before,
// after (a list item's display line is the human plan's only).
func contractDiff(ds []planner.FieldDiff) []planner.FieldDiff {
	out := make([]planner.FieldDiff, len(ds))
	for i, d := range ds {
		out[i] = planner.FieldDiff{Path: d.Path, Before: d.Before, After: d.After}
	}
	return out
}

type jsonSummary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Replace   int `json:"replace"`
	Delete    int `json:"delete"`
	Provision int `json:"provision"`
	NoOp      int `json:"noop"`
}

// JSON writes the plan JSON of the CLI contract (`plan --json`): every
// change, noops included, with diff and reasons never null.
func JSON(w io.Writer, p *planner.Plan) error {
	s := p.Summary()
	out := jsonPlan{
		FormatVersion: planner.FormatVersion,
		Changes:       []jsonChange{},
		Summary:       jsonSummary{Create: s.Create, Update: s.Update, Replace: s.Replace, Delete: s.Delete, Provision: s.Provision, NoOp: s.NoOp},
		NotPlanned:    p.NotPlanned,
		Orphans:       p.Orphans,
	}
	for _, c := range p.Changes {
		jc := jsonChange{Address: c.Address, Action: c.Action.String(), Diff: contractDiff(c.Diff), Reasons: c.Reasons, Provision: c.Provision}
		if jc.Reasons == nil {
			jc.Reasons = []string{}
		}
		out.Changes = append(out.Changes, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

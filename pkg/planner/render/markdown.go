package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
)

// Markdown writes the plan for a pull-request comment: the summary line, a
// table of the changes, and each change's diff in a collapsed <details>
// block, as GitHub and GitLab render them. It reads the same Changes as
// Human; secrets are already out of them (a plan's diff shows a secret as
// "(sensitive)", and plan files carry none).
func Markdown(w io.Writer, p *planner.Plan) error {
	var b strings.Builder
	b.WriteString("### pvectl plan\n\n")
	if !p.HasChanges() {
		if p.Destroy {
			b.WriteString("Nothing to destroy.\n")
		} else {
			b.WriteString("No changes. Live state matches the specs.\n")
		}
		b.WriteString(markdownOrphans(p))
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("**" + summaryLine(p.Summary()) + "**\n\n")
	b.WriteString("| | Resource | Action |\n|---|---|---|\n")
	for _, c := range p.Changes {
		if c.Action == planner.NoOp {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Symbol(), codeSpan(c.Address), cell(verb(c)))
	}
	for _, c := range p.Changes {
		if c.Action == planner.NoOp {
			continue
		}
		body := changeLines(c)
		// Inside <summary> Markdown is not rendered: HTML, escaped.
		fmt.Fprintf(&b, "\n<details><summary><code>%s</code> %s</summary>\n\n", htmlEscape(c.Address), htmlEscape(verb(c)))
		if len(body) == 0 {
			b.WriteString("No field changes.\n")
		} else {
			fence := fenceFor(body)
			b.WriteString(fence + "diff\n")
			for _, l := range body {
				b.WriteString(l + "\n")
			}
			b.WriteString(fence + "\n")
		}
		b.WriteString("\n</details>\n")
	}
	b.WriteString(markdownOrphans(p))
	_, err := io.WriteString(w, b.String())
	return err
}

func verb(c *planner.Change) string {
	v := verbOf(c)
	if c.Action == planner.Replace && c.CreateFirst {
		v += " (create before destroy)"
	}
	return v
}

// changeLines are a change's diff, provisioning steps and reasons as
// lines of a ```diff block: "+" added, "-" removed, "!" changed (diff
// highlighting colours the first two; "~" would be plain text).
func changeLines(c *planner.Change) []string {
	var out []string
	for _, d := range c.Diff {
		d = shown(d)
		if d.Line != "" {
			out = append(out, strings.Replace(itemSymbol(d), "~", "!", 1)+" "+oneLine(d.Line))
			continue
		}
		if lines, ok := textDiff(d.Before, d.After); ok {
			out = append(out, "! "+d.Shown()+":")
			for _, l := range lines {
				out = append(out, string(l.op)+"     "+l.text)
			}
			continue
		}
		switch {
		case d.Before == nil:
			out = append(out, "+ "+d.Shown()+": "+oneLine(value(d.After)))
		case d.After == nil:
			out = append(out, "- "+d.Shown()+": "+oneLine(value(d.Before)))
		default:
			out = append(out, "! "+d.Shown()+": "+oneLine(value(d.Before))+" → "+oneLine(value(d.After)))
		}
	}
	for _, s := range c.Provision {
		out = append(out, "# run "+s.File+" ("+s.Reason+")")
	}
	for _, r := range c.Reasons {
		if len(c.Provision) > 0 && strings.HasPrefix(r, "provision: ") ||
			echoesDiff(r, c.Diff) || c.Action == planner.Create && r == "does not exist" {
			continue
		}
		out = append(out, "# "+oneLine(r))
	}
	return out
}

// oneLine keeps a value on its line of the block.
func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// fenceFor is a backtick fence longer than any run of backticks in the
// lines, so no value can close the block early.
func fenceFor(lines []string) string {
	longest := 0
	for _, l := range lines {
		longest = max(longest, longestRun(l, '`'))
	}
	return strings.Repeat("`", max(3, longest+1))
}

// codeSpan is s as inline code whatever backticks it holds (CommonMark:
// a longer delimiter, padded with spaces when s starts or ends with one).
func codeSpan(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + cell(s) + fence
}

func longestRun(s string, c rune) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// cell keeps a value inside its table cell: a pipe would end it, a
// newline the row.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

package render

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
)

// orphansBlock lists the objects the plan's stack made that no document
// names (planner owner.go), one line each — "# QemuVM/worker-1 (vmid
// 101): made by this stack, in no spec — --prune to remove" —, and the
// connections where they could not be looked for; "" when there are none.
func orphansBlock(pl palette, p *planner.Plan) string {
	var b strings.Builder
	for _, o := range p.Orphans {
		line := "# " + o.Address + " (" + o.What + "): made by this stack, in no spec — --prune to remove"
		if o.Protected {
			line = "# " + o.Address + " (" + o.What + "): made by this stack, in no spec; protected in PVE (protection: 1), so --prune keeps it"
		}
		b.WriteString("  " + pl.note.Render(line) + "\n")
	}
	for _, why := range p.OwnedUnread {
		b.WriteString("  " + pl.note.Render("# objects made by this stack were not looked for ("+why+"): none is pruned there") + "\n")
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n" + b.String()
}

// markdownOrphans lists the orphans for a pull-request comment ("" when
// there are none): they change nothing, but a reviewer should know.
func markdownOrphans(p *planner.Plan) string {
	if len(p.Orphans) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nMade by this stack, in no spec (`--prune` removes them):\n\n")
	for _, o := range p.Orphans {
		line := "- " + codeSpan(o.Address) + " (" + o.What + ")"
		if o.Protected {
			line += ", protected in PVE: `--prune` keeps it"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

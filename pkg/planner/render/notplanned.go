package render

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
)

// notPlannedBlock is what the plan says about the resources it leaves
// out because their live state cannot be known now (planner
// degraded.go): one line each, "QemuVM/db: on node pve2, which is
// offline — not planned"; "" when there are none.
func notPlannedBlock(pl palette, p *planner.Plan) string {
	if len(p.NotPlanned) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n" + pl.change.Render("Warning:") + " not planned, their live state cannot be known now (nothing is created, changed or removed for them):\n")
	for _, n := range p.NotPlanned {
		b.WriteString("  " + pl.change.Render("?") + " " + n.String() + "\n")
	}
	return b.String()
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
)

// privilegeModes are plan's --privileges values.
var privilegeModes = []string{"warn", "strict"}

// printGrants tells, after a review plan, what the token lacks for the
// planned changes: the fewest grants that fix it, each with the changes
// that need it and the pveum command. Nothing when it lacks nothing.
func printGrants(w io.Writer, p *planner.Plan) {
	grants := planner.Grants(p.PrivilegeWarnings)
	if len(grants) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nWarning: the token may not make %s of these changes: `pvectl apply` will refuse them, before any write, until it may.\n", countChanges(grants))
	b.WriteString("The fewest grants that fix it (or apply with a token that holds them):\n")
	for _, g := range grants {
		if g.RootOnly {
			fmt.Fprintf(&b, "  - %s: %s\n", strings.Join(g.Changes, ", "), g.Message)
			continue
		}
		user, _, _ := strings.Cut(g.Token, "!")
		fmt.Fprintf(&b, "  - grant %s on %s to %s — needed by %d change%s (%s)\n", g.Role, g.Path, g.Token, len(g.Changes), plural(len(g.Changes)), changeList(g.Changes))
		fmt.Fprintf(&b, "      pveum acl modify %s --roles %s --tokens '%s' --users %s\n", g.Path, g.Role, g.Token, user)
	}
	b.WriteString("A review plan made with a read-only token is expected to warn so; --privileges=strict refuses instead.\n")
	_, _ = io.WriteString(w, b.String())
}

func countChanges(grants []planner.Grant) string {
	seen := map[string]bool{}
	for _, g := range grants {
		for _, c := range g.Changes {
			seen[c] = true
		}
	}
	if len(seen) == 1 {
		return "1"
	}
	return fmt.Sprint(len(seen))
}

// changeList names up to three changes, then how many more.
func changeList(addrs []string) string {
	if len(addrs) <= 3 {
		return strings.Join(addrs, ", ")
	}
	return strings.Join(addrs[:3], ", ") + fmt.Sprintf(" and %d more", len(addrs)-3)
}

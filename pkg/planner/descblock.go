package planner

import (
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// pvectl remembers what it needs in the guest's description, beside the
// user's own text: blocks like "[pvectl-provision: a.yaml=…,b.yaml=…]" and
// the legacy "[puls-provision: …]" of the tool pvectl replaces. The text
// around them is the user's, kept byte for byte.
var descBlockRE = lazyre.New(`\[(?:pvectl-[a-z][a-z0-9-]*|puls-provision): [^\]\n]*\]`)

// splitDescription separates the user's text from pvectl's blocks. The
// blocks are returned as written, in order; the user's text loses them and
// its trailing line breaks (pvectl puts one before its block, PVE may add
// one at the end).
func splitDescription(desc string) (user string, blocks []string) {
	locs := descBlockRE.FindAllStringIndex(desc, -1)
	if len(locs) == 0 {
		return strings.TrimRight(desc, "\n"), nil
	}
	var b strings.Builder
	prev := 0
	for _, l := range locs {
		b.WriteString(desc[prev:l[0]])
		blocks = append(blocks, desc[l[0]:l[1]])
		prev = l[1]
	}
	b.WriteString(desc[prev:])
	return strings.TrimRight(b.String(), "\n"), blocks
}

// userDescription is a description without pvectl's blocks: what a spec's
// `description` is compared with.
func userDescription(desc string) string {
	user, _ := splitDescription(desc)
	return user
}

// withBlocks is the description to write when the spec sets text: the
// user's new text with pvectl's live blocks kept after it.
func withBlocks(text, live string) string {
	_, blocks := splitDescription(live)
	if len(blocks) == 0 {
		return text
	}
	out := strings.TrimRight(text, "\n")
	for _, blk := range blocks {
		if out != "" {
			out += "\n"
		}
		out += blk
	}
	return out
}

// Package marks reads and writes what pvectl keeps in fields PVE stores
// for it: its blocks in a guest's description (provisioning hashes, the
// owner mark) beside the user's own text, and the owner tag. Every kind
// compares and writes those fields through it, so the user's text is kept
// byte for byte.
package marks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// pvectl remembers what it needs in the guest's description, beside the
// user's own text: blocks like "[pvectl-provision: a.yaml=…,b.yaml=…]" and
// the legacy "[puls-provision: …]" of the tool pvectl replaces. The text
// around them is the user's, kept byte for byte.
var descBlockRE = lazyre.New(`\[(?:pvectl-[a-z][a-z0-9-]*|puls-provision): [^\]\n]*\]`)

// SplitDescription separates the user's text from pvectl's blocks. The
// blocks are returned as written, in order; the user's text loses them and
// its trailing line breaks (pvectl puts one before its block, PVE may add
// one at the end).
func SplitDescription(desc string) (user string, blocks []string) {
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

// UserDescription is a description without pvectl's blocks: what a spec's
// `description` is compared with.
func UserDescription(desc string) string {
	user, _ := SplitDescription(desc)
	return user
}

// WithBlocks is the description to write when the spec sets text: the
// user's new text with pvectl's live blocks kept after it.
func WithBlocks(text, live string) string {
	_, blocks := SplitDescription(live)
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

// OwnerTag is the guest tag that says "look at my description's owner
// mark": /cluster/resources lists every guest's tags, so finding owned
// guests reads only the configs of tagged ones. A tag is a pve-tag
// (pve-common src/PVE/JSONSchema.pm $PVE_TAG_RE).
const OwnerTag = "pvectl"

// ownerMarkRE is the owner block of a guest's description; a block like
// pvectl's others (above), so the user's text and provisioning's
// blocks are kept around it.
var ownerMarkRE = lazyre.New(`\[pvectl-owner: stack=([A-Za-z0-9][A-Za-z0-9_.-]*),vmid=([0-9]+)\]`)

// OwnerMark is the block that names stack as the owner of guest vmid. The
// vmid binds it to this guest: a clone made by hand copies description
// and tags, and must not look owned.
func OwnerMark(stack string, vmid int) string {
	return fmt.Sprintf("[pvectl-owner: stack=%s,vmid=%d]", stack, vmid)
}

// ParseOwnerMark reads the owner block of a description (ok false: none).
func ParseOwnerMark(desc string) (stack string, vmid int, ok bool) {
	m := ownerMarkRE.FindStringSubmatch(desc)
	if m == nil {
		return "", 0, false
	}
	id, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	return m[1], id, true
}

// WithOwnerMark is desc with its owner block (if any) replaced by one for
// stack and vmid, after the user's text and pvectl's other blocks.
func WithOwnerMark(desc, stack string, vmid int) string {
	for loc := ownerMarkRE.FindStringIndex(desc); loc != nil; loc = ownerMarkRE.FindStringIndex(desc) {
		start := loc[0]
		if start > 0 && desc[start-1] == '\n' {
			start-- // the line break put before it
		}
		desc = desc[:start] + desc[loc[1]:]
	}
	desc = strings.TrimRight(desc, "\n")
	if desc == "" {
		return OwnerMark(stack, vmid)
	}
	return desc + "\n" + OwnerMark(stack, vmid)
}

// SplitTags splits a tag list as PVE does (pve-common
// PVE::Tools::split_list: ';', ',' and spaces).
func SplitTags(tags string) []string {
	return strings.FieldsFunc(tags, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// HasOwnerTag reports whether a tag list carries the owner tag.
func HasOwnerTag(tags string) bool { return slices.Contains(SplitTags(tags), OwnerTag) }

// WithOwnerTag adds the owner tag to a tag list (kept as it is when it
// has it already).
func WithOwnerTag(tags string) string {
	t := SplitTags(tags)
	if slices.Contains(t, OwnerTag) {
		return tags
	}
	return strings.Join(append(t, OwnerTag), ";")
}

// WithoutOwnerTag is a tag list without the owner tag: what a spec's
// `tags` is compared with, and what import writes.
func WithoutOwnerTag(tags string) string {
	t := SplitTags(tags)
	if !slices.Contains(t, OwnerTag) {
		return tags
	}
	return strings.Join(slices.DeleteFunc(t, func(s string) bool { return s == OwnerTag }), ";")
}

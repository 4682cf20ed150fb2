package iso9660

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// maxNameLen is Joliet's limit in UCS-2 characters; Rock Ridge and the
	// names cloud-init needs are far below it, so one limit serves all three.
	maxNameLen = 64
	// maxDepth: ECMA-119 6.8.2.1 allows eight directory levels, root
	// included; deeper trees need Rock Ridge relocation, which this writer
	// does not do.
	maxDepth = 8
	// maxPathLen: ECMA-119 6.8.2.1 caps a file's path at 255 bytes.
	maxPathLen = 255
	// maxPrimaryFile and maxPrimaryDir are the lengths of ISO 9660 level 2
	// identifiers (name + "." + extension without ";1"; directory name), as
	// genisoimage writes them at the -iso-level 3 that PVE uses.
	maxPrimaryFile = 30
	maxPrimaryDir  = 31
	maxLabelLen    = 16 // the Joliet volume identifier holds 16 UCS-2 characters
)

// validName reports whether s may be a path component: portable ASCII only,
// so the Rock Ridge name, the Joliet UCS-2 name and the string a reader
// gives back are one and the same.
func validName(s string) error {
	if s == "" || s == "." || s == ".." {
		return fmt.Errorf("name %q is not allowed", s)
	}
	if len(s) > maxNameLen {
		return fmt.Errorf("name %q is longer than %d characters", s, maxNameLen)
	}
	return portableOnly("name", s)
}

func validLabel(s string) error {
	if s == "" || len(s) > maxLabelLen {
		return fmt.Errorf("volume label %q must have 1 to %d characters", s, maxLabelLen)
	}
	return portableOnly("volume label", s)
}

// portableOnly refuses s at its first byte outside the portable set
// (A-Z a-z 0-9 . _ -), naming s as what ("name", "volume label").
func portableOnly(what, s string) error {
	for i := 0; i < len(s); i++ {
		if !portable(s[i]) {
			return fmt.Errorf("%s %q: character %q is not one of A-Z a-z 0-9 . _ -", what, s, s[i])
		}
	}
	return nil
}

func portable(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// dChars maps s to ISO 9660 d-characters (A-Z 0-9 _), as genisoimage does
// for the primary names that readers without Rock Ridge or Joliet see.
func dChars(s string, max int) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < max; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			b = append(b, c-'a'+'A')
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	return string(b)
}

// primaryID is a node's identifier in the primary tree, split so that it
// sorts by ECMA-119 9.3 (name, then extension; both space-padded).
type primaryID struct {
	name, ext string
	file      bool
}

// String is the identifier as recorded: "NAME.EXT;1" for files (the "."
// is mandatory even with no extension), "NAME" for directories.
func (p primaryID) String() string {
	if p.file {
		return p.name + "." + p.ext + ";1"
	}
	return p.name
}

func mangle(name string, file bool) primaryID {
	if !file {
		return primaryID{name: dChars(name, maxPrimaryDir)}
	}
	base, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		base, ext = name[:i], name[i+1:]
	}
	ext = dChars(ext, 8)
	base = dChars(base, maxPrimaryFile-1-len(ext))
	if base == "" && ext == "" {
		base = "_"
	}
	return primaryID{name: base, ext: ext, file: true}
}

// uniquePrimary gives each child of one directory a distinct primary
// identifier. Children arrive sorted by their real names, so which one
// keeps the plain mangled form and which gets a counter is fixed.
func uniquePrimary(children []*node) error {
	taken := make(map[string]bool, len(children))
	for _, c := range children {
		id := mangle(c.name, !c.dir)
		key := id.name + "." + id.ext
		if taken[key] {
			limit := maxPrimaryDir
			if !c.dir {
				limit = maxPrimaryFile - 1 - len(id.ext)
			}
			found := false
			for n := 1; n < 100000 && !found; n++ {
				suffix := strconv.Itoa(n)
				stem := id.name
				if len(stem)+len(suffix) > limit {
					stem = stem[:max(0, limit-len(suffix))]
				}
				cand := primaryID{name: stem + suffix, ext: id.ext, file: id.file}
				if k := cand.name + "." + cand.ext; !taken[k] {
					id, key, found = cand, k, true
				}
			}
			if !found {
				return fmt.Errorf("no unique ISO 9660 name for %q", c.name)
			}
		}
		taken[key] = true
		c.primary = id
	}
	return nil
}

// comparePadded compares a and b as ECMA-119 9.3 does: the shorter one is
// padded with spaces (for Joliet, UCS-2 spaces, which sort the same for the
// ASCII names this package allows).
func comparePadded(a, b string) int {
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := byte(' '), byte(' ')
		if i < len(a) {
			ca = a[i]
		}
		if i < len(b) {
			cb = b[i]
		}
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return 0
}

func comparePrimary(a, b *node) int {
	if c := comparePadded(a.primary.name, b.primary.name); c != 0 {
		return c
	}
	return comparePadded(a.primary.ext, b.primary.ext)
}

// compareJoliet orders Joliet records: Joliet keeps ECMA-119's rule, with
// a file's name split at its last dot into name and extension.
func compareJoliet(a, b *node) int {
	an, ae := splitExt(a)
	bn, be := splitExt(b)
	if c := comparePadded(an, bn); c != 0 {
		return c
	}
	return comparePadded(ae, be)
}

func splitExt(n *node) (string, string) {
	if n.dir {
		return n.name, ""
	}
	if i := strings.LastIndexByte(n.name, '.'); i >= 0 {
		return n.name[:i], n.name[i+1:]
	}
	return n.name, ""
}

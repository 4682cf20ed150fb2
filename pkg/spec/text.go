package spec

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxNameLength caps a document's name: 253 characters, a full DNS name,
// since a guest's PVE name and hostname default to it. PVE itself has no
// cap on a VM's name (qemu-server's `name` is a dns-name of any length).
const MaxNameLength = 253

// multiLineParams are the PVE parameters whose value is free text of
// several lines (pve-container's ssh-public-keys: one key per line;
// pve-storage's keyring and encryption-key: file contents). Every other
// parameter is a single line.
var multiLineParams = []string{"description", "ssh-public-keys", "keyring", "encryption-key", "master-pubkey"}

// multiLineOwnKeys are pvectl keys that hold file contents.
var multiLineOwnKeys = []string{"userData", "networkConfig", "networkData", "vendorData", "sshPrivateKey"}

// textProblem says why s may not be a value, "" when it may: a
// single-line value (a name, a label, a comment, an identity) takes no
// control character (C0 with NUL, tab and newline, DEL, C1) and no bidi
// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069), which
// make text display other than it is ("Trojan Source"). Multi-line text
// takes tab and line breaks, but no other control character (an escape
// sequence rewrites the terminal a plan is read on).
func textProblem(s string, multiLine bool) string {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return "is not valid UTF-8"
			}
		}
		switch {
		case multiLine && (r == '\t' || r == '\n' || r == '\r'):
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return fmt.Sprintf("contains the control character %s: write it on one line, without control characters", runeName(r))
		case !multiLine && isBidiControl(r):
			return fmt.Sprintf("contains the bidi control %s, which makes text display other than it is: remove it", runeName(r))
		}
	}
	return ""
}

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

var runeNames = map[rune]string{
	0: "NUL", '\t': "tab", '\n': "newline", '\r': "carriage return", 0x1b: "ESC", 0x7f: "DEL",
	0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING", 0x202c: "POP DIRECTIONAL FORMATTING",
	0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE", 0x2066: "LEFT-TO-RIGHT ISOLATE",
	0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE",
}

func runeName(r rune) string {
	if n, ok := runeNames[r]; ok {
		return fmt.Sprintf("U+%04X (%s)", r, n)
	}
	return fmt.Sprintf("U+%04X", r)
}

// checkText reports the first scalar of v (a value, a list, a property
// map; keys included) that textProblem refuses, at its own line. key names
// the value in the message ("spec.name"). It reports one problem at most
// and says whether there was one.
func (l *loader) checkText(file, key string, v *yaml.Node, multiLine bool) bool {
	bad := firstBadScalar(v, multiLine, 0)
	if bad == nil {
		return false
	}
	l.errorf(nodePos(file, bad), "%s %s", key, textProblem(bad.Value, multiLine))
	return true
}

// firstBadScalar walks v (aliases bounded by depth: an alias bomb is
// refused before values are checked) for a scalar textProblem refuses.
func firstBadScalar(v *yaml.Node, multiLine bool, depth int) *yaml.Node {
	if v == nil || depth > 100 {
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if textProblem(v.Value, multiLine) != "" {
			return v
		}
	case yaml.AliasNode:
		return firstBadScalar(v.Alias, multiLine, depth+1)
	default:
		for _, c := range v.Content {
			if b := firstBadScalar(c, multiLine, depth+1); b != nil {
				return b
			}
		}
	}
	return nil
}

func isMultiLineParam(key string) bool { return slices.Contains(multiLineParams, key) }

func isMultiLineOwnKey(key string) bool { return slices.Contains(multiLineOwnKeys, key) }

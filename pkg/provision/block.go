package provision

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// MaxDescription is PVE's limit on a guest's description, in characters:
// qemu-server src/PVE/QemuServer.pm declares `description` with maxLength
// 8 KiB, pve-common src/PVE/JSONSchema.pm checks it with Perl's length() on
// the parameter that pve-http-server src/PVE/APIServer/AnyEvent.pm
// (decode_urlencoded) has decoded from UTF-8, so it counts characters.
const MaxDescription = 8 * 1024

// The blocks pvectl writes, and the legacy block of the tool it replaces.
// All keep inside the shape pkg/planner strips from description
// comparisons: "[pvectl-<word>: …]" or "[puls-provision: …]" on one line.
var (
	provisionRE = lazyre.New(`\[pvectl-provision: ([^\]\n]*)\]`)
	legacyRE    = lazyre.New(`\[puls-provision: ([^\]\n]*)\]`)
	hostKeyRE   = lazyre.New(`\[pvectl-hostkey: ([^\]\n]*)\]`)
	hashRE      = lazyre.New(`^[0-9a-f]{12}$`)
	legacyHash  = lazyre.New(`^[0-9a-fA-F]{8,64}$`)
	pinRE       = lazyre.New(`^([a-z0-9@.-]+) (SHA256:[A-Za-z0-9+/]{43})$`)
)

// FileHash is one file's entry in the provision block.
type FileHash struct {
	Name string // the file as the spec names it
	Hash string // HashLen hex digits; a legacy entry may hold another length
}

// State is what a description records about provisioning: the hash of
// each file that ran successfully, and the pinned SSH host key.
type State struct {
	Files []FileHash
	// HostKey is the pin, "<key type> SHA256:<base64>" (as ssh-keygen -l
	// shows it), or "" when no key is pinned yet.
	HostKey string
	// Legacy is set when the hashes came from a [puls-provision: …] block;
	// the next write replaces it with a [pvectl-provision: …] block.
	Legacy bool
}

// Hash returns the recorded hash of the file named name.
func (s State) Hash(name string) (string, bool) {
	for _, f := range s.Files {
		if f.Name == name {
			return f.Hash, true
		}
	}
	return "", false
}

// ParseDescription reads pvectl's blocks from a guest's description. A
// pvectl block that does not follow the grammar (see the package doc) is an
// error rather than "nothing recorded": guessing would rerun every file or,
// worse, trust any host key. An unreadable legacy block records nothing.
func ParseDescription(desc string) (State, error) {
	var s State
	prov := provisionRE.FindAllStringSubmatch(desc, -1)
	legacy := legacyRE.FindAllStringSubmatch(desc, -1)
	keys := hostKeyRE.FindAllStringSubmatch(desc, -1)
	if len(prov) > 1 || len(legacy) > 1 || len(keys) > 1 {
		return s, fmt.Errorf("description holds more than one [pvectl-provision: …], [puls-provision: …] or [pvectl-hostkey: …] block: keep one of each")
	}
	switch {
	case len(prov) == 1:
		files, err := parseEntries(prov[0][1], false)
		if err != nil {
			return s, fmt.Errorf("description block %s: %w", prov[0][0], err)
		}
		s.Files = files
	case len(legacy) == 1:
		// Another tool's block that pvectl cannot read counts as nothing
		// recorded: every file runs once and the block is replaced.
		files, _ := parseEntries(legacy[0][1], true)
		s.Files, s.Legacy = files, true
	}
	if len(keys) == 1 {
		pin := keys[0][1]
		if !pinRE.MatchString(pin) {
			return s, fmt.Errorf("description block %s: want \"<key type> SHA256:<fingerprint>\"; remove the block to pin the guest's current key", keys[0][0])
		}
		s.HostKey = pin
	}
	return s, nil
}

func parseEntries(body string, legacy bool) ([]FileHash, error) {
	var out []FileHash
	if strings.TrimSpace(body) == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, e := range strings.Split(body, ",") {
		name, hash, ok := strings.Cut(e, "=")
		name = strings.TrimSpace(name)
		hash = strings.TrimSpace(hash)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("entry %q: want NAME=HASH", e)
		case legacy && !legacyHash.MatchString(hash):
			return nil, fmt.Errorf("entry %q: want a hex hash", e)
		case !legacy && !hashRE.MatchString(hash):
			return nil, fmt.Errorf("entry %q: want %d lowercase hex digits", e, HashLen)
		case seen[name]:
			return nil, fmt.Errorf("file %s listed twice", name)
		}
		seen[name] = true
		out = append(out, FileHash{Name: name, Hash: strings.ToLower(hash)})
	}
	return out, nil
}

// WriteDescription returns desc with its blocks set to s. Each block is
// replaced where it stands, so the text around it stays the user's byte for
// byte; a block that is missing is appended on a line of its own. A legacy
// [puls-provision: …] block is replaced by (or, beside a pvectl one,
// dropped for) the [pvectl-provision: …] block. The result must fit PVE's
// MaxDescription.
func WriteDescription(desc string, s State) (string, error) {
	prov := ""
	if len(s.Files) > 0 {
		var b strings.Builder
		b.WriteString("[pvectl-provision: ")
		for i, f := range s.Files {
			if err := CheckName(f.Name); err != nil {
				return "", err
			}
			if !hashRE.MatchString(f.Hash) {
				return "", fmt.Errorf("hash %q of %s: want %d lowercase hex digits", f.Hash, f.Name, HashLen)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.Name + "=" + f.Hash)
		}
		b.WriteByte(']')
		prov = b.String()
	}
	pin := ""
	if s.HostKey != "" {
		if !pinRE.MatchString(s.HostKey) {
			return "", fmt.Errorf("host key pin %q: want \"<key type> SHA256:<fingerprint>\"", s.HostKey)
		}
		pin = "[pvectl-hostkey: " + s.HostKey + "]"
	}

	out := desc
	if provisionRE.MatchString(out) {
		out = replaceBlock(out, provisionRE, prov)
		if legacyRE.MatchString(out) {
			out = replaceBlock(out, legacyRE, "")
		}
	} else if legacyRE.MatchString(out) {
		out = replaceBlock(out, legacyRE, prov)
	} else if loc := hostKeyRE.FindStringIndex(out); loc != nil && prov != "" {
		// Keep pvectl's blocks together, the provision block first.
		out = out[:loc[0]] + prov + "\n" + out[loc[0]:]
	} else {
		out = appendBlock(out, prov)
	}
	if hostKeyRE.MatchString(out) {
		out = replaceBlock(out, hostKeyRE, pin)
	} else {
		out = appendBlock(out, pin)
	}
	if n := utf8.RuneCountInString(out); n > MaxDescription {
		return "", fmt.Errorf("description would be %d characters, PVE allows %d: shorten the guest's description text (pvectl's blocks take %d)",
			n, MaxDescription, utf8.RuneCountInString(prov)+utf8.RuneCountInString(pin))
	}
	return out, nil
}

// replaceBlock puts blk where re's block stands; an empty blk removes the
// block and the line break pvectl put before it.
func replaceBlock(desc string, re *lazyre.Regexp, blk string) string {
	loc := re.FindStringIndex(desc)
	start, end := loc[0], loc[1]
	if blk == "" && start > 0 && desc[start-1] == '\n' && (end == len(desc) || desc[end] == '\n') {
		start--
	}
	return desc[:start] + blk + desc[end:]
}

func appendBlock(desc, blk string) string {
	if blk == "" {
		return desc
	}
	if desc == "" || strings.HasSuffix(desc, "\n") {
		return desc + blk
	}
	return desc + "\n" + blk
}

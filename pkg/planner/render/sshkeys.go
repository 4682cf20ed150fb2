package render

import (
	"net/url"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner"
)

// shown is a diff as people read it. A QemuVM's sshkeys is URL-encoded
// on the wire (PVE requires it, and uri_unescapes it when it writes the
// cloud-init drive: see pvesim's cloudinit.go), so
// "ssh-ed25519%20AAAA…%0A" is shown as the keys themselves, one a line:
// two keys or more read as a line diff. The plan file and the JSON keep
// the wire form (docs/decisions.md).
func shown(d planner.FieldDiff) planner.FieldDiff {
	if d.Path != "sshkeys" {
		return d
	}
	d.Before, d.After = decodedKeys(d.Before), decodedKeys(d.After)
	return d
}

// decodedKeys is an encoded sshkeys value decoded, ending in a newline
// when it holds more than one key (so it reads as a line diff); a value
// that does not decode, or is not a string, is shown as it is.
func decodedKeys(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	u, err := url.PathUnescape(s)
	if err != nil {
		return v
	}
	u = strings.TrimRight(u, "\n")
	if strings.Contains(u, "\n") {
		u += "\n"
	}
	return u
}

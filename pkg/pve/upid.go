package pve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// UPID is a parsed PVE task id.
type UPID struct {
	Raw       string
	Node      string
	PID       uint32
	PStart    uint64
	StartTime int64
	Type      string
	ID        string
	User      string
}

// upidPattern is PVE's own pattern (PVE::Tools::upid_decode).
const upidPattern = `UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):`

var (
	upidRe   = lazyre.New(`^` + upidPattern + `$`)
	upidInRe = lazyre.New(upidPattern)
)

// ParseUPID parses exactly PVE's UPID format (trailing colon required).
func ParseUPID(s string) (UPID, error) {
	m := upidRe.FindStringSubmatch(s)
	if m == nil {
		return UPID{}, fmt.Errorf("invalid task id (UPID) %q", s)
	}
	// The widths are fixed by the pattern, so these conversions cannot overflow.
	pid, _ := strconv.ParseUint(m[3], 16, 32)
	pstart, _ := strconv.ParseUint(m[4], 16, 64)
	start, _ := strconv.ParseInt(m[5], 16, 64)
	return UPID{
		Raw:       s,
		Node:      m[1],
		PID:       uint32(pid),
		PStart:    pstart,
		StartTime: start,
		Type:      m[6],
		ID:        m[7],
		User:      m[8],
	}, nil
}

func (u UPID) String() string { return u.Raw }

// IsZero reports whether u is the zero UPID that StartTask returns for calls
// that finished synchronously (PVE answered null instead of a task id).
func (u UPID) IsZero() bool { return u.Raw == "" }

// Short names the task for people: "qmcreate 100 on pve" (type, the
// object it works on, its node), as PVE's task list shows it.
func (u UPID) Short() string {
	s := u.Type
	if u.ID != "" {
		s += " " + u.ID
	}
	return s + " on " + u.Node
}

// ShortenUPIDs replaces every UPID in s by its Short form, for human
// output; machine output keeps the full UPID.
func ShortenUPIDs(s string) string {
	if !strings.Contains(s, "UPID:") {
		return s
	}
	return upidInRe.ReplaceAllStringFunc(s, func(m string) string {
		u, err := ParseUPID(m)
		if err != nil {
			return m
		}
		return u.Short()
	})
}

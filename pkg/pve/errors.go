package pve

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// APIError is a non-2xx answer from PVE.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
	Errors       map[string]string // 400: per-parameter messages
	// Bare: a 5xx that carries PVE's message neither in its body nor in
	// its status line — not PVE's own refusal (request.go OutcomeUnknown).
	Bare bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.Path, e.Status)
	msg := strings.TrimSpace(e.Message)
	if len(e.Errors) > 0 {
		msg = strings.TrimRight(msg, ".")
	}
	if msg != "" {
		b.WriteString(" ")
		b.WriteString(msg)
	}
	if len(e.Errors) > 0 {
		keys := make([]string, 0, len(e.Errors))
		for k := range e.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i == 0 {
				b.WriteString(": ")
			} else {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", k, strings.TrimSpace(e.Errors[k]))
		}
	}
	return b.String()
}

// TaskError is a task that stopped with an exit status other than OK/WARNINGS.
type TaskError struct {
	UPID       string
	ExitStatus string
	LogTail    []string
}

func (e *TaskError) Error() string {
	var b strings.Builder
	b.WriteString("task ")
	if u, err := ParseUPID(e.UPID); err == nil {
		b.WriteString(u.Short())
	} else {
		b.WriteString(e.UPID)
	}
	fmt.Fprintf(&b, " failed: %s", strings.TrimSpace(e.ExitStatus))
	if len(e.LogTail) > 0 {
		b.WriteString("\n  task log (last lines):")
		for _, l := range e.LogTail {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}

var lockTimeoutRe = lazyre.New(`can't lock file '[^']*' - got timeout`)

// IsLockTimeout reports whether err is PVE's "can't lock file … got timeout" 500.
func IsLockTimeout(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == 500 && lockTimeoutRe.MatchString(ae.Message)
}

// IsDigestMismatch reports whether err is PVE's refusal of a write whose
// digest is no longer the config's: the write was not made. pve-common's
// Tools.pm assert_if_modified says "detected modified configuration",
// qemu-server's update_vm_api "checksum mismatch (file change by other
// user?)" — before it forks (a 500), or in the qmconfig task when the
// config changed in between (the task fails).
func IsDigestMismatch(err error) bool {
	msg := ""
	var ae *APIError
	var te *TaskError
	switch {
	case errors.As(err, &ae) && ae.Status == 500:
		msg = ae.Message
	case errors.As(err, &te):
		msg = te.ExitStatus
	}
	return strings.Contains(msg, "detected modified configuration - file changed by other user") ||
		strings.Contains(msg, "checksum mismatch (file change by other user?)")
}

// IsNotFound reports whether err says the object does not exist
// (HTTP 404, or 500 "... does not exist" as PVE answers for missing
// VMs/ifaces, "unable to find configuration file for VM N on node 'x'"
// as qemu-server's check_running answers a reboot or clone of one).
func IsNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Status {
	case 404:
		return true
	case 400, 500:
		m := strings.ToLower(ae.Message)
		return strings.Contains(m, "does not exist") || strings.Contains(m, "not found") || strings.Contains(m, "no such") ||
			strings.Contains(m, "unable to find configuration file")
	}
	return false
}

// FailedRequest names the request an error came from ("GET /cluster/resources"),
// or "" when it did not come from one.
func FailedRequest(err error) string {
	var te *transportError
	if errors.As(err, &te) {
		return te.method + " " + te.path
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Method + " " + ae.Path
	}
	return ""
}

// Brief is a failed request's cause in a few words, without the request:
// PVE's status and message, or what went wrong on the way ("EOF").
func Brief(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d %s", ae.Status, ae.Message)
	}
	var te *transportError
	if errors.As(err, &te) {
		return te.err.Error()
	}
	return err.Error()
}

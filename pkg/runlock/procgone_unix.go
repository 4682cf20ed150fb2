//go:build unix

package runlock

import (
	"errors"
	"syscall"
)

// processGone reports whether no process pid exists on this host (signal
// 0 checks without signalling; EPERM means it exists under another user).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

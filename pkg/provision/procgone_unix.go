//go:build unix

package provision

import (
	"errors"
	"os"
	"syscall"
)

// processGone reports whether no process pid exists on this host (signal
// 0 checks without signalling; EPERM means it exists under another user).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ownedByMe: only this user's directories are removed.
func ownedByMe(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

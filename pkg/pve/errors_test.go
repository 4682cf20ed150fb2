package pve

import (
	"fmt"
	"testing"
)

// PVE words a stale digest two ways, and qemu-server says it before the
// task forks or in the task.
func TestIsDigestMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"assert_if_modified", &APIError{Status: 500, Message: "detected modified configuration - file changed by other user? Try again."}, true},
		{"qemu-server before the fork", fmt.Errorf("update vm 100: %w", &APIError{Status: 500, Message: "checksum mismatch (file change by other user?)"}), true},
		{"qemu-server in the task", &TaskError{UPID: "UPID:pve:1:2:3:qmconfig:100:root@pam:", ExitStatus: "checksum mismatch (file change by other user?)"}, true},
		{"a download's checksum", &TaskError{ExitStatus: "checksum mismatch: got 'a' != expect 'b', aborting"}, false},
		{"another 500", &APIError{Status: 500, Message: "VM is locked (backup)"}, false},
		{"not 500", &APIError{Status: 400, Message: "checksum mismatch (file change by other user?)"}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsDigestMismatch(tc.err); got != tc.want {
				t.Errorf("IsDigestMismatch(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

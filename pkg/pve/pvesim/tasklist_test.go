package pvesim_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// The node's task list filters by user (a case-insensitive substring) and
// by start time, as pve-manager PVE/API2/Tasks.pm node_tasks does: pvectl
// finds a create whose answer was lost this way.
func TestTaskListFilters(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100")
	now := time.Now().Unix()
	for _, tc := range []struct {
		params []string
		want   int
	}{
		{nil, 1},
		{[]string{"userfilter", "ROOT@pam"}, 1},
		{[]string{"userfilter", "nobody@pve"}, 0},
		{[]string{"since", strconv.FormatInt(now-60, 10)}, 1},
		{[]string{"since", strconv.FormatInt(now+60, 10)}, 0},
		{[]string{"until", strconv.FormatInt(now-60, 10)}, 0},
		{[]string{"until", strconv.FormatInt(now+60, 10)}, 1},
	} {
		var rows []map[string]any
		e.ok(&rows, "GET", "/nodes/pve/tasks", append([]string{"source", "all", "vmid", "100", "typefilter", "qmcreate"}, tc.params...)...)
		if len(rows) != tc.want {
			t.Errorf("%v: got %d tasks, want %d", tc.params, len(rows), tc.want)
		}
	}
}

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
		rows := e.rows("/nodes/pve/tasks", append([]string{"source", "all", "vmid", "100", "typefilter", "qmcreate"}, tc.params...)...)
		if len(rows) != tc.want {
			t.Errorf("%v: got %d tasks, want %d", tc.params, len(rows), tc.want)
		}
	}
}

// Issue 17: the rest of node_tasks' filters — a running task is listed
// first, as "RUNNING" with its token's full id; errors and statusfilter
// go by normalize_status_type (a running task is "unknown"); limit 0
// lists none; total counts every match; an archived token task is
// filtered by its user alone.
func TestTaskListFiltersAsPVE(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100")
	release := e.Server.HoldTasks()
	defer release()
	var running string
	e.ok(&running, "POST", "/nodes/pve/qemu/100/status/start")
	for _, tc := range []struct {
		params []string
		want   int
	}{
		{[]string{"source", "all"}, 2},
		{[]string{"source", "active"}, 1},
		{[]string{"source", "archive"}, 1},
		{[]string{"source", "all", "errors", "1"}, 1},
		{[]string{"source", "all", "statusfilter", "ok"}, 1},
		{[]string{"source", "all", "statusfilter", "unknown,error"}, 1},
		{[]string{"source", "all", "limit", "0"}, 0},
		{[]string{"source", "all", "start", "1"}, 1},
		{[]string{"source", "archive", "userfilter", "root@pam!"}, 0},
		{[]string{"source", "active", "userfilter", "root@pam!"}, 1},
	} {
		rows := e.rows("/nodes/pve/tasks", tc.params...)
		if len(rows) != tc.want {
			t.Errorf("%v: got %d tasks, want %d", tc.params, len(rows), tc.want)
		}
	}
	rows := e.rows("/nodes/pve/tasks", "source", "all")
	if len(rows) != 2 || rows[0]["upid"] != running || rows[0]["status"] != "RUNNING" || rows[0]["tokenid"] != nil {
		t.Errorf("got %v, want the running task first, RUNNING, with its token's full id as user", rows)
	}
}

package pvesim_test

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func TestBackupJobs(t *testing.T) {
	e := startEnv(t, simtest.Options{})
	for _, tc := range []struct {
		kv     []string
		status int
		errKey string
		msg    string
	}{
		{[]string{"id", "nightly", "vmid", "100"}, 400, "schedule", "neither 'starttime' nor 'schedule' were set"},
		{[]string{"id", "nightly", "schedule", "every night", "all", "1"}, 400, "schedule", ""},
		{[]string{"id", "nightly", "schedule", "21:00", "vmid", "100", "all", "1"}, 400, "all", "option conflicts with option 'vmid'"},
		{[]string{"id", "nightly", "schedule", "21:00"}, 400, "vmid", "property is missing"},
		{[]string{"id", "nightly", "schedule", "21:00", "all", "1", "dumpdir", "/tmp"}, 400, "dumpdir", "Only root may set this option."},
		{[]string{"id", "nightly", "schedule", "sat 02:30", "storage", "local", "exclude", "9000", "mode", "snapshot", "prune-backups", "keep-last=3,keep-weekly=2"}, 200, "", ""},
	} {
		r := e.call("POST", "/cluster/backup", tc.kv...)
		if r.Status != tc.status || tc.errKey != "" && (r.Errors[tc.errKey] == "" || tc.msg != "" && r.Errors[tc.errKey] != tc.msg) {
			t.Errorf("create %v: got %d %q %v, want %d %s: %q", tc.kv, r.Status, r.Message, r.Errors, tc.status, tc.errKey, tc.msg)
		}
	}
	job := e.object("/cluster/backup/nightly")
	prune, _ := job["prune-backups"].(map[string]any)
	if job["schedule"] != "sat 02:30" || job["all"] != float64(1) || job["enabled"] != float64(1) || job["exclude"] != "9000" ||
		prune["keep-last"] != float64(3) || job["type"] != "vzdump" {
		t.Errorf("read: got %v", job)
	}
	// Naming guests drops all and exclude (update_job).
	e.ok(nil, "PUT", "/cluster/backup/nightly", "vmid", "100,101", "schedule", "daily", "delete", "prune-backups")
	job = nil
	e.ok(&job, "GET", "/cluster/backup/nightly")
	if job["vmid"] != "100,101" || job["all"] != nil || job["exclude"] != nil || job["prune-backups"] != nil || job["schedule"] != "daily" {
		t.Errorf("after update: got %v", job)
	}
	if r := e.call("PUT", "/cluster/backup/nightly", "schedule", "25:00"); r.Status != 400 || r.Errors["schedule"] != "invalid format - invalid calendar event '25:00' - value '25' out of range" {
		t.Errorf("update with a bad schedule: got %d %v", r.Status, r.Errors)
	}
	e.ok(nil, "DELETE", "/cluster/backup/nightly")
	if r := e.call("GET", "/cluster/backup/nightly"); r.Status != 400 || r.Errors["id"] != "No such job 'nightly'" {
		t.Errorf("read a deleted job: got %d %v", r.Status, r.Errors)
	}
}

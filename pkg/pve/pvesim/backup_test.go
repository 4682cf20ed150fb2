package pvesim_test

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
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

// PVE/API2/Backup.pm $convert_to_schedule: starttime without dow, or with
// every day, is the time alone.
func TestBackupStarttimeSchedule(t *testing.T) {
	e := startEnv(t, simtest.Options{})
	for _, tc := range []struct{ dow, want string }{
		{"", "02:30"},
		{"mon,tue,wed,thu,fri,sat,sun", "02:30"},
		{"sat,sun", "sat,sun 02:30"},
	} {
		kv := []string{"id", "job1", "all", "1", "starttime", "02:30"}
		if tc.dow != "" {
			kv = append(kv, "dow", tc.dow)
		}
		e.ok(nil, "POST", "/cluster/backup", kv...)
		if got := e.object("/cluster/backup/job1")["schedule"]; got != tc.want {
			t.Errorf("dow %q: schedule %v, want %q", tc.dow, got, tc.want)
		}
		e.ok(nil, "DELETE", "/cluster/backup/job1")
	}
}

// update_job checks the given options alone (verify_vzdump_parameters),
// turns a given exclude into all, and deletes only vzdump options
// (PVE::VZDump::option_exists) or comment and repeat-missed.
func TestBackupUpdateChecks(t *testing.T) {
	e := startEnv(t, simtest.Options{})
	e.ok(nil, "POST", "/cluster/backup", "id", "job1", "schedule", "daily", "vmid", "100", "comment", "c")
	for _, tc := range []struct {
		kv          []string
		key, errMsg string
	}{
		{[]string{"vmid", "101", "all", "1"}, "all", "option conflicts with option 'vmid'"},
		{[]string{"delete", "schedule"}, "delete", "unknown option 'schedule'"},
		{[]string{"delete", "enabled"}, "delete", "unknown option 'enabled'"},
		{[]string{"protected", "1"}, "storage", "missing property required by 'protected'"},
		{[]string{"storage", "local", "notes-template", "{{foo}} \\t"}, "notes-template",
			"found unknown: escape sequence '\\t' at char 8, variable 'foo' at char 4\n"},
	} {
		if r := e.call("PUT", "/cluster/backup/job1", tc.kv...); r.Status != 400 || r.Errors[tc.key] != tc.errMsg {
			t.Errorf("update %v: got %d %v, want %s: %q", tc.kv, r.Status, r.Errors, tc.key, tc.errMsg)
		}
	}
	e.ok(nil, "PUT", "/cluster/backup/job1", "exclude", "100", "delete", "comment")
	job := e.object("/cluster/backup/job1")
	if job["vmid"] != nil || job["all"] != float64(1) || job["exclude"] != "100" || job["comment"] != nil {
		t.Errorf("after exclude: got %v, want all with exclude 100", job)
	}
}

// assert_param_permission_create/_update (PVE/API2/Backup.pm): a job
// without storage writes to 'local' (get_storage_param); deleted keys are
// checked as set ones; a fleecing storage needs Datastore.AllocateSpace;
// a missing pool is a permission failure.
func TestBackupJobPermissions(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	auth := e.newToken("ci@pve", "tk", false)
	e.ok(nil, "POST", "/access/roles", "roleid", "Jobs", "privs", "Sys.Audit,Sys.Modify")
	e.grant("/", "Jobs", "users", "ci@pve", "propagate", "0")
	wantDenied(t, e.as(auth, "POST", "/cluster/backup", "id", "job1", "schedule", "daily", "all", "1"), "/storage/local, Datastore.Allocate")
	wantDenied(t, e.as(auth, "POST", "/cluster/backup", "id", "job1", "schedule", "daily", "all", "1", "pool", "nope"), "/storage/local, Datastore.Allocate")
	e.grant("/storage/local", "PVEDatastoreAdmin", "users", "ci@pve")
	wantDenied(t, e.as(auth, "POST", "/cluster/backup", "id", "job1", "schedule", "daily", "all", "1", "pool", "nope"), "pool 'nope' does not exist")
	wantDenied(t, e.as(auth, "POST", "/cluster/backup", "id", "job1", "schedule", "daily", "all", "1", "fleecing", "enabled=1,storage=local-lvm"),
		"/storage/local-lvm, Datastore.AllocateSpace")
	if r := e.as(auth, "POST", "/cluster/backup", "id", "job1", "schedule", "daily", "all", "1"); r.Status != 200 {
		t.Fatalf("create with Datastore.Allocate on local: got %d %q", r.Status, r.Message)
	}
	if r := e.as(auth, "PUT", "/cluster/backup/job1", "delete", "tmpdir"); r.Status != 400 || r.Errors["tmpdir"] != "Only root may set this option." {
		t.Errorf("delete tmpdir: got %d %v", r.Status, r.Errors)
	}
}

// jobs.cfg ids are shared by backup and realm-sync jobs: each create_job
// refuses an id the other type holds.
func TestJobIDsShared(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/access/domains", "realm", "corp", "type", "ldap", "server1", "127.0.0.5", "base_dn", "dc=corp", "user_attr", "uid")
	e.ok(nil, "POST", "/cluster/jobs/realm-sync/sync1", "realm", "corp", "schedule", "daily", "scope", "both")
	e.ok(nil, "POST", "/cluster/backup", "id", "bak1", "schedule", "daily", "all", "1")
	if r := e.call("POST", "/cluster/backup", "id", "sync1", "schedule", "daily", "all", "1"); r.Status != 500 || r.Message != "Job 'sync1' already exists" {
		t.Errorf("backup job with a realm-sync job's id: got %d %q", r.Status, r.Message)
	}
	if r := e.call("POST", "/cluster/jobs/realm-sync/bak1", "realm", "corp", "schedule", "daily", "scope", "both"); r.Status != 500 || r.Message != "Job 'bak1' already exists" {
		t.Errorf("realm-sync job with a backup job's id: got %d %q", r.Status, r.Message)
	}
}

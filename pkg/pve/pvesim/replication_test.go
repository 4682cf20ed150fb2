package pvesim_test

import (
	"testing"
	"time"
)

func TestReplicationJobs(t *testing.T) {
	e := twoNodes(t)
	e.ok(nil, "POST", "/storage", "storage", "tank", "type", "zfspool", "pool", "rpool/data", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "tank:1", "ide2", "none,media=cdrom")
	e.run("POST", "/nodes/pve/qemu", "vmid", "101", "scsi0", "local-lvm:1")
	e.run("POST", "/nodes/pve/qemu", "vmid", "102", "scsi0", "local-lvm:1,replicate=0")
	for _, tc := range []struct {
		kv  []string
		msg string
	}{
		{[]string{"id", "100-0", "type", "local", "target", "pve"}, "Source and target must not be identical"},
		{[]string{"id", "100-0", "type", "local", "target", "pve3"}, "Target 'pve3' does not exist."},
		{[]string{"id", "103-0", "type", "local", "target", "pve2"}, "Guest '103' does not exist."},
		{[]string{"id", "101-0", "type", "local", "target", "pve2"}, "missing replicate feature on volume 'local-lvm:vm-101-disk-0'"},
		{[]string{"id", "102-0", "type", "local", "target", "pve2"}, "No replicatable volumes found"},
		{[]string{"id", "100-0", "type", "local", "target", "pve2", "source", "pve2"}, "Source 'pve2' does not match current node of guest '100' (pve)"},
	} {
		if r := e.call("POST", "/cluster/replication", tc.kv...); r.Status != 500 || r.Message != tc.msg {
			t.Errorf("create %v: got %d %q, want %q", tc.kv, r.Status, r.Message, tc.msg)
		}
	}
	e.ok(nil, "POST", "/cluster/replication", "id", "100-0", "type", "local", "target", "pve2", "schedule", "*/15", "rate", "10")
	if r := e.call("POST", "/cluster/replication", "id", "100-1", "type", "local", "target", "pve2"); r.Message != "replication job for guest '100' to target 'pve2' already exists" {
		t.Errorf("second job to one target: got %d %q", r.Status, r.Message)
	}
	var job map[string]any
	e.ok(&job, "GET", "/cluster/replication/100-0")
	if job["guest"] != float64(100) || job["target"] != "pve2" || job["source"] != "pve" || job["rate"] != float64(10) || job["schedule"] != "*/15" {
		t.Errorf("read: got %v", job)
	}
	e.ok(nil, "PUT", "/cluster/replication/100-0", "schedule", "daily", "delete", "rate")
	// A delete marks the job; the runner removes it a moment later.
	e.ok(nil, "DELETE", "/cluster/replication/100-0")
	job = nil
	e.ok(&job, "GET", "/cluster/replication/100-0")
	if job["remove_job"] != "full" || job["rate"] != nil || job["schedule"] != "daily" {
		t.Errorf("after delete: got %v, want remove_job full", job)
	}
	for range 500 {
		var jobs []map[string]any
		if e.ok(&jobs, "GET", "/cluster/replication"); len(jobs) == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Errorf("the runner never removed the deleted job")
}

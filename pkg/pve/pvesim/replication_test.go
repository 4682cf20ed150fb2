package pvesim_test

import (
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
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
	if r := e.call("POST", "/cluster/replication", "id", "100-1", "type", "local", "target", "pve2"); r.Message != "replication job for guest '100' to target 'local/pve2' already exists" {
		t.Errorf("second job to one target: got %d %q", r.Status, r.Message)
	}
	job := e.object("/cluster/replication/100-0")
	if job["guest"] != float64(100) || job["target"] != "pve2" || job["source"] != "pve" || job["rate"] != float64(10) || job["schedule"] != "*/15" {
		t.Errorf("read: got %v", job)
	}
	e.ok(nil, "PUT", "/cluster/replication/100-0", "schedule", "daily", "delete", "rate")
	// ReplicationConfig.pm update: "type" is no option of the local plugin.
	if r := e.call("PUT", "/cluster/replication/100-0", "delete", "type"); r.Status != 500 || r.Message != "no such option 'type'" {
		t.Errorf("delete type: got %d %q", r.Status, r.Message)
	}
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

// A destroy without purge keeps an HA-managed or replicated guest; with
// purge its HA resource, replication jobs and backup-job entries go.
func TestDestroyPurgesJobs(t *testing.T) {
	e := twoNodes(t)
	e.ok(nil, "POST", "/storage", "storage", "tank", "type", "zfspool", "pool", "rpool/data", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "tank:1")
	e.ok(nil, "POST", "/cluster/replication", "id", "100-0", "type", "local", "target", "pve2")
	if r := e.call("DELETE", "/nodes/pve/qemu/100"); r.Message != "There is a replication job '100-0' for guest '100' - Please remove that first." {
		t.Errorf("destroy of a replicated VM without purge: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/ha/resources", "sid", "vm:100", "state", "stopped")
	if r := e.call("DELETE", "/nodes/pve/qemu/100"); r.Message != "unable to remove VM 100 - used in HA resources and purge parameter not set." {
		t.Errorf("destroy of an HA VM without purge: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/backup", "id", "only100", "schedule", "daily", "vmid", "100")
	e.ok(nil, "POST", "/cluster/backup", "id", "two", "schedule", "daily", "vmid", "100,101")
	e.ok(nil, "POST", "/cluster/backup", "id", "most", "schedule", "daily", "all", "1", "exclude", "100")
	e.run("DELETE", "/nodes/pve/qemu/100", "purge", "1")
	var rows []map[string]any
	for _, path := range []string{"/cluster/ha/resources", "/cluster/replication"} {
		if e.ok(&rows, "GET", path); len(rows) != 0 {
			t.Errorf("%s after a purging destroy: got %v", path, rows)
		}
	}
	rows = nil
	e.ok(&rows, "GET", "/cluster/backup")
	if len(rows) != 2 || rows[0]["id"] != "two" || rows[0]["vmid"] != "101" || rows[1]["id"] != "most" || rows[1]["exclude"] != nil {
		t.Errorf("backup jobs after a purging destroy: got %v", rows)
	}
}

// ReplicationConfig.pm read: the answer carries the config digest, which
// update takes; a missing job is a 500 before the VM.Audit check.
func TestReplicationReadDigest(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	e.ok(nil, "POST", "/storage", "storage", "tank", "type", "zfspool", "pool", "rpool/data", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "tank:1")
	e.ok(nil, "POST", "/cluster/replication", "id", "100-0", "type", "local", "target", "pve2")
	digest, _ := e.object("/cluster/replication/100-0")["digest"].(string)
	if len(digest) != 40 {
		t.Fatalf("read: digest %q, want a SHA1", digest)
	}
	e.ok(nil, "PUT", "/cluster/replication/100-0", "comment", "x", "digest", digest)
	if r := e.call("PUT", "/cluster/replication/100-0", "comment", "y", "digest", digest); r.Status != 500 {
		t.Errorf("update with a stale digest: got %d %q", r.Status, r.Message)
	}
	auth := e.newToken("ci@pve", "tk", true)
	if r := e.as(auth, "GET", "/cluster/replication/100-9"); r.Status != 500 || r.Message != "no such replication job '100-9'" {
		t.Errorf("read of a missing job without VM.Audit: got %d %q", r.Status, r.Message)
	}
	wantDenied(t, e.as(auth, "GET", "/cluster/replication/100-0"), "/vms/100, VM.Audit")
}

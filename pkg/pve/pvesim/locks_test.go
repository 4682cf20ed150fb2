package pvesim_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

const (
	qemuLock100 = "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"
	ctLock200   = "can't lock file '/run/lock/lxc/pve-config-200.lock' - got timeout"
)

// A call whose worker takes the guest lock answers a UPID at once; with
// the lock busy for longer than PVE waits, the task fails with the lock
// timeout after the wait and has done nothing. PUT config takes the lock in
// the API process: the call itself waits, then answers the 500.
func TestLocksInsideTasks(t *testing.T) {
	e := newEnv(t, pvesim.Options{TaskDuration: time.Hour, LockWait: 20 * time.Millisecond})
	e.Server.PutGuest("pve", 100, true, map[string]string{"name": "vm", "memory": "512", "scsi0": "local-lvm:vm-100-disk-0,size=4G"})
	e.Server.PutContainer("pve", 200, true, map[string]string{"hostname": "ct", "rootfs": "local-lvm:vm-200-disk-0,size=4G"})
	// Tasks that hold the locks for the rest of the test.
	e.task("POST", "/nodes/pve/qemu/100/config", "description", "holder")
	e.task("POST", "/nodes/pve/lxc/200/status/shutdown")

	tests := []struct {
		name, method, path string
		kv                 []string
		want               string
	}{
		{"qemu config", "POST", "/nodes/pve/qemu/100/config", []string{"memory", "1024"}, qemuLock100},
		{"qemu start", "POST", "/nodes/pve/qemu/100/status/start", nil, qemuLock100},
		{"qemu stop", "POST", "/nodes/pve/qemu/100/status/stop", nil, qemuLock100},
		{"qemu shutdown", "POST", "/nodes/pve/qemu/100/status/shutdown", nil, qemuLock100},
		{"qemu reboot", "POST", "/nodes/pve/qemu/100/status/reboot", nil, qemuLock100},
		{"qemu resize", "PUT", "/nodes/pve/qemu/100/resize", []string{"disk", "scsi0", "size", "8G"}, qemuLock100},
		{"qemu clone", "POST", "/nodes/pve/qemu/100/clone", []string{"newid", "101"}, qemuLock100},
		{"ct stop", "POST", "/nodes/pve/lxc/200/status/stop", nil, ctLock200},
		{"ct reboot", "POST", "/nodes/pve/lxc/200/status/reboot", nil, ctLock200},
		{"ct resize", "PUT", "/nodes/pve/lxc/200/resize", []string{"disk", "rootfs", "size", "8G"}, ctLock200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			upid := e.task(tc.method, tc.path, tc.kv...)
			if st := e.wait(upid); st.ExitStatus != tc.want {
				t.Fatalf("got exit status %q, want %q", st.ExitStatus, tc.want)
			}
			want := []string{"trying to acquire lock...", "TASK ERROR: " + tc.want}
			if diff := cmp.Diff(want, e.taskLog(upid)); diff != "" {
				t.Errorf("task log (-want +got)\n%s", diff)
			}
		})
	}
	if c := e.config("100"); c["memory"] != "512" || c["scsi0"] != "local-lvm:vm-100-disk-0,size=4G" {
		t.Errorf("got config %v, want nothing changed by the failed tasks", c)
	}
	if e.Server.HasGuest(101) {
		t.Errorf("got VM 101 after its clone failed on the lock, want none")
	}
	for _, tc := range []struct{ path, want string }{
		{"/nodes/pve/qemu/100/config", qemuLock100},
		{"/nodes/pve/lxc/200/config", ctLock200},
	} {
		if r := e.call("PUT", tc.path, "description", "sync"); r.Status != 500 || r.Message != tc.want {
			t.Errorf("PUT %s: got %d %q, want 500 %q", tc.path, r.Status, r.Message, tc.want)
		}
	}
}

// A worker that finds the lock busy waits for it and then runs, as
// lock_file_full does ("trying to acquire lock..." then " OK").
func TestLockWaitThenRun(t *testing.T) {
	e := newEnv(t, pvesim.Options{TaskDuration: 30 * time.Millisecond, LockWait: 10 * time.Second})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "memory", "512")
	first := e.task("POST", "/nodes/pve/qemu/100/config", "memory", "1024")
	second := e.task("POST", "/nodes/pve/qemu/100/config", "cores", "2")
	// The synchronous PUT waits in the API process and lands after both.
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "name", "last")
	for _, upid := range []string{first, second} {
		if st := e.wait(upid); st.ExitStatus != "OK" {
			t.Fatalf("got exit status %q, want OK", st.ExitStatus)
		}
	}
	if log := e.taskLog(second); len(log) < 3 || log[0] != "trying to acquire lock..." || log[1] != " OK" {
		t.Errorf("got log %q for the waiting task, want it to wait for the lock first", log)
	}
	if c := e.config("100"); c["memory"] != "1024" || c["cores"] != float64(2) || c["name"] != "last" {
		t.Errorf("got config %v, want all three changes", c)
	}
}

// --lock-contention makes the lock someone else's for longer than PVE
// waits: tasks that lock in the worker fail, calls that lock in the API
// process answer the 500 (create with qemu-server's prefix), and calls
// that take no guest lock (network reload) are not affected.
func TestLockContention(t *testing.T) {
	e := newEnv(t, pvesim.Options{LockContention: 1, LockWait: 10 * time.Millisecond})
	e.Server.PutGuest("pve", 100, false, map[string]string{"name": "vm", "memory": "512"})
	if st := e.wait(e.task("POST", "/nodes/pve/qemu/100/status/start")); st.ExitStatus != qemuLock100 {
		t.Errorf("start: got exit status %q, want the lock timeout", st.ExitStatus)
	}
	if st := e.wait(e.task("DELETE", "/nodes/pve/qemu/100")); st.ExitStatus != qemuLock100 || !e.Server.HasGuest(100) {
		t.Errorf("destroy: got exit status %q (guest kept: %v), want the lock timeout and the guest kept", st.ExitStatus, e.Server.HasGuest(100))
	}
	if r := e.call("PUT", "/nodes/pve/qemu/100/config", "memory", "1024"); r.Status != 500 || r.Message != qemuLock100 {
		t.Errorf("PUT config: got %d %q, want 500 %q", r.Status, r.Message, qemuLock100)
	}
	r := e.call("POST", "/nodes/pve/qemu", "vmid", "101")
	if want := "unable to create VM 101 - can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout"; r.Status != 500 || r.Message != want {
		t.Errorf("create: got %d %q, want 500 %q", r.Status, r.Message, want)
	}
	if e.Server.HasGuest(101) {
		t.Errorf("got VM 101 after its create failed on the lock, want none")
	}
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr7", "type", "bridge")
	e.run("PUT", "/nodes/pve/network")
}

// Task status and lists name a token's user and token apart, as
// pve-manager's Tasks.pm does, although the UPID holds "user!token".
func TestTaskStatusSplitsToken(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	upid := e.task("POST", "/nodes/pve/qemu", "vmid", "100")
	if !strings.HasSuffix(upid, ":"+testToken+":") {
		t.Errorf("got UPID %s, want the full token id in it", upid)
	}
	e.wait(upid)
	st := e.object("/nodes/pve/tasks/" + url.PathEscape(upid) + "/status")
	rows := e.rows("/nodes/pve/tasks", "vmid", "100")
	user, token, _ := strings.Cut(testToken, "!")
	for _, got := range append(rows, st) {
		if got["user"] != user || got["tokenid"] != token {
			t.Errorf("got user %v tokenid %v, want %s and %s", got["user"], got["tokenid"], user, token)
		}
	}
}

// qemu-server's reboot and clone ask check_running first: a guest that is
// not there is "unable to find configuration file …", not the config
// reader's message.
func TestMissingGuestMessages(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	const want = "unable to find configuration file for VM 150 on node 'pve'"
	for path, kv := range map[string][]string{"/nodes/pve/qemu/150/status/reboot": nil, "/nodes/pve/qemu/150/clone": {"newid", "151"}} {
		if r := e.call("POST", path, kv...); r.Status != 500 || r.Message != want {
			t.Errorf("POST %s: got %d %q, want 500 %q", path, r.Status, r.Message, want)
		}
	}
	// Start, stop and resize look in the worker: the task fails.
	for path, want := range map[string]string{
		"/nodes/pve/qemu/150/status/start": "Configuration file 'nodes/pve/qemu-server/150.conf' does not exist",
		"/nodes/pve/qemu/150/status/stop":  want,
	} {
		if st := e.wait(e.task("POST", path)); st.ExitStatus != want {
			t.Errorf("POST %s: got exit status %q, want %q", path, st.ExitStatus, want)
		}
	}
	if st := e.wait(e.task("PUT", "/nodes/pve/qemu/150/resize", "disk", "scsi0", "size", "8G")); st.ExitStatus != "Configuration file 'nodes/pve/qemu-server/150.conf' does not exist" {
		t.Errorf("resize: got exit status %q", st.ExitStatus)
	}
	// A stopped VM does not reboot; neither does a container (which says VM too).
	e.Server.PutGuest("pve", 100, false, map[string]string{"memory": "512"})
	e.Server.PutContainer("pve", 200, false, map[string]string{"hostname": "ct"})
	for path, want := range map[string]string{
		"/nodes/pve/qemu/100/status/reboot": "VM 100 not running",
		"/nodes/pve/lxc/200/status/reboot":  "VM 200 not running",
	} {
		if r := e.call("POST", path); r.Status != 500 || r.Message != want {
			t.Errorf("POST %s: got %d %q, want 500 %q", path, r.Status, r.Message, want)
		}
	}
}

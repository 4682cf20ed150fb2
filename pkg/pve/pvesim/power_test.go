package pvesim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// pending lists the keys of GET …/pending that hold a change.
func (e *env) pending(typ, vmid string) []string {
	e.t.Helper()
	rows := e.rows("/nodes/pve/" + typ + "/" + vmid + "/pending")
	var keys []string
	for _, r := range rows {
		if _, p := r["pending"]; p {
			keys = append(keys, r["key"].(string))
		} else if _, d := r["delete"]; d {
			keys = append(keys, r["key"].(string))
		}
	}
	return keys
}

func (e *env) status(typ, vmid string) string {
	e.t.Helper()
	var st struct {
		Status string `json:"status"`
	}
	e.ok(&st, "GET", "/nodes/pve/"+typ+"/"+vmid+"/status/current")
	return st.Status
}

// qemu-server's reboot task ends when the VM has stopped; qmeventd's
// cleanup starts it again in a qmstart task of root@pam, which applies the
// pending changes. A container reboots within its vzreboot task.
func TestReboot(t *testing.T) {
	t.Run("qemu", func(t *testing.T) {
		// Tasks long enough that the test sees the VM between the reboot
		// task's end and the restart's.
		e := newEnv(t, pvesim.Options{TaskDuration: 500 * time.Millisecond, LockWait: 10 * time.Second})
		e.Server.PutGuest("pve", 100, true, map[string]string{"memory": "512", "cores": "1"})
		e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "cores", "2")
		if got := e.pending("qemu", "100"); len(got) != 1 || got[0] != "cores" {
			t.Fatalf("got pending %v before the reboot, want cores", got)
		}
		e.run("POST", "/nodes/pve/qemu/100/status/reboot")
		if got, pend := e.status("qemu", "100"), e.pending("qemu", "100"); got != "stopped" || len(pend) != 1 {
			t.Errorf("got %s with pending %v when the reboot task ended, want stopped with cores pending", got, pend)
		}
		rows := e.rows("/nodes/pve/tasks", "source", "all", "vmid", "100", "typefilter", "qmstart")
		if len(rows) != 1 || rows[0]["user"] != "root@pam" || rows[0]["tokenid"] != nil {
			t.Fatalf("got qmstart tasks %v, want the restart by root@pam newest", rows)
		}
		if st := e.wait(rows[0]["upid"].(string)); st.ExitStatus != "OK" {
			t.Fatalf("got restart exit status %q, want OK", st.ExitStatus)
		}
		if got, pend := e.status("qemu", "100"), e.pending("qemu", "100"); got != "running" || len(pend) != 0 {
			t.Errorf("got %s with pending %v after the restart, want running with nothing pending", got, pend)
		}
		if c := e.config("100"); c["cores"] != float64(2) {
			t.Errorf("got cores %v after the restart, want 2", c["cores"])
		}
	})
	t.Run("lxc", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{})
		e.Server.PutContainer("pve", 200, true, map[string]string{"hostname": "ct", "rootfs": "local-lvm:vm-200-disk-0,size=4G"})
		e.ok(nil, "PUT", "/nodes/pve/lxc/200/config", "nameserver", "10.0.0.53")
		if got := e.pending("lxc", "200"); len(got) != 1 {
			t.Fatalf("got pending %v, want nameserver", got)
		}
		e.run("POST", "/nodes/pve/lxc/200/status/reboot")
		if got, pend := e.status("lxc", "200"), e.pending("lxc", "200"); got != "running" || len(pend) != 0 {
			t.Errorf("got %s with pending %v after vzreboot, want running with nothing pending", got, pend)
		}
	})
}

// qemu-server's _do_vm_stop looks once a second, timeout times: a guest
// that needs a moment to power off is down only for a timeout of 2 s or
// more. Without forceStop the task then fails and the VM keeps running;
// with it the VM is terminated.
func TestShutdownTimeout(t *testing.T) {
	tests := []struct {
		name, timeout, force, exit string
		running                    bool
		log                        string
	}{
		{name: "timeout 0", timeout: "0", exit: "VM quit/powerdown failed - got timeout", running: true},
		{name: "timeout 1", timeout: "1", exit: "VM quit/powerdown failed - got timeout", running: true},
		{name: "forced", timeout: "0", force: "1", exit: "OK", log: "VM still running - terminating now with SIGTERM"},
		{name: "timeout 2", timeout: "2", exit: "OK"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, pvesim.Options{})
			e.Server.PutGuest("pve", 100, true, map[string]string{"memory": "512"})
			kv := []string{"timeout", tc.timeout}
			if tc.force != "" {
				kv = append(kv, "forceStop", tc.force)
			}
			upid := e.task("POST", "/nodes/pve/qemu/100/status/shutdown", kv...)
			if st := e.wait(upid); st.ExitStatus != tc.exit {
				t.Errorf("got exit status %q, want %q", st.ExitStatus, tc.exit)
			}
			if got := e.status("qemu", "100") == "running"; got != tc.running {
				t.Errorf("got running %v, want %v", got, tc.running)
			}
			if tc.log != "" && !strings.Contains(strings.Join(e.taskLog(upid), "\n"), tc.log) {
				t.Errorf("got log %q, want %q", e.taskLog(upid), tc.log)
			}
		})
	}
	// A reboot shuts down without forceStop: its timeout fails it alike.
	e := newEnv(t, pvesim.Options{})
	e.Server.PutGuest("pve", 100, true, map[string]string{"memory": "512"})
	if st := e.wait(e.task("POST", "/nodes/pve/qemu/100/status/reboot", "timeout", "1")); st.ExitStatus != "VM quit/powerdown failed - got timeout" {
		t.Errorf("reboot: got exit status %q, want the shutdown timeout", st.ExitStatus)
	}
}

// qemu-server checks a resize inside the worker, under the lock; the same
// size is a no-op there. pve-container checks before it forks as well,
// and refuses the same size.
func TestResizeChecks(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.Server.PutGuest("pve", 100, false, map[string]string{"memory": "512", "scsi0": "local-lvm:vm-100-disk-0,size=4G",
		"ide2": "local:iso/x.iso,media=cdrom"})
	e.Server.PutContainer("pve", 200, false, map[string]string{"hostname": "ct", "rootfs": "local-lvm:vm-200-disk-0,size=4G"})
	for _, tc := range []struct{ name, disk, size, digest, exit string }{
		{"shrink", "scsi0", "2G", "", "shrinking disks is not supported"},
		{"missing disk", "scsi1", "8G", "", "disk 'scsi1' does not exist"},
		{"cdrom", "ide2", "8G", "", "you can't resize a cdrom"},
		{"stale digest", "scsi0", "8G", strings.Repeat("0", 40), "checksum mismatch (file change by other user?)"},
		{"same size", "scsi0", "4G", "", "OK"},
	} {
		t.Run("qemu "+tc.name, func(t *testing.T) {
			kv := []string{"disk", tc.disk, "size", tc.size}
			if tc.digest != "" {
				kv = append(kv, "digest", tc.digest)
			}
			if st := e.wait(e.task("PUT", "/nodes/pve/qemu/100/resize", kv...)); st.ExitStatus != tc.exit {
				t.Errorf("got exit status %q, want %q", st.ExitStatus, tc.exit)
			}
		})
	}
	for _, tc := range []struct{ name, size, digest, msg string }{
		{"shrink", "2G", "", "unable to shrink disk size"},
		{"same size", "4G", "", "disk is already at specified size"},
		{"stale digest", "8G", strings.Repeat("0", 40), "detected modified configuration - file changed by other user? Try again."},
	} {
		t.Run("lxc "+tc.name, func(t *testing.T) {
			kv := []string{"disk", "rootfs", "size", tc.size}
			if tc.digest != "" {
				kv = append(kv, "digest", tc.digest)
			}
			if r := e.call("PUT", "/nodes/pve/lxc/200/resize", kv...); r.Status != 500 || r.Message != tc.msg {
				t.Errorf("got %d %q, want 500 %q", r.Status, r.Message, tc.msg)
			}
		})
	}
	if c := e.config("100"); c["scsi0"] != "local-lvm:vm-100-disk-0,size=4G" {
		t.Errorf("got scsi0 %v, want it unchanged", c["scsi0"])
	}
}

// While qemu-server clones, the target's config is its temporary file:
// "lock: clone" and the comment line that reads back as the description.
func TestCloneTargetWhileCloning(t *testing.T) {
	e := newEnv(t, pvesim.Options{TaskDuration: time.Hour})
	e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101", "name", "app", "description", "mine")
	c := e.config("101")
	delete(c, "digest")
	if len(c) != 2 || c["lock"] != "clone" || c["description"] != " qmclone temporary file" {
		t.Errorf("got target config %v while cloning, want lock clone and the temporary description only", c)
	}
}

package pvesim_test

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// taskLog fetches a task's log lines.
func (e *env) taskLog(upid string) []string {
	e.t.Helper()
	var rows []struct {
		N int    `json:"n"`
		T string `json:"t"`
	}
	e.ok(&rows, "GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/log", "start", "0", "limit", "500")
	var out []string
	for _, r := range rows {
		out = append(out, r.T)
	}
	return out
}

func TestTaskStatusStartWindow(t *testing.T) {
	// pve-common RESTEnvironment.pm fork_worker: the worker creates its task
	// log before the parent answers the UPID, so by default the status of a
	// task is readable at once.
	t.Run("readable at once by default", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{TaskDuration: time.Hour})
		upid := e.task("POST", "/nodes/pve/qemu", "vmid", "100")
		var st taskStatus
		e.ok(&st, "GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/status")
		if st.Status != "running" || st.ExitStatus != "" {
			t.Errorf("got %+v right after the start, want running without exit status", st)
		}
		if log := e.taskLog(upid); slices.Contains(log, "unable to open file - No such file or directory") {
			t.Errorf("log right after the start: %q, want the task's own log", log)
		}
	})
	t.Run("injected: unreadable while the task file seems missing", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{TaskDuration: time.Hour, TaskStatusDelay: time.Hour})
		upid := e.task("POST", "/nodes/pve/qemu", "vmid", "100")
		r := e.call("GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/status")
		if r.Status != 400 || r.Message != "Parameter verification failed." || r.Errors["upid"] != "no such task" {
			t.Errorf("got %d %q %v right after the start, want 400 errors.upid no such task", r.Status, r.Message, r.Errors)
		}
		if diff := cmp.Diff([]string{"unable to open file - No such file or directory"}, e.taskLog(upid)); diff != "" {
			t.Errorf("log right after the start (-want +got)\n%s", diff)
		}
	})
	t.Run("negative disables it", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{TaskDuration: time.Hour, TaskStatusDelay: -1})
		upid := e.task("POST", "/nodes/pve/qemu", "vmid", "100")
		var st taskStatus
		e.ok(&st, "GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/status")
		if st.Status != "running" || st.ExitStatus != "" {
			t.Errorf("got %+v, want running without exit status", st)
		}
	})
	t.Run("never outlasts the task", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{TaskDuration: time.Millisecond, TaskStatusDelay: time.Hour})
		if st := e.wait(e.task("POST", "/nodes/pve/qemu", "vmid", "100")); st.ExitStatus != "OK" {
			t.Errorf("got exit status %q, want OK", st.ExitStatus)
		}
	})
}

func TestTaskWarnings(t *testing.T) {
	e := newEnv(t, pvesim.Options{WarnRate: 1})
	upid := e.task("POST", "/nodes/pve/qemu", "vmid", "100", "name", "w")
	if st := e.wait(upid); st.ExitStatus != "WARNINGS: 1" {
		t.Errorf("got exit status %q, want WARNINGS: 1", st.ExitStatus)
	}
	log := e.taskLog(upid)
	if len(log) < 2 || !strings.HasPrefix(log[len(log)-2], "WARN: ") || log[len(log)-1] != "TASK WARNINGS: 1" {
		t.Errorf("got log %q, want a WARN: line and TASK WARNINGS: 1 last", log)
	}
	if c := e.config("100"); c["name"] != "w" || c["lock"] != nil {
		t.Errorf("got config %v, want the create applied despite the warning", c)
	}
	rows := e.rows("/nodes/pve/tasks", "vmid", "100")
	if len(rows) != 1 || rows[0]["status"] != "WARNINGS: 1" {
		t.Errorf("got task list %v, want status WARNINGS: 1", rows)
	}

	// A failing task still fails: warnings only decorate successes.
	e.run2(t, "POST", "/nodes/pve/qemu/100/status/start")
	if st := e.wait(e.task("POST", "/nodes/pve/qemu/100/status/start")); st.ExitStatus != "VM 100 already running" {
		t.Errorf("got exit status %q, want the error", st.ExitStatus)
	}
}

// run2 runs a task that may end with warnings.
func (e *env) run2(t *testing.T, method, path string, kv ...string) {
	t.Helper()
	if st := e.wait(e.task(method, path, kv...)); st.ExitStatus != "OK" && !strings.HasPrefix(st.ExitStatus, "WARNINGS: ") {
		t.Fatalf("%s %s: got exit status %q, want success", method, path, st.ExitStatus)
	}
}

func TestCloneLocks(t *testing.T) {
	const timeout = "can't lock file '/var/lock/qemu-server/lock-%s.conf' - got timeout"
	e := newEnv(t, pvesim.Options{TaskDuration: time.Hour, LockWait: 20 * time.Millisecond})
	e.Server.PutGuest("pve", 100, true, map[string]string{"name": "live", "memory": "512"})

	// A stopped source is locked shared: clones of one template run side by side.
	e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101")
	e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "102")
	// A running source is locked exclusively.
	e.task("POST", "/nodes/pve/qemu/100/clone", "newid", "103")
	for _, id := range []string{"101", "102", "103"} {
		if c := e.config(id); c["lock"] != "clone" {
			t.Errorf("got target %s config %v, want lock clone", id, c)
		}
	}

	tests := []struct {
		name, method, path string
		kv                 []string
		vmid               string
		inTask             bool // the worker takes the lock: the task fails, not the call
	}{
		{"write to the template", "PUT", "/nodes/pve/qemu/9000/config", []string{"description", "x"}, "9000", false},
		{"write to a target", "PUT", "/nodes/pve/qemu/101/config", []string{"memory", "1024"}, "101", false},
		{"second clone of a running source", "POST", "/nodes/pve/qemu/100/clone", []string{"newid", "104"}, "100", true},
		{"write to a running source", "PUT", "/nodes/pve/qemu/100/config", []string{"name", "y"}, "100", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Replace(timeout, "%s", tc.vmid, 1)
			if tc.inTask {
				if st := e.wait(e.task(tc.method, tc.path, tc.kv...)); st.ExitStatus != want {
					t.Errorf("got exit status %q, want %q", st.ExitStatus, want)
				}
				return
			}
			if r := e.call(tc.method, tc.path, tc.kv...); r.Status != 500 || r.Message != want {
				t.Errorf("got %d %q, want 500 %q", r.Status, r.Message, want)
			}
		})
	}
	// The clone that could not lock its source left nothing behind.
	if e.Server.HasGuest(104) {
		t.Errorf("got VM 104 after its clone failed on the lock, want none")
	}
}

// A template whose base volume a linked clone names cannot be destroyed
// (qemu-server QemuServer.pm destroy_vm), nor its base volume deleted
// (pve-storage Storage.pm vdisk_free, in the imgdel worker); LVM-thin's
// clones do not name their base, and PVE lets it go.
func TestDestroyTemplateWithLinkedClone(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/storage", "storage", "tpl", "type", "dir", "path", t.TempDir(), "content", "images")
	e.run("POST", "/nodes/pve/qemu/9000/clone", "newid", "200", "full", "1", "storage", "tpl", "format", "qcow2")
	e.run("POST", "/nodes/pve/qemu/200/template")
	base := "tpl:200/base-200-disk-0.qcow2"
	if c := e.config("200"); !strings.HasPrefix(fmt.Sprint(c["scsi0"]), base+",") {
		t.Fatalf("got scsi0 %v, want the base volume %s", c["scsi0"], base)
	}
	e.run("POST", "/nodes/pve/qemu/200/clone", "newid", "201")
	st := e.wait(e.task("DELETE", "/nodes/pve/qemu/200"))
	if want := "base volume '" + base + "' is still in use by linked cloned"; st.ExitStatus != want {
		t.Errorf("got exit status %q, want %q", st.ExitStatus, want)
	}
	if c := e.config("200"); c["template"] != float64(1) {
		t.Errorf("got config %v after a refused destroy, want the template kept", c)
	}
	st = e.wait(e.task("DELETE", "/nodes/pve/storage/tpl/content/"+url.PathEscape(base)))
	if want := "base volume '200/base-200-disk-0.qcow2' is still in use by linked clones"; st.ExitStatus != want {
		t.Errorf("deleting the base volume: got exit status %q, want %q", st.ExitStatus, want)
	}
	e.run("DELETE", "/nodes/pve/qemu/201")
	e.run("DELETE", "/nodes/pve/qemu/200")

	// LVM-thin: the clone's thin snapshot survives its base.
	e.run("POST", "/nodes/pve/qemu/9000/clone", "newid", "101")
	e.run("DELETE", "/nodes/pve/qemu/9000")
	if c := e.config("101"); c["scsi0"] == nil {
		t.Errorf("got config %v, want the linked clone kept with its disk", c)
	}
}

func TestNetworkUpdateMerges(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	// A bridge may not have a larger MTU than its port.
	e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "mtu", "9000")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "bridge_ports", "eno2",
		"bridge_vlan_aware", "1", "bridge_vids", "2,3 4", "autostart", "1", "comments", "lab", "cidr", "10.0.0.1/24")
	get := func() map[string]any {
		return e.object("/nodes/pve/network/vmbr1")
	}
	pick := func(m map[string]any, keys ...string) map[string]any {
		out := map[string]any{}
		for _, k := range keys {
			out[k] = m[k]
		}
		return out
	}
	keys := []string{"autostart", "bridge_ports", "bridge_vlan_aware", "bridge_vids", "comments", "cidr", "method", "mtu"}
	tests := []struct {
		name string
		kv   []string
		want map[string]any
	}{
		{"created, lists space separated", nil, map[string]any{"autostart": 1.0, "bridge_ports": "eno2",
			"bridge_vlan_aware": 1.0, "bridge_vids": "2 3 4", "comments": "lab\n", "cidr": "10.0.0.1/24", "method": "static", "mtu": nil}},
		{"keys not sent stay, method follows the address sent", []string{"type", "bridge", "mtu", "9000"},
			map[string]any{"autostart": 1.0, "bridge_ports": "eno2", "bridge_vlan_aware": 1.0, "bridge_vids": "2 3 4",
				"comments": "lab\n", "cidr": "10.0.0.1/24", "method": "manual", "mtu": "9000"}},
		{"delete removes", []string{"type", "bridge", "cidr", "10.0.0.1/24", "delete", "comments,bridge_vlan_aware,bridge_vids"},
			map[string]any{"autostart": 1.0, "bridge_ports": "eno2", "bridge_vlan_aware": nil, "bridge_vids": nil,
				"comments": nil, "cidr": "10.0.0.1/24", "method": "static", "mtu": "9000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.kv != nil {
				e.ok(nil, "PUT", "/nodes/pve/network/vmbr1", tc.kv...)
			}
			if diff := cmp.Diff(tc.want, pick(get(), keys...)); diff != "" {
				t.Errorf("vmbr1 (-want +got)\n%s", diff)
			}
		})
	}
	for m, kv := range map[string][]string{"GET": nil, "PUT": {"type", "bridge"}, "DELETE": nil} {
		r := e.call(m, "/nodes/pve/network/vmbr9", kv...)
		if r.Status != 400 || r.Errors["iface"] != "interface does not exist" {
			t.Errorf("%s of a missing interface: got %d %q %v, want 400 errors.iface", m, r.Status, r.Message, r.Errors)
		}
	}
}

func TestNetworkChangesHeader(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge")
	r := e.ok(nil, "GET", "/nodes/pve/network")
	const stamp = `\t\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9} [+-]\d{4}\n`
	re := regexp.MustCompile(`^--- /etc/network/interfaces` + stamp + `\+\+\+ /etc/network/interfaces\.new` + stamp + `@@ `)
	if r.Changes == nil || !re.MatchString(*r.Changes) {
		t.Errorf("got changes %v, want diff -u headers with modification times", r.Changes)
	}
}

func TestStartNeedsAppliedBridge(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "autostart", "1")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "net0", "virtio,bridge=vmbr1")

	// Staged in interfaces.new only: the bridge does not exist yet.
	upid := e.task("POST", "/nodes/pve/qemu/100/status/start")
	if st := e.wait(upid); st.ExitStatus != "start failed: QEMU exited with code 1" {
		t.Errorf("got exit status %q, want the QEMU start failure", st.ExitStatus)
	}
	if log := e.taskLog(upid); len(log) == 0 || log[0] != "bridge 'vmbr1' does not exist" {
		t.Errorf("got log %q, want it to name the missing bridge", log)
	}
	st := e.object("/nodes/pve/qemu/100/status/current")
	if st["status"] != "stopped" {
		t.Errorf("got status %v after a failed start, want stopped", st["status"])
	}

	e.run("PUT", "/nodes/pve/network")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
}

func TestPowerStateChecks(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100")
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:2", "hostname", "c1")

	// qemu-server decides in the worker.
	tasks := []struct{ path, exit string }{
		{"/nodes/pve/qemu/100/status/shutdown", "OK"},
		{"/nodes/pve/qemu/100/status/stop", "OK"},
		{"/nodes/pve/qemu/9000/status/start", "you can't start a vm if it's a template"},
	}
	for _, tc := range tasks {
		t.Run(tc.path, func(t *testing.T) {
			if st := e.wait(e.task("POST", tc.path)); st.ExitStatus != tc.exit {
				t.Errorf("got exit status %q, want %q", st.ExitStatus, tc.exit)
			}
		})
	}

	// pve-container refuses before it forks.
	refused := []struct{ path, msg string }{
		{"/nodes/pve/lxc/200/status/shutdown", "CT 200 not running"},
		{"/nodes/pve/lxc/200/status/stop", "CT 200 not running"},
	}
	for _, tc := range refused {
		t.Run(tc.path, func(t *testing.T) {
			if r := e.call("POST", tc.path); r.Status != 500 || r.Message != tc.msg {
				t.Errorf("got %d %q, want 500 %q", r.Status, r.Message, tc.msg)
			}
		})
	}
	e.run("POST", "/nodes/pve/lxc/200/status/start")
	if r := e.call("POST", "/nodes/pve/lxc/200/status/start"); r.Status != 500 || r.Message != "CT 200 already running" {
		t.Errorf("got %d %q starting a running CT, want 500 CT 200 already running", r.Status, r.Message)
	}
}

// A linked clone on a file storage lists its base as qemu-img's backing
// file (pve-storage Plugin.pm list_images); LVM-thin lists none.
func TestLinkedCloneParent(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/storage", "storage", "tpl", "type", "dir", "path", t.TempDir(), "content", "images")
	e.run("POST", "/nodes/pve/qemu/9000/clone", "newid", "200", "full", "1", "storage", "tpl", "format", "qcow2")
	e.run("POST", "/nodes/pve/qemu/200/template")
	e.run("POST", "/nodes/pve/qemu/200/clone", "newid", "201")
	e.run("POST", "/nodes/pve/qemu/9000/clone", "newid", "101")
	parents := map[string]any{}
	for _, sid := range []string{"tpl", "local-lvm"} {
		rows := e.rows("/nodes/pve/storage/" + sid + "/content")
		for _, r := range rows {
			parents[fmt.Sprint(r["volid"])] = r["parent"]
		}
	}
	want := map[string]any{
		"tpl:200/base-200-disk-0.qcow2":                         nil,
		"tpl:200/base-200-disk-0.qcow2/201/vm-201-disk-0.qcow2": "../200/base-200-disk-0.qcow2",
		"local-lvm:vm-101-disk-0":                               nil,
	}
	for volid, p := range want {
		got, ok := parents[volid]
		if !ok || got != p {
			t.Errorf("%s: parent %v (listed %v), want %v; all: %v", volid, got, ok, p, parents)
		}
	}
}

package pvesim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// snapshots lists a guest's snapshots by name.
func (e *env) snapshots(api, vmid string) map[string]map[string]any {
	e.t.Helper()
	return e.rowsBy("name", "/nodes/pve/"+api+"/"+vmid+"/snapshot")
}

// A VM's snapshot: create (with its RAM while running), list with
// `current` and `parent`, the lock while each task runs, the snapshot's
// config, rollback and delete — AbstractConfig.pm snapshot_create,
// snapshot_rollback, snapshot_delete; qemu-server API2/Qemu.pm.
func TestVMSnapshotLifecycle(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8", "memory", "1024", "start", "1")

	release := e.Server.HoldTasks()
	upid := e.task("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "before", "vmstate", "1", "description", "first")
	if got := e.config("100")["lock"]; got != "snapshot" {
		t.Errorf("lock while qmsnapshot runs: got %v, want snapshot", got)
	}
	if got := e.snapshots("qemu", "100")["before"]["snapstate"]; got != "prepare" {
		t.Errorf("snapstate while qmsnapshot runs: got %v, want prepare", got)
	}
	release()
	if st := e.wait(upid); st.ExitStatus != "OK" || st.Type != "qmsnapshot" {
		t.Fatalf("qmsnapshot: got %+v", st)
	}
	snaps := e.snapshots("qemu", "100")
	if b := snaps["before"]; b["vmstate"] != 1.0 || b["description"] != "first" || b["snaptime"] == 0.0 || b["parent"] != nil {
		t.Errorf("snapshot row: got %v", b)
	}
	if c := snaps["current"]; c["parent"] != "before" || c["running"] != 1.0 || c["description"] != "You are here!" {
		t.Errorf("current row: got %v", c)
	}
	c := e.config("100")
	if c["lock"] != nil || c["parent"] != "before" {
		t.Errorf("config after the snapshot: lock %v parent %v", c["lock"], c["parent"])
	}
	sc := e.object("/nodes/pve/qemu/100/snapshot/before/config")
	if vs, _ := sc["vmstate"].(string); vs != "local-lvm:vm-100-state-before" || sc["scsi0"] != c["scsi0"] || sc["memory"] != "1024" || sc["snaptime"] == nil {
		t.Errorf("snapshot config: got %v", sc)
	}
	e.object("/nodes/pve/storage/local-lvm/content/local-lvm:vm-100-state-before") // the state volume exists

	e.ok(nil, "PUT", "/nodes/pve/qemu/100/snapshot/before/config", "description", "renamed")
	e.ok(&sc, "GET", "/nodes/pve/qemu/100/config", "snapshot", "before")
	if sc["description"] != "renamed" || sc["digest"] == nil {
		t.Errorf("GET config?snapshot=before: got %v", sc)
	}

	e.run("POST", "/nodes/pve/qemu/100/config", "memory", "2048")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "after")
	if got := e.snapshots("qemu", "100")["after"]; got["parent"] != "before" || got["vmstate"] != 0.0 {
		t.Errorf("second snapshot: got %v", got)
	}

	e.heldTask(t, "100", "rollback", "qmrollback", "POST", "/nodes/pve/qemu/100/snapshot/before/rollback")
	c = e.config("100")
	if c["memory"] != "1024" && c["memory"] != 1024.0 || c["parent"] != "before" || c["lock"] != nil {
		t.Errorf("config after the rollback: memory %v parent %v lock %v", c["memory"], c["parent"], c["lock"])
	}
	status := e.object("/nodes/pve/qemu/100/status/current")
	if status["status"] != "running" {
		t.Errorf("a rollback to a snapshot with RAM starts the VM: got %v", status["status"])
	}

	e.heldTask(t, "100", "snapshot-delete", "qmdelsnapshot", "DELETE", "/nodes/pve/qemu/100/snapshot/before")
	snaps = e.snapshots("qemu", "100")
	if _, ok := snaps["before"]; ok || snaps["after"]["parent"] != nil || snaps["current"]["parent"] != nil {
		t.Errorf("after deleting the parent: got %v", snaps)
	}
	if r := e.call("GET", "/nodes/pve/storage/local-lvm/content/local-lvm:vm-100-state-before"); r.Status == 200 {
		t.Errorf("the vmstate volume outlived its snapshot")
	}

	// Destroying the VM frees its snapshots' RAM volumes too.
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "ram2", "vmstate", "1")
	e.run("POST", "/nodes/pve/qemu/100/status/stop")
	e.run("DELETE", "/nodes/pve/qemu/100")
	vols := e.rows("/nodes/pve/storage/local-lvm/content", "vmid", "100")
	if len(vols) != 0 {
		t.Errorf("volumes of the destroyed VM: %v", vols)
	}
}

// PVE's refusals: reserved and invalid names, a name in use, a storage
// that cannot snapshot (volume_has_feature: raw on a directory, LVM),
// a template, a missing snapshot, and a template made of a VM with
// snapshots (qemu-server API2/Qemu.pm template).
func TestSnapshotRefusals(t *testing.T) {
	e := startEnv(t, simtest.Options{}) // it sends what the schema refuses
	e.ok(nil, "POST", "/storage", "storage", "images2", "type", "dir", "path", "/srv/images2", "content", "images,rootdir")
	e.ok(nil, "POST", "/storage", "storage", "thick", "type", "lvm", "vgname", "vg0", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8")
	e.run("POST", "/nodes/pve/qemu", "vmid", "102", "scsi0", "images2:8,format=qcow2")
	e.run("POST", "/nodes/pve/qemu", "vmid", "103", "scsi0", "thick:8")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s1")
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "rootfs", "local-lvm:4")
	// A container's volume on a directory is a raw file.
	e.run("POST", "/nodes/pve/lxc", "vmid", "201", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "rootfs", "images2:4")
	if r := e.call("POST", "/nodes/pve/lxc/200/snapshot", "snapname", "s1", "vmstate", "1"); r.Status != 400 {
		t.Errorf("vmstate on a container: got %d, want 400 (not a parameter)", r.Status)
	}

	calls := []struct {
		name, vmid, snap string
		status           int
		msg              string
	}{
		{"reserved current", "100", "current", 500, "unable to use snapshot name 'current' (reserved name)"},
		{"reserved pending", "100", "PENDING", 500, "unable to use snapshot name 'PENDING' (reserved name)"},
		{"invalid name", "100", "1st", 400, ""},
		{"missing guest", "199", "s2", 500, "Configuration file 'nodes/pve/qemu-server/199.conf' does not exist"},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/nodes/pve/qemu/"+tc.vmid+"/snapshot", "snapname", tc.snap)
			if r.Status != tc.status || tc.msg != "" && r.Message != tc.msg {
				t.Errorf("got %d %q %v, want %d %q", r.Status, r.Message, r.Errors, tc.status, tc.msg)
			}
		})
	}
	failing := []struct {
		name, method, path string
		kv                 []string
		exit               string
	}{
		{"name in use", "POST", "/nodes/pve/qemu/100/snapshot", []string{"snapname", "s1"}, "snapshot name 's1' already used"},
		{"raw on dir", "POST", "/nodes/pve/lxc/201/snapshot", []string{"snapname", "s1"}, "snapshot feature is not available"},
		{"lvm", "POST", "/nodes/pve/qemu/103/snapshot", []string{"snapname", "s1"}, "snapshot feature is not available"},
		{"missing rollback", "POST", "/nodes/pve/qemu/100/snapshot/nope/rollback", nil, "snapshot 'nope' does not exist"},
		{"missing delete", "DELETE", "/nodes/pve/qemu/100/snapshot/nope", nil, "snapshot 'nope' does not exist"},
	}
	for _, tc := range failing {
		t.Run(tc.name, func(t *testing.T) {
			if st := e.wait(e.task(tc.method, tc.path, tc.kv...)); st.ExitStatus != tc.exit {
				t.Errorf("exit status: got %q, want %q", st.ExitStatus, tc.exit)
			}
		})
	}
	e.run("POST", "/nodes/pve/qemu/102/snapshot", "snapname", "s1") // qcow2 on a directory can
	if r := e.call("GET", "/nodes/pve/qemu/100/snapshot/nope/config"); r.Status != 500 || r.Message != "snapshot 'nope' does not exist" {
		t.Errorf("config of a missing snapshot: got %d %q", r.Status, r.Message)
	}
	if r := e.call("POST", "/nodes/pve/qemu/100/template"); r.Status != 500 || r.Message != "unable to create template, because VM contains snapshots" {
		t.Errorf("template of a VM with snapshots: got %d %q", r.Status, r.Message)
	}
	if r := e.call("DELETE", "/nodes/pve/qemu/100/snapshot/s1"); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Message)
	}
}

// A container's snapshots work alike through vzsnapshot, vzrollback and
// vzdelsnapshot (pve-container API2/LXC/Snapshot.pm); its list has no
// vmstate, and a rollback of a running container stops it.
func TestContainerSnapshotLifecycle(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:4", "hostname", "ct1", "start", "1")
	if r := e.call("POST", "/nodes/pve/lxc/200/snapshot", "snapname", "vzdump"); r.Status != 500 || !strings.Contains(r.Message, "reserved name") {
		t.Errorf("vzdump: got %d %q", r.Status, r.Message)
	}
	release := e.Server.HoldTasks()
	upid := e.task("POST", "/nodes/pve/lxc/200/snapshot", "snapname", "s1")
	c := e.object("/nodes/pve/lxc/200/config")
	if c["lock"] != "snapshot" {
		t.Errorf("lock while vzsnapshot runs: got %v", c["lock"])
	}
	release()
	if st := e.wait(upid); st.ExitStatus != "OK" || st.Type != "vzsnapshot" {
		t.Fatalf("vzsnapshot: %+v", st)
	}
	s1 := e.snapshots("lxc", "200")["s1"]
	if _, ok := s1["vmstate"]; ok || s1["snaptime"] == nil {
		t.Errorf("container snapshot row: got %v", s1)
	}
	e.ok(nil, "PUT", "/nodes/pve/lxc/200/config", "hostname", "renamed")
	e.run("POST", "/nodes/pve/lxc/200/snapshot/s1/rollback")
	e.ok(&c, "GET", "/nodes/pve/lxc/200/config")
	if c["hostname"] != "ct1" || c["parent"] != "s1" {
		t.Errorf("after the rollback: hostname %v parent %v", c["hostname"], c["parent"])
	}
	status := e.object("/nodes/pve/lxc/200/status/current")
	if status["status"] != "stopped" {
		t.Errorf("a rollback stops the container: got %v", status["status"])
	}
	if r := e.call("POST", "/nodes/pve/lxc/200/template"); r.Status != 500 || r.Message != "unable to create template, because CT contains snapshots" {
		t.Errorf("template of a CT with snapshots: got %d %q", r.Status, r.Message)
	}
	e.run("DELETE", "/nodes/pve/lxc/200/snapshot/s1")
	if snaps := e.snapshots("lxc", "200"); len(snaps) != 1 {
		t.Errorf("after delete: got %v", snaps)
	}
}

// Who may snapshot: VM.Snapshot for create and delete, either snapshot
// privilege for a rollback, and a VM's rollback with start=1 also
// VM.PowerMgmt (qemu-server API2/Qemu.pm rollback; pve-container's does
// not ask); a missing container's
// snapshot is a task that fails (pve-container reads the config in it).
func TestSnapshotPermissionsAndChecks(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s1")
	e.ok(nil, "POST", "/access/roles", "roleid", "Snapper", "privs", "VM.Snapshot,VM.Audit")
	tok := e.newToken("snap@pve", "tk", false)
	e.grant("/vms/100", "Snapper", "users", "snap@pve")
	wantDenied(t, e.as(tok, "POST", "/nodes/pve/qemu/100/snapshot/s1/rollback", "start", "1"), "/vms/100, VM.PowerMgmt")
	if r := e.as(tok, "POST", "/nodes/pve/qemu/100/snapshot/s1/rollback"); r.Status != 200 {
		t.Errorf("rollback with VM.Snapshot: got %d %q", r.Status, r.Message)
	}
	plain := e.newToken("plain@pve", "tk", false)
	wantDenied(t, e.as(plain, "POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s2"), "/vms/100, VM.Snapshot")

	if st := e.wait(e.task("POST", "/nodes/pve/lxc/299/snapshot", "snapname", "s1")); st.ExitStatus != "Configuration file 'nodes/pve/lxc/299.conf' does not exist" {
		t.Errorf("snapshot of a missing container: got %q", st.ExitStatus)
	}
}

// A clone of a snapshot copies the snapshot's config, not the current
// one (qemu-server API2/Qemu.pm clone_vm with snapname); a missing
// snapshot is refused before the worker.
func TestCloneFromSnapshot(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8", "memory", "1024", "name", "src")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s1", "description", "golden")
	e.run("POST", "/nodes/pve/qemu/100/config", "memory", "4096")
	if r := e.call("POST", "/nodes/pve/qemu/100/clone", "newid", "101", "snapname", "nope"); r.Status != 500 || r.Message != "snapshot 'nope' does not exist" {
		t.Errorf("clone of a missing snapshot: got %d %q", r.Status, r.Message)
	}
	e.run("POST", "/nodes/pve/qemu/100/clone", "newid", "101", "snapname", "s1", "name", "from-s1")
	c := e.config("101")
	if c["memory"] != "1024" || c["description"] != "golden" || c["parent"] != nil || c["snaptime"] != nil {
		t.Errorf("clone of s1: memory %v description %v parent %v snaptime %v", c["memory"], c["description"], c["parent"], c["snaptime"])
	}
	if got, _ := c["scsi0"].(string); !strings.HasPrefix(got, "local-lvm:vm-101-disk-0,") {
		t.Errorf("clone of s1: scsi0 %v", c["scsi0"])
	}
}

// A local volume that a snapshot names migrates only where PVE can take
// its snapshots along: a VM's qcow2 file when stopped, not an LVM-thin
// volume ("non-migratable snapshot exists"; QemuMigrate.pm
// scan_local_volumes); a container's only on ZFS or BTRFS (LXC/Migrate.pm).
func TestMigrateWithSnapshots(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	e.ok(nil, "POST", "/storage", "storage", "images2", "type", "dir", "path", "/srv/images2", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:4")
	e.run("POST", "/nodes/pve/qemu", "vmid", "101", "scsi0", "images2:4,format=qcow2")
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "rootfs", "local-lvm:4")
	for _, g := range []string{"qemu/100", "qemu/101", "lxc/200"} {
		e.run("POST", "/nodes/pve/"+g+"/snapshot", "snapname", "s1")
	}
	aborted := func(path, typ string, lines ...string) {
		t.Helper()
		if st := e.wait(e.task("POST", path, "target", "pve2")); st.ExitStatus != "migration aborted" {
			t.Errorf("%s: got %q, want migration aborted", path, st.ExitStatus)
		}
		log := e.rows("/nodes/pve/tasks/" + url.PathEscape(e.lastTask(t, typ)) + "/log")
		for _, l := range lines {
			if !strings.Contains(fmtLog(log), l) {
				t.Errorf("%s log lacks %q:\n%s", typ, l, fmtLog(log))
			}
		}
	}
	aborted("/nodes/pve/qemu/100/migrate", "qmigrate", "can't migrate local disk 'local-lvm:vm-100-disk-0': non-migratable snapshot exists",
		"Problem found while scanning volumes - can't migrate VM - check log")
	e.run("POST", "/nodes/pve/qemu/101/migrate", "target", "pve2")
	aborted("/nodes/pve/lxc/200/migrate", "vzmigrate", "can't migrate local volume 'local-lvm:vm-200-disk-0': non-migratable snapshot exists",
		"can't migrate CT - check log")
}

func fmtLog(rows []map[string]any) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(fmt.Sprint(r["t"]) + "\n")
	}
	return b.String()
}

// lastTask is the UPID of the newest task of a type on node pve.
func (e *env) lastTask(t *testing.T, typ string) string {
	t.Helper()
	tasks := e.rows("/nodes/pve/tasks", "typefilter", typ, "limit", "1")
	if len(tasks) == 0 {
		t.Fatalf("no %s task", typ)
	}
	return tasks[0]["upid"].(string)
}

// A disk detached after a snapshot becomes unusedN; deleting that unused
// volume is refused while the snapshot names it (try_deallocate_drive),
// and works once the snapshot is gone.
func TestUnusedVolumeInSnapshot(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:4", "scsi1", "local-lvm:1")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s1")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "delete", "scsi1")
	if got := e.config("100")["unused0"]; got != "local-lvm:vm-100-disk-1" {
		t.Fatalf("unused0: got %v", got)
	}
	r := e.call("PUT", "/nodes/pve/qemu/100/config", "delete", "unused0")
	if r.Status != 500 || r.Message != "unable to delete 'local-lvm:vm-100-disk-1' - volume is still in use (snapshot?)" {
		t.Errorf("delete unused0 named by a snapshot: got %d %q", r.Status, r.Message)
	}
	e.run("DELETE", "/nodes/pve/qemu/100/snapshot/s1")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "delete", "unused0")
	if r := e.call("GET", "/nodes/pve/storage/local-lvm/content/local-lvm:vm-100-disk-1"); r.Status == 200 {
		t.Errorf("the unused volume was not freed")
	}
}

// ZFS rolls back to its most recent snapshot only (ZFSPoolPlugin.pm
// volume_rollback_is_possible); LVM-thin to any.
func TestRollbackZFSMostRecentOnly(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "tank", "type", "zfspool", "pool", "rpool/data", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "tank:4", "scsi1", "local-lvm:1")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s1")
	e.run("POST", "/nodes/pve/qemu/100/snapshot", "snapname", "s2")
	if st := e.wait(e.task("POST", "/nodes/pve/qemu/100/snapshot/s1/rollback")); st.ExitStatus != "can't rollback, 's1' is not most recent snapshot on 'tank:vm-100-disk-0'" {
		t.Errorf("rollback past a newer ZFS snapshot: got %q", st.ExitStatus)
	}
	if got := e.config("100")["lock"]; got != nil {
		t.Errorf("a refused rollback left the lock %v", got)
	}
	e.run("POST", "/nodes/pve/qemu/100/snapshot/s2/rollback")
}

// heldTask runs a task held until VM vmid's config shows lock, then lets
// it end, which it must do OK.
func (e *env) heldTask(t *testing.T, vmid, lock, name, method, path string, kv ...string) {
	t.Helper()
	release := e.Server.HoldTasks()
	upid := e.task(method, path, kv...)
	if got := e.config(vmid)["lock"]; got != lock {
		t.Errorf("lock while %s runs: got %v, want %s", name, got, lock)
	}
	release()
	if st := e.wait(upid); st.ExitStatus != "OK" {
		t.Fatalf("%s: %s", name, st.ExitStatus)
	}
}

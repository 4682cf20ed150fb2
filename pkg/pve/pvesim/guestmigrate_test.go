package pvesim_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func twoNodes(t *testing.T) *env {
	t.Helper()
	return startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond}})
}

// A running VM migrates online: refused without online, and its local
// disks need with-local-disks; it then runs on the target with the same
// vmid and volumes, which that node lists and the old one no longer
// does (qemu-server migrate_vm, QemuMigrate.pm).
func TestMigrateRunningVM(t *testing.T) {
	e := twoNodes(t)
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:4", "ide2", "local-lvm:cloudinit",
		"net0", "virtio,bridge=vmbr0", "start", "1")

	pre := e.object("/nodes/pve/qemu/100/migrate", "target", "pve2")
	if pre["running"] != float64(1) || len(pre["local_disks"].([]any)) != 2 || len(pre["allowed_nodes"].([]any)) != 1 {
		t.Errorf("precondition: got %v", pre)
	}
	if r := e.call("POST", "/nodes/pve/qemu/100/migrate", "target", "pve"); r.Status != 400 || r.Errors["target"] != "target is local node." {
		t.Errorf("migrate to its own node: got %d %v", r.Status, r.Errors)
	}
	if r := e.call("POST", "/nodes/pve/qemu/100/migrate", "target", "pve3"); r.Status != 500 || r.Message != "no such cluster node 'pve3'" {
		t.Errorf("migrate to an unknown node: got %d %q", r.Status, r.Message)
	}
	if r := e.call("POST", "/nodes/pve/qemu/100/migrate", "target", "pve2"); r.Status != 500 || r.Message != "can't migrate running VM without --online" {
		t.Errorf("offline migrate of a running VM: got %d %q", r.Status, r.Message)
	}
	st := e.wait(e.task("POST", "/nodes/pve/qemu/100/migrate", "target", "pve2", "online", "1"))
	if st.ExitStatus != "migration aborted" || st.Type != "qmigrate" {
		t.Fatalf("online migration without with-local-disks: got %+v, want migration aborted", st)
	}
	if log := strings.Join(e.taskLog(st.UPID), "\n"); !strings.Contains(log, "can't migrate local disk 'local-lvm:vm-100-disk-0': can't live migrate attached local disks without with-local-disks option") {
		t.Errorf("task log lacks the refused disk:\n%s", log)
	}
	if c := e.config("100"); c["lock"] != nil {
		t.Errorf("lock after an aborted migration: %v", c["lock"])
	}

	upid := e.task("POST", "/nodes/pve/qemu/100/migrate", "target", "pve2", "online", "1", "with-local-disks", "1")
	c := e.object("/nodes/pve/qemu/100/config")
	if c["lock"] != "migrate" {
		t.Errorf("lock while migrating: got %v want migrate", c["lock"])
	}
	if st := e.wait(upid); st.ExitStatus != "OK" {
		t.Fatalf("migration: got %q\n%s", st.ExitStatus, strings.Join(e.taskLog(upid), "\n"))
	}
	if r := e.call("GET", "/nodes/pve/qemu/100/config"); r.Status != 500 {
		t.Errorf("config on the old node after the migration: got %d", r.Status)
	}
	cur := e.object("/nodes/pve2/qemu/100/status/current")
	if cur["status"] != "running" || cur["lock"] != nil {
		t.Errorf("VM 100 on pve2: %v", cur)
	}
	for node, want := range map[string]int{"pve": 0, "pve2": 2} {
		vols := e.rows("/nodes/"+node+"/storage/local-lvm/content", "vmid", "100")
		if len(vols) != want {
			t.Errorf("local-lvm volumes of VM 100 on %s: got %v, want %d", node, vols, want)
		}
	}
}

// A VM whose mapped PCI device has no entry on the target cannot
// migrate there; one whose host device is given raw cannot migrate at
// all, and neither can a local ISO on its CD-ROM.
func TestMigrateRefusals(t *testing.T) {
	e := twoNodes(t)
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "gpu0",
		"map", "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454")
	e.run("POST", "/nodes/pve/qemu", "vmid", "101", "machine", "q35", "hostpci0", "mapping=gpu0,pcie=1", "scsi0", "local-lvm:1")
	e.run("POST", "/nodes/pve/qemu/101/status/start")

	pre := e.object("/nodes/pve/qemu/101/migrate")
	if got := pre["not_allowed_nodes"].(map[string]any)["pve2"]; got == nil || !strings.Contains(jsonString(t, got), `"unavailable-resources":["hostpci0"]`) {
		t.Errorf("precondition's not_allowed_nodes: got %v", pre["not_allowed_nodes"])
	}
	if got := jsonString(t, pre["local_resources"]); got != `["hostpci0"]` {
		t.Errorf("local_resources of a running VM with a mapping not live-migratable: got %s", got)
	}
	e.run("POST", "/nodes/pve/qemu/101/status/stop")
	st := e.wait(e.task("POST", "/nodes/pve/qemu/101/migrate", "target", "pve2"))
	if st.ExitStatus != "migration aborted" || !strings.Contains(strings.Join(e.taskLog(st.UPID), "\n"), "can't migrate to 'pve2': missing mapped devices hostpci0") {
		t.Errorf("migration without the mapping on the target: %q\n%s", st.ExitStatus, strings.Join(e.taskLog(st.UPID), "\n"))
	}
	e.ok(nil, "PUT", "/cluster/mapping/pci/gpu0",
		"map", "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454",
		"map", "node=pve2,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454")
	e.run("POST", "/nodes/pve/qemu/101/migrate", "target", "pve2")
	e.run("POST", "/nodes/pve2/qemu/101/status/start")
}

// A running container moves in restart mode only: it is shut down,
// migrated and started on the target (pve-container LXC/Migrate.pm).
func TestMigrateContainerRestart(t *testing.T) {
	e := twoNodes(t)
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:2", "net0", "name=eth0,bridge=vmbr0", "start", "1")
	if r := e.call("POST", "/nodes/pve/lxc/200/migrate", "target", "pve2"); r.Status != 500 || r.Message != "can't migrate running container without --online or --restart" {
		t.Errorf("migrate a running container: got %d %q", r.Status, r.Message)
	}
	if st := e.wait(e.task("POST", "/nodes/pve/lxc/200/migrate", "target", "pve2", "online", "1")); st.ExitStatus != "migration aborted" {
		t.Errorf("online container migration: got %q", st.ExitStatus)
	}
	st := e.wait(e.task("POST", "/nodes/pve/lxc/200/migrate", "target", "pve2", "restart", "1"))
	if st.ExitStatus != "OK" || st.Type != "vzmigrate" {
		t.Fatalf("restart migration: %+v\n%s", st, strings.Join(e.taskLog(st.UPID), "\n"))
	}
	cur := e.object("/nodes/pve2/lxc/200/status/current")
	if cur["status"] != "running" {
		t.Errorf("CT 200 on pve2: %v", cur["status"])
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

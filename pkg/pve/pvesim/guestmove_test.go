package pvesim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// move_disk copies a VM's disk to another storage in a qmmove task (also
// while the VM runs), keeps the drive's options and size, and frees the
// source with delete=1 or keeps it as unusedN; PVE's refusals come before
// the task (qemu-server API2/Qemu.pm move_vm_disk).
func TestMoveDisk(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "images2", "type", "dir", "path", "/srv/images2", "content", "images,rootdir")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8,cache=writeback", "efidisk0", "local-lvm:1,efitype=4m", "start", "1")

	refusals := []struct {
		name   string
		kv     []string
		status int
		msg    string
	}{
		{"same storage", []string{"disk", "scsi0", "storage", "local-lvm"}, 500, "you can't move to the same storage with same format"},
		{"no images", []string{"disk", "scsi0", "storage", "local"}, 400, ""},
		{"missing disk", []string{"disk", "scsi3", "storage", "images2"}, 500, "disk 'scsi3' does not exist"},
		{"unknown storage", []string{"disk", "scsi0", "storage", "nope"}, 500, "storage 'nope' does not exist"},
		{"stale digest", []string{"disk", "scsi0", "storage", "images2", "digest", strings.Repeat("0", 40)}, 500,
			"detected modified configuration - file changed by other user? Try again."},
		{"neither", []string{"disk", "scsi0"}, 400, ""},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/nodes/pve/qemu/100/move_disk", tc.kv...)
			if r.Status != tc.status || tc.msg != "" && r.Message != tc.msg {
				t.Errorf("got %d %q %v, want %d %q", r.Status, r.Message, r.Errors, tc.status, tc.msg)
			}
		})
	}

	digest := e.config("100")["digest"].(string)
	e.run("POST", "/nodes/pve/qemu/100/move_disk", "disk", "scsi0", "storage", "images2", "delete", "1", "digest", digest)
	e.run("POST", "/nodes/pve/qemu/100/move_disk", "disk", "efidisk0", "storage", "images2")
	c := e.config("100")
	if got, want := c["scsi0"], "images2:100/vm-100-disk-0.raw,cache=writeback,size=8G"; got != want {
		t.Errorf("scsi0 after the move: got %v want %v", got, want)
	}
	if got := c["efidisk0"].(string); !strings.HasPrefix(got, "images2:100/vm-100-disk-1.raw,") || !strings.Contains(got, "efitype=4m") {
		t.Errorf("efidisk0 after the move: got %v", got)
	}
	if got, want := c["unused0"], "local-lvm:vm-100-disk-0"; got != want {
		t.Errorf("unused0 (efidisk0 moved without delete): got %v want %v", got, want)
	}
	vols := e.rows("/nodes/pve/storage/local-lvm/content", "vmid", "100")
	if len(vols) != 1 || vols[0]["volid"] != "local-lvm:vm-100-disk-0" {
		t.Errorf("local-lvm volumes of VM 100: got %v, want only the kept EFI disk", vols)
	}
	st := e.object("/nodes/pve/qemu/100/status/current")
	if st["status"] != "running" {
		t.Errorf("VM 100 after online moves: %v, want running", st["status"])
	}
}

// move_volume moves a stopped container's volume; a running one is
// refused before the task, and the lock "disk" keeps other writers out
// while it runs (pve-container API2/LXC.pm move_volume).
func TestMoveVolume(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{TaskDuration: 50 * time.Millisecond}})
	e.ok(nil, "POST", "/storage", "storage", "ct2", "type", "dir", "path", "/srv/ct2", "content", "rootdir,images")
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:2", "start", "1")
	r := e.call("POST", "/nodes/pve/lxc/200/move_volume", "volume", "rootfs", "storage", "ct2")
	if r.Status != 500 || r.Message != "cannot move volumes of a running container" {
		t.Fatalf("move of a running container's rootfs: got %d %q", r.Status, r.Message)
	}
	e.run("POST", "/nodes/pve/lxc/200/status/stop")
	upid := e.task("POST", "/nodes/pve/lxc/200/move_volume", "volume", "rootfs", "storage", "ct2", "delete", "1")
	c := e.object("/nodes/pve/lxc/200/config")
	if c["lock"] != "disk" {
		t.Errorf("lock while moving: got %v want disk", c["lock"])
	}
	if r := e.call("PUT", "/nodes/pve/lxc/200/config", "memory", "1024"); r.Status != 500 || r.Message != "CT is locked (disk)" {
		t.Errorf("config change while moving: got %d %q", r.Status, r.Message)
	}
	if st := e.wait(upid); st.ExitStatus != "OK" || st.Type != "move_volume" {
		t.Fatalf("move_volume task: %+v", st)
	}
	c = nil
	e.ok(&c, "GET", "/nodes/pve/lxc/200/config")
	if c["rootfs"] != "ct2:200/vm-200-disk-0.raw,size=2G" || c["lock"] != nil || c["unused0"] != nil {
		t.Errorf("config after the move: rootfs %v lock %v unused0 %v", c["rootfs"], c["lock"], c["unused0"])
	}
}

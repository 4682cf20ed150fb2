package pvesim_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestPropertyStringBooleans: a boolean in a drive, NIC or mount point
// reads back as 1/0 whatever spelling was sent (pve-common JSONSchema.pm
// parse_property_string: parse_boolean), and a mount point prints its
// required "mp" right after the volume (print_property_string).
func TestPropertyStringBooleans(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:4,ssd=yes,backup=OFF,iothread=true",
		"net0", "virtio,bridge=vmbr0,firewall=on,link_down=no")
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:4", "mp0", "local-lvm:1,mp=/data,backup=yes,acl=0,ro=false",
		"net0", "name=eth0,bridge=vmbr0,firewall=true,link_down=off")
	var vm, ct map[string]any
	e.ok(&vm, "GET", "/nodes/pve/qemu/100/config")
	e.ok(&ct, "GET", "/nodes/pve/lxc/200/config")
	for _, tc := range []struct {
		conf map[string]any
		key  string
		re   string
	}{
		{vm, "scsi0", `^local-lvm:vm-100-disk-0,backup=0,iothread=1,size=4G,ssd=1$`},
		{vm, "net0", `^virtio=[0-9A-F:]{17},bridge=vmbr0,firewall=1,link_down=0$`},
		{ct, "mp0", `^local-lvm:vm-200-disk-1,mp=/data,acl=0,backup=1,ro=0,size=1G$`},
		{ct, "net0", `^name=eth0,bridge=vmbr0,firewall=1,hwaddr=[0-9A-F:]{17},link_down=0,type=veth$`},
	} {
		if s, _ := tc.conf[tc.key].(string); !regexp.MustCompile(tc.re).MatchString(s) {
			t.Errorf("%s = %q, want it to match %s", tc.key, s, tc.re)
		}
	}
}

// TestPendingTyped: GET …/pending answers integer and boolean options as
// JSON numbers, as the parsed config PVE reads them from does.
func TestPendingTyped(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "cores", "2", "onboot", "1", "cpulimit", "1.5")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "cores", "4")
	var rows []map[string]json.RawMessage
	e.ok(&rows, "GET", "/nodes/pve/qemu/100/pending")
	want := map[string]map[string]string{
		"cores":    {"value": "2", "pending": "4"},
		"onboot":   {"value": "1"},
		"cpulimit": {"value": `"1.5"`},
	}
	for _, r := range rows {
		var key string
		json.Unmarshal(r["key"], &key)
		for field, w := range want[key] {
			if got := string(r[field]); got != w {
				t.Errorf("%s.%s = %s, want %s", key, field, got, w)
			}
		}
		delete(want, key)
	}
	for key := range want {
		t.Errorf("no pending row for %s", key)
	}
}

// TestContainerCreateVolumes: create_vm's storage refusal names
// "storage" (pve-container API2/LXC.pm check_and_activate_storage), and a
// bare size is refused to a token as an arbitrary path
// (check_ct_modify_config_perm → pve-storage check_volume_access: only
// root@pam itself may pass one; community.general#3243).
func TestContainerCreateVolumes(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	const tmpl = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	r := e.call("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", tmpl, "rootfs", "local:4")
	if r.Status != 400 || r.Errors["storage"] != "storage 'local' does not support container directories" {
		t.Errorf("rootfs on local: got %d %q %v, want 400 naming storage", r.Status, r.Message, r.Errors)
	}
	r = e.call("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", tmpl, "rootfs", "4", "storage", "local-lvm")
	if r.Status != 500 || r.Message != "Only root can pass arbitrary filesystem paths." {
		t.Errorf("bare rootfs size from a token: got %d %q, want PVE's refusal", r.Status, r.Message)
	}
}

// TestDriveWriteBack: the drive values qemu-server writes (API2/Qemu.pm
// create_disks, QemuServer.pm clone_disk): an existing volume's size is
// written whatever was sent, "format" goes once a disk is allocated or
// copied, a template's new disks are base volumes, and a cloud-init
// drive on a file storage is named by its format.
func TestDriveWriteBack(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/storage", "storage", "d1", "type", "dir", "path", "/srv/d1", "content", "images")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:4,format=raw", "scsi1", "d1:1,format=raw",
		"ide2", "d1:cloudinit,format=raw")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "scsi0", "local-lvm:vm-100-disk-0,discard=on")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "scsi1", "d1:100/vm-100-disk-0.raw,format=raw,size=9G")
	c := e.config("100")
	for key, want := range map[string]string{
		"scsi0": "local-lvm:vm-100-disk-0,discard=on,size=4G",
		"scsi1": "d1:100/vm-100-disk-0.raw,format=raw,size=1G",
		"ide2":  "d1:100/vm-100-cloudinit.raw,media=cdrom",
	} {
		if c[key] != want {
			t.Errorf("%s = %v, want %s", key, c[key], want)
		}
	}
	e.run("POST", "/nodes/pve/qemu/100/move_disk", "disk", "scsi1", "storage", "local-lvm", "delete", "1")
	if c := e.config("100"); c["scsi1"] != "local-lvm:vm-100-disk-1,size=1G" {
		t.Errorf("moved scsi1 = %v, want the raw LVM-thin copy without format", c["scsi1"])
	}

	e.run("POST", "/nodes/pve/qemu", "vmid", "200", "template", "1", "scsi0", "local-lvm:1")
	if c := e.config("200"); c["scsi0"] != "local-lvm:base-200-disk-0,size=1G" {
		t.Errorf("template's scsi0 = %v, want a base volume", c["scsi0"])
	}
	e.run("POST", "/nodes/pve/qemu/200/clone", "newid", "201")
	if c := e.config("201"); c["scsi0"] != "local-lvm:vm-201-disk-0,size=1G" {
		t.Errorf("linked clone's scsi0 = %v", c["scsi0"])
	}
	// A volume that is not a base one has no clone feature: a linked
	// clone of the template is refused before its worker (clone_vm).
	e.run("POST", "/nodes/pve/qemu", "vmid", "300", "scsi0", "local-lvm:1")
	e.ok(nil, "PUT", "/nodes/pve/qemu/200/config", "scsi1", "local-lvm:vm-300-disk-0")
	r := e.call("POST", "/nodes/pve/qemu/200/clone", "newid", "202")
	if want := "Linked clone feature is not supported for 'local-lvm:vm-300-disk-0' (scsi1)"; r.Status != 500 || r.Message != want {
		t.Errorf("linked clone of a non-base volume: got %d %q, want 500 %q", r.Status, r.Message, want)
	}
}

// TestMountPointResentKeepsSize: a container's volume re-sent without its
// size gets the size the storage reports (pve-container LXC/Config.pm
// apply_pending_mountpoint: $rescan_volume).
func TestMountPointResentKeepsSize(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:4", "mp0", "local-lvm:1,mp=/data")
	e.ok(nil, "PUT", "/nodes/pve/lxc/200/config", "mp0", "local-lvm:vm-200-disk-1,mp=/srv,backup=on")
	c := e.object("/nodes/pve/lxc/200/config")
	if want := "local-lvm:vm-200-disk-1,mp=/srv,backup=1,size=1G"; c["mp0"] != want {
		t.Errorf("mp0 = %v, want %s", c["mp0"], want)
	}
}

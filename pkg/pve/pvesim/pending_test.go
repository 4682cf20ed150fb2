package pvesim_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// pendingRows reads GET …/pending as key → row.
func (e *env) pendingRows(typ, vmid string) map[string]map[string]any {
	e.t.Helper()
	return e.rowsBy("key", "/nodes/pve/"+typ+"/"+vmid+"/pending")
}

// qemu-server API2/Qemu.pm update_vm_api: POST config forks first and
// writes even the pending section in the worker, so until it runs the
// config and its digest are the old ones.
func TestPostConfigWritesInTheWorker(t *testing.T) {
	e := newEnv(t, pvesim.Options{TaskDuration: time.Hour})
	e.Server.PutGuest("pve", 100, false, map[string]string{"name": "old", "memory": "512", "cores": "1"})
	before := e.config("100")
	e.task("POST", "/nodes/pve/qemu/100/config", "name", "new", "delete", "cores", "digest", before["digest"].(string))
	if diff := cmp.Diff(before, e.config("100")); diff != "" {
		t.Errorf("config while the worker waits (-before +now)\n%s", diff)
	}
	if rows := e.pendingRows("qemu", "100"); rows["name"]["pending"] != nil || rows["cores"]["delete"] != nil {
		t.Errorf("got pending %v while the worker waits, want nothing pending", rows)
	}

	// Once the worker ran, the stopped VM has the change applied.
	e = newEnv(t, pvesim.Options{})
	e.Server.PutGuest("pve", 100, false, map[string]string{"name": "old", "memory": "512", "cores": "1"})
	before = e.config("100")
	upid := e.task("POST", "/nodes/pve/qemu/100/config", "name", "new", "delete", "cores", "digest", before["digest"].(string))
	if st := e.wait(upid); st.ExitStatus != "OK" {
		t.Fatalf("got exit status %q, want OK", st.ExitStatus)
	}
	after := e.config("100")
	if after["name"] != "new" || after["cores"] != nil || after["digest"] == before["digest"] {
		t.Errorf("got config %v after the worker, want name new, no cores, a new digest", after)
	}
	if log := e.taskLog(upid); len(log) == 0 || log[0] != "update VM 100: -delete cores -name new" {
		t.Errorf("got log %q, want qemu-server's update line first", log)
	}
}

// qemu-server QemuServer.pm vmconfig_hotplug_pending and its helpers
// decide, per key, what a running VM takes at once.
func TestQemuHotplug(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/storage/local/download-url", "url", "https://releases.ubuntu.com/24.04/a.iso",
		"content", "iso", "filename", "a.iso")
	base := map[string]string{
		"name": "vm", "memory": "1024", "cores": "1", "ostype": "l26", "boot": "order=scsi0",
		"scsi0":  "local-lvm:vm-VMID-disk-0,size=8G",
		"net0":   "virtio=BC:24:11:00:00:01,bridge=vmbr0",
		"ide2":   "none,media=cdrom",
		"agent":  "1",
		"scsihw": "virtio-scsi-single",
	}
	tests := []struct {
		name string
		conf map[string]string // overrides of base ("" removes)
		set  []string          // POST parameters
		key  string            // the key to look at
		live bool              // taken at once (else pending)
	}{
		{"cpulimit", nil, []string{"cpulimit", "2"}, "cpulimit", true},
		{"cpuunits", nil, []string{"cpuunits", "200"}, "cpuunits", true},
		{"balloon on an enabled device", nil, []string{"balloon", "512"}, "balloon", true},
		{"balloon device turned off", nil, []string{"balloon", "0"}, "balloon", false},
		{"tablet", nil, []string{"tablet", "0"}, "tablet", true},
		{"tablet without usb hot-plug", map[string]string{"hotplug": "network,disk"}, []string{"tablet", "0"}, "tablet", false},
		{"name", nil, []string{"name", "other"}, "name", true},
		{"cloud-init option", nil, []string{"ciuser", "admin"}, "ciuser", true},
		{"memory", nil, []string{"memory", "2048"}, "memory", false},
		{"memory with memory hot-plug", map[string]string{"hotplug": "network,disk,memory"}, []string{"memory", "2048"}, "memory", true},
		{"cores", nil, []string{"cores", "4"}, "cores", false},
		{"vcpus without cpu hot-plug", map[string]string{"cores": "4"}, []string{"vcpus", "2"}, "vcpus", false},
		{"new scsi disk", nil, []string{"scsi1", "local-lvm:4"}, "scsi1", true},
		{"new sata disk", nil, []string{"sata1", "local-lvm:4"}, "sata1", false},
		{"new ide disk", nil, []string{"ide1", "local-lvm:4"}, "ide1", false},
		{"new disk without disk hot-plug", map[string]string{"hotplug": "network"}, []string{"scsi1", "local-lvm:4"}, "scsi1", false},
		{"disk cache", nil, []string{"scsi0", "local-lvm:vm-VMID-disk-0,cache=writeback,size=8G"}, "scsi0", false},
		{"disk discard", nil, []string{"scsi0", "local-lvm:vm-VMID-disk-0,discard=on,size=8G"}, "scsi0", false},
		{"disk ssd", nil, []string{"scsi0", "local-lvm:vm-VMID-disk-0,size=8G,ssd=1"}, "scsi0", false},
		{"disk iothread", nil, []string{"scsi0", "local-lvm:vm-VMID-disk-0,iothread=1,size=8G"}, "scsi0", false},
		{"disk aio", nil, []string{"scsi0", "aio=native,file=local-lvm:vm-VMID-disk-0,size=8G"}, "scsi0", false},
		{"disk throttle", nil, []string{"scsi0", "local-lvm:vm-VMID-disk-0,mbps=100,size=8G"}, "scsi0", true},
		{"cdrom medium", nil, []string{"ide2", "local:iso/a.iso,media=cdrom"}, "ide2", true},
		{"nic vlan tag", nil, []string{"net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=5"}, "net0", true},
		{"nic model", nil, []string{"net0", "e1000=BC:24:11:00:00:01,bridge=vmbr0"}, "net0", true},
		{"nic model without network hot-plug", map[string]string{"hotplug": "0"}, []string{"net0", "e1000=BC:24:11:00:00:01,bridge=vmbr0"}, "net0", false},
		{"nic tag without network hot-plug", map[string]string{"hotplug": "0"}, []string{"net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=5"}, "net0", true},
		{"agent fstrim", nil, []string{"agent", "1,fstrim_cloned_disks=1"}, "agent", true},
		{"agent type", nil, []string{"agent", "1,type=isa"}, "agent", false},
		{"delete cpulimit", map[string]string{"cpulimit": "2"}, []string{"delete", "cpulimit"}, "cpulimit", true},
		{"delete memory", nil, []string{"delete", "memory"}, "memory", false},
		{"delete a NIC", map[string]string{"net1": "virtio=BC:24:11:00:00:02,bridge=vmbr0"}, []string{"delete", "net1"}, "net1", true},
		{"delete a sata disk", map[string]string{"sata1": "local-lvm:vm-VMID-disk-0,size=8G"}, []string{"delete", "sata1"}, "sata1", false},
		{"delete a balloon of 0", map[string]string{"balloon": "0"}, []string{"delete", "balloon"}, "balloon", false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmid := strconv.Itoa(200 + i)
			conf := map[string]string{}
			for k, v := range base {
				conf[k] = strings.ReplaceAll(v, "VMID", vmid)
			}
			for k, v := range tc.conf {
				if v == "" {
					delete(conf, k)
				} else {
					conf[k] = v
				}
			}
			// Made through the API for its volume, then set to the case's config.
			e.run("POST", "/nodes/pve/qemu", "vmid", vmid, "scsi0", "local-lvm:8")
			id, _ := strconv.Atoi(vmid)
			e.Server.PutGuest("pve", id, true, conf)
			set := make([]string, len(tc.set))
			for j, s := range tc.set {
				set[j] = strings.ReplaceAll(s, "VMID", vmid)
			}
			e.run("POST", "/nodes/pve/qemu/"+vmid+"/config", set...)
			current := e.config(vmid, "current", "1")
			row := e.pendingRows("qemu", vmid)[tc.key]
			deleting := tc.set[0] == "delete"
			pendingNow := row["pending"] != nil || row["delete"] != nil
			if pendingNow == tc.live {
				t.Errorf("got pending row %v (current %v = %v), want live %v", row, tc.key, current[tc.key], tc.live)
			}
			if tc.live && !deleting && current[tc.key] == nil {
				t.Errorf("got no current %s, want it applied", tc.key)
			}
			if tc.live && deleting && current[tc.key] != nil {
				t.Errorf("got current %s = %v, want it removed", tc.key, current[tc.key])
			}
		})
	}
}

// A VM's running boot disk cannot be unplugged (vm_deviceunplug): the
// worker fails with the hot-plug problem, the removal stays pending.
func TestQemuUnplugBootDisk(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8", "boot", "order=scsi0")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	st := e.wait(e.task("POST", "/nodes/pve/qemu/100/config", "delete", "scsi0"))
	if want := "400 Parameter verification failed. scsi0: hotplug problem - can't unplug bootdisk 'scsi0'"; st.ExitStatus != want {
		t.Errorf("got exit status %q, want %q", st.ExitStatus, want)
	}
	rows := e.pendingRows("qemu", "100")
	if rows["scsi0"]["delete"] != float64(1) || rows["boot"]["pending"] != "" {
		t.Errorf("got pending %v, want scsi0 deleted and the boot order emptied, pending", rows)
	}
}

// AbstractConfig.pm cleanup_pending: a pending value equal to the current
// one is dropped, so going back to it leaves nothing pending.
func TestPendingEqualToCurrentIsDropped(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.Server.PutGuest("pve", 100, true, map[string]string{"memory": "1024", "cores": "1"})
	e.run("POST", "/nodes/pve/qemu/100/config", "memory", "2048", "cores", "1")
	rows := e.pendingRows("qemu", "100")
	if rows["memory"]["pending"] != "2048" || rows["cores"]["pending"] != nil {
		t.Fatalf("got pending %v, want memory 2048 only", rows)
	}
	e.run("POST", "/nodes/pve/qemu/100/config", "memory", "1024")
	if rows := e.pendingRows("qemu", "100"); rows["memory"]["pending"] != nil {
		t.Errorf("got pending %v after going back, want none", rows["memory"])
	}
}

// pve-container LXC/Config.pm vmconfig_hotplug_pending: what a running
// container takes at once.
func TestContainerHotplug(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	const tmpl = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	tests := []struct {
		name string
		set  []string
		key  string
		live bool
	}{
		{"memory", []string{"memory", "1024"}, "memory", true},
		{"swap", []string{"swap", "256"}, "swap", true},
		{"cores", []string{"cores", "2"}, "cores", true},
		{"cpulimit", []string{"cpulimit", "1"}, "cpulimit", true},
		{"hostname", []string{"hostname", "renamed"}, "hostname", true},
		{"nameserver", []string{"nameserver", "192.0.2.53"}, "nameserver", false},
		{"searchdomain", []string{"searchdomain", "example.org"}, "searchdomain", false},
		{"features", []string{"features", "nesting=1"}, "features", false},
		{"existing mount point", []string{"mp0", "local-lvm:vm-VMID-disk-1,mp=/srv,backup=1,size=1G"}, "mp0", false},
		{"new mount point", []string{"mp1", "local-lvm:1,mp=/data"}, "mp1", true},
		{"new nic", []string{"net1", "name=eth1,bridge=vmbr0"}, "net1", true},
		{"delete swap", []string{"delete", "swap"}, "swap", true},
		{"delete mount point", []string{"delete", "mp0"}, "mp0", false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmid := strconv.Itoa(300 + i)
			e.run("POST", "/nodes/pve/lxc", "vmid", vmid, "ostemplate", tmpl, "rootfs", "local-lvm:2",
				"mp0", "local-lvm:1,mp=/srv", "start", "1")
			set := make([]string, len(tc.set))
			for j, s := range tc.set {
				set[j] = strings.ReplaceAll(s, "VMID", vmid)
			}
			e.ok(nil, "PUT", "/nodes/pve/lxc/"+vmid+"/config", set...)
			current := e.object("/nodes/pve/lxc/"+vmid+"/config", "current", "1")
			row := e.pendingRows("lxc", vmid)[tc.key]
			if pendingNow := row["pending"] != nil || row["delete"] != nil; pendingNow == tc.live {
				t.Errorf("got pending row %v (current %v), want live %v", row, current[tc.key], tc.live)
			}
			if tc.key == "mp1" && current["mp1"] != "local-lvm:vm-"+vmid+"-disk-2,mp=/data,size=1G" {
				t.Errorf("got mp1 %v, want a new volume", current["mp1"])
			}
		})
	}

	// A stopped container takes a new mount point at once, its volume made.
	e.run("POST", "/nodes/pve/lxc", "vmid", "399", "ostemplate", tmpl, "rootfs", "local-lvm:2")
	e.ok(nil, "PUT", "/nodes/pve/lxc/399/config", "mp0", "local-lvm:1,mp=/data", "nameserver", "192.0.2.53")
	c := e.object("/nodes/pve/lxc/399/config", "current", "1")
	if c["mp0"] != "local-lvm:vm-399-disk-1,mp=/data,size=1G" || c["nameserver"] != "192.0.2.53" {
		t.Errorf("got config %v, want mp0 allocated and nameserver set", c)
	}
}

// pve-container checks a container update before it writes anything.
func TestContainerUpdateRefusals(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:2")
	tests := []struct {
		name string
		kv   []string
		msg  string
	}{
		{"delete memory", []string{"delete", "memory"}, "unable to delete required option 'memory'"},
		{"change unprivileged", []string{"unprivileged", "0"}, "unable to modify read-only option: 'unprivileged'"},
		{"mount point without rootdir content", []string{"mp0", "local:1,mp=/x"}, "storage 'local' does not allow content type 'rootdir' (Container)"},
		{"stale digest", []string{"memory", "1024", "digest", strings.Repeat("0", 40)}, "detected modified configuration - file changed by other user? Try again."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.Server.ConfigFile(200)
			if r := e.call("PUT", "/nodes/pve/lxc/200/config", tc.kv...); r.Status != 500 || r.Message != tc.msg {
				t.Errorf("got %d %q, want 500 %q", r.Status, r.Message, tc.msg)
			}
			if after := e.Server.ConfigFile(200); after != before {
				t.Errorf("config changed by a refused update:\n%s", after)
			}
		})
	}
	// A config lock names the container (AbstractConfig.pm check_lock).
	e.ok(nil, "PUT", "/nodes/pve/lxc/200/config", "lock", "backup")
	if r := e.call("PUT", "/nodes/pve/lxc/200/config", "memory", "1024"); r.Status != 500 || r.Message != "CT is locked (backup)" {
		t.Errorf("got %d %q, want 500 CT is locked (backup)", r.Status, r.Message)
	}
}

// qemu-server API2/Qemu.pm check_drive_param refuses an ISO image in a
// drive without media=cdrom, on create and on update.
func TestISONeedsMediaCdrom(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/storage/local/download-url", "url", "https://releases.ubuntu.com/24.04/a.iso",
		"content", "iso", "filename", "a.iso")
	const want = "explicit 'media=cdrom' is required for iso images"
	for _, val := range []string{"local:iso/a.iso", "local:iso/a.iso,media=disk", "local:iso/missing.iso"} {
		if r := e.call("POST", "/nodes/pve/qemu", "vmid", "100", "ide2", val); r.Status != 400 || r.Errors["ide2"] != want {
			t.Errorf("create with ide2=%s: got %d %v, want 400 ide2: %s", val, r.Status, r.Errors, want)
		}
	}
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "ide2", "local:iso/a.iso,media=cdrom")
	// create_disks writes the ISO's size (volume_size_info).
	if c := e.config("100"); c["ide2"] != "local:iso/a.iso,media=cdrom,size=512M" {
		t.Errorf("got ide2 %v, want the ISO as a CD-ROM", c["ide2"])
	}
	if r := e.call("POST", "/nodes/pve/qemu/100/config", "sata0", "local:iso/a.iso"); r.Status != 400 || r.Errors["sata0"] != want {
		t.Errorf("update with sata0 ISO: got %d %v, want 400 sata0: %s", r.Status, r.Errors, want)
	}
	// A template archive is no drive at all (check_storage_access).
	r := e.call("POST", "/nodes/pve/qemu/100/config", "sata0", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst")
	if r.Status != 400 || r.Errors["sata0"] != "content type needs to be 'images' or 'iso'" {
		t.Errorf("update with a template as a drive: got %d %v, want 400", r.Status, r.Errors)
	}
}

// The visible write-backs of qemu-server and pve-container.
func TestGuestReadBacks(t *testing.T) {
	// pvestatd's status data every 5 ms: /cluster/resources names the VM soon.
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{StatusInterval: 5 * time.Millisecond}})

	// A cloud-init drive may sit on a storage without images content
	// (check_storage_access skips it); an unnamed VM is "VM 100" in status
	// answers (vmstatus), never in its config.
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "ide2", "local:cloudinit", "description", "line 1\nline 2  \n\n")
	c := e.config("100")
	if c["ide2"] != "local:100/vm-100-cloudinit.qcow2,media=cdrom" || c["name"] != nil || c["description"] != "line 1\nline 2" {
		t.Errorf("got config %v, want the cloud-init drive on local, no name, the description stripped", c)
	}
	st := e.object("/nodes/pve/qemu/100/status/current")
	list := e.rows("/nodes/pve/qemu")
	names := map[string]any{"status": st["name"]}
	for _, r := range list {
		if r["vmid"] == float64(100) {
			names["list"] = r["name"]
		}
	}
	names["resources"] = e.resource("qemu/100", func(r map[string]any) bool { return r["status"] != "unknown" })["name"]
	if diff := cmp.Diff(map[string]any{"status": "VM 100", "list": "VM 100", "resources": "VM 100"}, names); diff != "" {
		t.Errorf("name of an unnamed VM (-want +got)\n%s", diff)
	}

	// cipassword is never shown (vm_config, vm_pending).
	r := e.call("PUT", "/nodes/pve/qemu/100/config", "cipassword", "s3cr3t-pw")
	if r.Status != 200 {
		t.Fatalf("got %d %q setting cipassword", r.Status, r.Message)
	}
	if c := e.config("100"); c["cipassword"] != "**********" {
		t.Errorf("got cipassword %v, want **********", c["cipassword"])
	}
	if rows := e.pendingRows("qemu", "100"); rows["cipassword"]["value"] != "**********" {
		t.Errorf("got pending row %v, want the value masked", rows["cipassword"])
	}
	if strings.Contains(e.Server.ConfigFile(100), "s3cr3t-pw") {
		t.Errorf("config file holds the password in clear:\n%s", e.Server.ConfigFile(100))
	}

	// A container keeps a newline per comment line, is unprivileged by
	// default and gets create_vm's memory and swap.
	const tmpl = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", tmpl, "rootfs", "local-lvm:2", "description", "a  \n\n")
	e.run("POST", "/nodes/pve/lxc", "vmid", "201", "ostemplate", tmpl, "rootfs", "local-lvm:2", "unprivileged", "0")
	var ct, priv map[string]any
	e.ok(&ct, "GET", "/nodes/pve/lxc/200/config")
	e.ok(&priv, "GET", "/nodes/pve/lxc/201/config")
	if ct["description"] != "a  \n" || ct["unprivileged"] != float64(1) || ct["memory"] != float64(512) || ct["swap"] != float64(512) {
		t.Errorf("got CT config %v, want description with its newline, unprivileged 1, memory and swap 512", ct)
	}
	if _, ok := priv["unprivileged"]; ok {
		t.Errorf("got unprivileged %v for a privileged CT, want the key absent", priv["unprivileged"])
	}
}

// PUT …/cloudinit regenerates the image: the changes a running VM's
// cloud-init options went through are no longer pending there.
func TestCloudinitRegenerate(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "ide2", "local-lvm:cloudinit", "ciuser", "alice", "name", "a")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	e.run("POST", "/nodes/pve/qemu/100/config", "ciuser", "bob", "nameserver", "192.0.2.53")

	rows := e.rows("/nodes/pve/qemu/100/cloudinit")
	want := []map[string]any{
		{"key": "nameserver", "pending": "192.0.2.53"},
		{"key": "ciuser", "value": "alice", "pending": "bob"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("cloud-init before regenerating (-want +got)\n%s", diff)
	}
	if !strings.Contains(e.Server.ConfigFile(100), "[special:cloudinit]") {
		t.Errorf("config file lacks the special section:\n%s", e.Server.ConfigFile(100))
	}
	before := e.config("100")["digest"]
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/cloudinit")
	rows = nil
	e.ok(&rows, "GET", "/nodes/pve/qemu/100/cloudinit")
	want = []map[string]any{{"key": "ciuser", "value": "bob"}, {"key": "nameserver", "value": "192.0.2.53"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("cloud-init after regenerating (-want +got)\n%s", diff)
	}
	if e.config("100")["digest"] == before {
		t.Errorf("digest unchanged after the special section went")
	}
}

// Pending deletes of drives: forced ones read 2 and free the volume; a
// removed boot device leaves the boot order; a key that is not set warns.
func TestPendingDeletes(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8", "sata1", "local-lvm:2",
		"ide2", "none,media=cdrom", "boot", "order=scsi0;ide2")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	e.run("POST", "/nodes/pve/qemu/100/config", "delete", "sata1", "force", "1")
	rows := e.pendingRows("qemu", "100")
	if rows["sata1"]["delete"] != float64(2) {
		t.Errorf("got sata1 row %v, want a forced pending delete (2)", rows["sata1"])
	}
	e.run("POST", "/nodes/pve/qemu/100/config", "delete", "ide2")
	if rows := e.pendingRows("qemu", "100"); rows["boot"]["pending"] != "order=scsi0" {
		t.Errorf("got boot row %v, want the order without ide2 pending", rows["boot"])
	}
	st := e.wait(e.task("POST", "/nodes/pve/qemu/100/config", "delete", "serial0"))
	if st.ExitStatus != "WARNINGS: 1" {
		t.Errorf("got exit status %q deleting an unset key, want WARNINGS: 1", st.ExitStatus)
	}
	e.run("POST", "/nodes/pve/qemu/100/status/stop")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	c := e.config("100")
	if c["sata1"] != nil || c["ide2"] != nil || c["boot"] != "order=scsi0" || c["unused0"] != nil {
		t.Errorf("got config %v after restart, want sata1 and ide2 gone, no unused disk", c)
	}
	if vols := e.Server.VolumesOf(100); len(vols) != 1 {
		t.Errorf("got volumes %v, want only scsi0's (the forced delete freed sata1's)", vols)
	}
}

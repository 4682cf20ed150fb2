package pvesim_test

import (
	"crypto/sha1"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

func TestCreateWriteBacksAndDigest(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	// The create task runs until the test has looked at it.
	release := e.Server.HoldTasks()
	upid := e.task("POST", "/nodes/pve/qemu",
		"vmid", "100", "name", "web-1", "memory", "2048", "cores", "2",
		"net0", "virtio,bridge=vmbr0,firewall=1",
		"scsi0", "local-lvm:32,iothread=1", "scsihw", "virtio-scsi-single",
		"ide2", "local-lvm:cloudinit",
		"efidisk0", "local-lvm:1,efitype=4m,pre-enrolled-keys=1", "bios", "ovmf",
		"tags", "web;prod,a", "description", "hello\nworld \n\n")
	if got := strings.Split(upid, ":"); got[5] != "qmcreate" || got[6] != "100" || got[7] != testToken {
		t.Errorf("got UPID fields %q, want qmcreate/100/%s", got[5:8], testToken)
	}

	// While the task runs the config is a stub locked "create".
	if c := e.config("100"); c["lock"] != "create" {
		t.Errorf("got config %v during create, want lock create", c)
	}
	release()
	if st := e.wait(upid); st.ExitStatus != "OK" || st.Type != "qmcreate" || st.ID != "100" || st.Node != "pve" {
		t.Fatalf("got task status %+v, want qmcreate 100 OK", st)
	}

	c := e.config("100")
	want := map[string]any{
		"name":        "web-1",
		"memory":      "2048",
		"cores":       float64(2),
		"scsi0":       "local-lvm:vm-100-disk-1,iothread=1,size=32G",
		"scsihw":      "virtio-scsi-single",
		"ide2":        "local-lvm:vm-100-cloudinit,media=cdrom",
		"efidisk0":    "local-lvm:vm-100-disk-0,efitype=4m,pre-enrolled-keys=1,size=4M",
		"bios":        "ovmf",
		"tags":        "a;prod;web",
		"description": "hello\nworld", // parse_vm_config strips trailing whitespace
		"boot":        "order=scsi0;net0",
	}
	for k, w := range want {
		if diff := cmp.Diff(w, c[k]); diff != "" {
			t.Errorf("config %s: (-want +got)\n%s", k, diff)
		}
	}
	patterns := map[string]string{
		"net0":    `^virtio=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0,firewall=1$`,
		"smbios1": `^uuid=[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`,
		"vmgenid": `^[0-9a-f]{8}-[0-9a-f]{4}-`,
		"meta":    `^creation-qemu=9\.2\.0,ctime=\d+$`,
		"digest":  `^[0-9a-f]{40}$`,
	}
	for k, p := range patterns {
		if s, _ := c[k].(string); !regexp.MustCompile(p).MatchString(s) {
			t.Errorf("config %s: got %q, want match %s", k, s, p)
		}
	}
	if got, want := c["digest"], fmt.Sprintf("%x", sha1.Sum([]byte(e.Server.ConfigFile(100)))); got != want {
		t.Errorf("got digest %v, want sha1 of rendered config %s", got, want)
	}

	// A stale digest is refused (qemu-server's own message); the current
	// one is accepted.
	r := e.call("PUT", "/nodes/pve/qemu/100/config", "memory", "4096", "digest", strings.Repeat("0", 40))
	if want := "checksum mismatch (file change by other user?)"; r.Status != 500 || r.Message != want {
		t.Errorf("got %d %q for stale digest, want 500 %q", r.Status, r.Message, want)
	}
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "memory", "4096", "digest", c["digest"].(string), "delete", "tags")
	c2 := e.config("100")
	if c2["memory"] != "4096" || c2["tags"] != nil || c2["digest"] == c["digest"] {
		t.Errorf("got memory %v tags %v digest %v after update, want 4096, none, changed", c2["memory"], c2["tags"], c2["digest"])
	}

	content := e.rows("/nodes/pve/storage/local-lvm/content", "vmid", "100")
	var vols []string
	for _, row := range content {
		vols = append(vols, row["volid"].(string))
	}
	if diff := cmp.Diff([]string{"local-lvm:vm-100-cloudinit", "local-lvm:vm-100-disk-0", "local-lvm:vm-100-disk-1"}, vols); diff != "" {
		t.Errorf("volumes of 100 (-want +got)\n%s", diff)
	}

	// check_vmid_unused dies: a 500 naming the existing guest, not a 400.
	for path, kv := range map[string][]string{
		"/nodes/pve/qemu": {"vmid", "100"},
		"/nodes/pve/lxc":  {"vmid", "100", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
	} {
		r = e.call("POST", path, kv...)
		if want := "VM 100 already exists on node 'pve'"; r.Status != 500 || r.Message != want {
			t.Errorf("POST %s: got %d %q creating an existing vmid, want 500 %q", path, r.Status, r.Message, want)
		}
	}
}

func TestCreateStorageChecks(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	tests := []struct {
		name, param, value string
		status             int
	}{
		{"unknown storage", "scsi0", "nope:8", 500},
		{"no images content", "scsi0", "local:8", 400},
		{"missing import source", "scsi0", "local-lvm:0,import-from=local:import/missing.qcow2", 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/nodes/pve/qemu", "vmid", "150", tc.param, tc.value)
			if r.Status != tc.status {
				t.Errorf("got %d %q %v, want %d", r.Status, r.Message, r.Errors, tc.status)
			}
			if e.Server.HasGuest(150) {
				t.Errorf("got VM 150 after a refused create, want none")
			}
		})
	}
}

func TestPowerPendingAndDestroy(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "memory", "1024", "net0", "virtio,bridge=vmbr0",
		"scsi0", "local-lvm:8", "agent", "1", "ipconfig0", "ip=192.168.100.50/24,gw=192.168.100.1")
	e.run("POST", "/nodes/pve/qemu/100/status/start")

	st := e.object("/nodes/pve/qemu/100/status/current")
	if st["status"] != "running" || st["qmpstatus"] != "running" || st["maxmem"] != float64(1024<<20) {
		t.Errorf("got status %v, want running with maxmem 1GiB", st)
	}

	// Starting again fails inside the task, with the reason in the log.
	upid := e.task("POST", "/nodes/pve/qemu/100/status/start")
	ts := e.wait(upid)
	if ts.ExitStatus != "VM 100 already running" {
		t.Errorf("got exit status %q, want %q", ts.ExitStatus, "VM 100 already running")
	}
	r := e.call("GET", "/nodes/pve/tasks/"+upid+"/log", "start", "0", "limit", "50")
	var lines []struct {
		N int    `json:"n"`
		T string `json:"t"`
	}
	if err := jsonUnmarshal(r.Data, &lines); err != nil || len(lines) == 0 || r.Total == nil || *r.Total != len(lines) {
		t.Fatalf("got log %s total %v, want lines with total", r.Data, r.Total)
	}
	if last := lines[len(lines)-1]; last.T != "TASK ERROR: VM 100 already running" || last.N != len(lines) {
		t.Errorf("got last log line %+v, want TASK ERROR with n=%d", last, len(lines))
	}

	// Non-hotpluggable keys go pending on a running VM; hotpluggable ones apply.
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "memory", "2048", "name", "renamed", "scsi1", "local-lvm:4")
	if c := e.config("100"); c["memory"] != "2048" || c["name"] != "renamed" || c["scsi1"] != "local-lvm:vm-100-disk-1,size=4G" {
		t.Errorf("got config %v, want pending memory applied in view", c)
	}
	if c := e.config("100", "current", "1"); c["memory"] != "1024" || c["name"] != "renamed" {
		t.Errorf("got current memory %v name %v, want 1024 renamed", c["memory"], c["name"])
	}
	pending := e.rows("/nodes/pve/qemu/100/pending")
	found := false
	for _, p := range pending {
		if p["key"] == "memory" {
			found = true
			if p["value"] != "1024" || p["pending"] != "2048" {
				t.Errorf("got pending row %v, want value 1024 pending 2048", p)
			}
		}
	}
	if !found {
		t.Errorf("got pending %v, want a memory row", pending)
	}

	var agent agentIfaces
	e.ok(&agent, "GET", "/nodes/pve/qemu/100/agent/network-get-interfaces")
	if len(agent.Result) != 2 || agent.Result[1].IPs[0].IP != "192.168.100.50" {
		t.Errorf("got agent interfaces %+v, want eth0 192.168.100.50", agent)
	}

	r = e.call("DELETE", "/nodes/pve/qemu/100")
	if want := "VM 100 is running - destroy failed"; r.Status != 500 || r.Message != want {
		t.Errorf("got %d %q deleting a running VM, want 500 %q", r.Status, r.Message, want)
	}
	e.run("POST", "/nodes/pve/qemu/100/status/stop")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	if c := e.config("100", "current", "1"); c["memory"] != "2048" {
		t.Errorf("got memory %v after restart, want pending 2048 applied", c["memory"])
	}
	e.run("POST", "/nodes/pve/qemu/100/status/shutdown")

	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "protection", "1")
	if r := e.call("DELETE", "/nodes/pve/qemu/100"); r.Status != 500 || !strings.Contains(r.Message, "protection") {
		t.Errorf("got %d %q deleting a protected VM, want 500 protection", r.Status, r.Message)
	}
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "delete", "protection")
	e.run("DELETE", "/nodes/pve/qemu/100", "purge", "1", "destroy-unreferenced-disks", "1")
	if r := e.call("GET", "/nodes/pve/qemu/100/config"); r.Status != 500 ||
		r.Message != "Configuration file 'nodes/pve/qemu-server/100.conf' does not exist" {
		t.Errorf("got %d %q after destroy, want 500 missing config", r.Status, r.Message)
	}
	if vols := e.Server.VolumesOf(100); len(vols) != 0 {
		t.Errorf("got volumes %v after destroy, want none", vols)
	}
}

func TestCloneTemplateResize(t *testing.T) {
	// lock_config's wait is long here: the write to the source below must
	// outwait the clone however slowly the machine runs.
	e := newEnv(t, pvesim.Options{LockWait: time.Minute})

	r := e.call("POST", "/nodes/pve/qemu/9000/clone", "newid", "101", "storage", "local-lvm")
	if r.Status != 500 || !strings.Contains(r.Message, "linked clones") {
		t.Errorf("got %d %q for storage on a linked clone, want 500", r.Status, r.Message)
	}

	// The clone runs until the test lets it end.
	release := e.Server.HoldTasks()
	upid := e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "101", "name", "app-1")
	if c := e.config("101"); c["lock"] != "clone" {
		t.Errorf("got target config %v during clone, want lock clone", c)
	}
	// A write to the source waits for the clone's lock (lock_config), then
	// goes through once the clone has ended.
	put := make(chan envelope, 1)
	go func() {
		r := envelope{Message: "the call failed the test"}
		defer func() { put <- r }()
		r = e.call("PUT", "/nodes/pve/qemu/9000/config", "description", "x")
	}()
	for i := 0; e.Server.LockWaiters() == 0; i++ {
		select {
		case r := <-put:
			t.Fatalf("got %d %q writing to the source while the clone runs, want a wait for its lock", r.Status, r.Message)
		case <-time.After(time.Millisecond):
		}
		if i == 10000 {
			t.Fatal("the write to the source never waited for the clone's lock")
		}
	}
	release()
	if r := <-put; r.Status != 200 {
		t.Fatalf("got %d %q writing to the source after the clone, want 200", r.Status, r.Message)
	}
	var st taskStatus
	e.ok(&st, "GET", "/nodes/pve/tasks/"+url.PathEscape(upid)+"/status")
	if st.Status != "stopped" || st.ExitStatus != "OK" || st.Type != "qmclone" || st.ID != "9000" {
		t.Fatalf("got %+v when the write to the source returned, want qmclone 9000 ended OK", st)
	}
	src, c := e.config("9000"), e.config("101")
	// LVM-thin names a linked clone like any disk (LvmThinPlugin.pm clone_image).
	if c["scsi0"] != "local-lvm:vm-101-disk-0,size=3584M" || c["ide2"] != "local-lvm:vm-101-cloudinit,media=cdrom,size=4M" ||
		c["name"] != "app-1" || c["template"] != nil || c["net0"] == src["net0"] || c["smbios1"] == src["smbios1"] {
		t.Errorf("got linked clone config %v (source %v)", c, src)
	}

	e.run("POST", "/nodes/pve/qemu/9000/clone", "newid", "102", "full", "1", "storage", "local-lvm")
	if c := e.config("102"); c["scsi0"] != "local-lvm:vm-102-disk-0,size=3584M" || c["name"] != "Copy-of-VM-ubuntu-24.04-cloud" {
		t.Errorf("got full clone scsi0 %v name %v", c["scsi0"], c["name"])
	}

	e.run("PUT", "/nodes/pve/qemu/102/resize", "disk", "scsi0", "size", "+8G")
	if c := e.config("102"); c["scsi0"] != "local-lvm:vm-102-disk-0,size=11776M" {
		t.Errorf("got scsi0 %v after +8G, want 11776M", c["scsi0"])
	}
	// qemu-server checks a resize in the worker: shrinking fails the task.
	if st := e.wait(e.task("PUT", "/nodes/pve/qemu/102/resize", "disk", "scsi0", "size", "4G")); st.ExitStatus != "shrinking disks is not supported" {
		t.Errorf("got exit status %q shrinking, want shrinking disks is not supported", st.ExitStatus)
	}

	e.run("POST", "/nodes/pve/qemu/102/status/start")
	if r := e.call("POST", "/nodes/pve/qemu/102/template"); r.Status != 500 {
		t.Errorf("got %d converting a running VM, want 500", r.Status)
	}
	e.run("POST", "/nodes/pve/qemu/102/status/stop")
	e.run("POST", "/nodes/pve/qemu/102/template")
	if c := e.config("102"); c["template"] != float64(1) || c["scsi0"] != "local-lvm:base-102-disk-0,size=11776M" {
		t.Errorf("got template config scsi0 %v template %v", c["scsi0"], c["template"])
	}
}

func TestParamVerification(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	tests := []struct {
		name  string
		kv    []string
		param string
	}{
		{"memory below minimum", []string{"vmid", "100", "memory", "1"}, "memory"},
		{"unknown parameter", []string{"vmid", "100", "bogus", "1"}, "bogus"},
		{"bad vmid", []string{"vmid", "12"}, "vmid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call("POST", "/nodes/pve/qemu", tc.kv...)
			if r.Status != 400 || r.Message != "Parameter verification failed." || r.Errors[tc.param] == "" {
				t.Errorf("got %d %q %v, want 400 with errors.%s", r.Status, r.Message, r.Errors, tc.param)
			}
		})
	}
}

func TestNICWriteBack(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	tests := []struct{ name, in, want string }{
		{"keyed model and mac", "model=e1000,macaddr=bc:24:11:aa:bb:cc,bridge=vmbr0,tag=5", "e1000=BC:24:11:AA:BB:CC,bridge=vmbr0,tag=5"},
		{"alias form", "rtl8139=BC:24:11:00:00:0A,firewall=1,bridge=vmbr0", "rtl8139=BC:24:11:00:00:0A,bridge=vmbr0,firewall=1"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprint(100 + i)
			e.run("POST", "/nodes/pve/qemu", "vmid", id, "net0", tc.in)
			if got := e.config(id)["net0"]; got != tc.want {
				t.Errorf("got net0 %v, want %q", got, tc.want)
			}
		})
	}
}

// sshkeys is URL-decoded and each line read as a public key, at create and
// update, before anything else; a key that does not read fails the call
// (pve-common Tools.pm validate_ssh_public_keys).
func TestSSHKeysValidated(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	const key = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIMu2dTvNNTWYm9t4yw0mvQSzLvd9EcVBNi3AZdCpq7Bu%20ops%40example.com"
	r := e.call("POST", "/nodes/pve/qemu", "vmid", "150", "sshkeys", "ssh-rsa%20nonsense")
	if r.Status != 500 || r.Message != "SSH public key validation error" || e.Server.HasGuest(150) {
		t.Errorf("create with a bad key: got %d %q (VM made: %v), want 500 SSH public key validation error", r.Status, r.Message, e.Server.HasGuest(150))
	}
	e.run("POST", "/nodes/pve/qemu", "vmid", "150", "sshkeys", key+"%0A%0A"+key)
	if r := e.call("PUT", "/nodes/pve/qemu/150/config", "sshkeys", key+"%0Anot-a-key"); r.Status != 500 || r.Message != "SSH public key validation error" {
		t.Errorf("update with a bad key: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "PUT", "/nodes/pve/qemu/150/config", "sshkeys", key)
}

package pvesim_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

func TestContainerLifecycle(t *testing.T) {
	e := newEnv(t, pvesim.Options{StatusInterval: 5 * time.Millisecond})
	upid := e.task("POST", "/nodes/pve/lxc", "vmid", "200", "hostname", "ct-1",
		"ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:8", "net0", "name=eth0,bridge=vmbr0,ip=10.1.2.3/24,gw=10.1.2.1",
		"unprivileged", "1", "features", "nesting=1", "memory", "1024",
		"ssh-public-keys", "ssh-ed25519 AAAA test", "password", "secret-pw")
	if st := e.wait(upid); st.Type != "vzcreate" || st.ExitStatus != "OK" {
		t.Fatalf("got %+v, want vzcreate OK", st)
	}
	c := e.object("/nodes/pve/lxc/200/config")
	for k, want := range map[string]any{
		"hostname": "ct-1", "rootfs": "local-lvm:vm-200-disk-0,size=8G", "unprivileged": float64(1),
		"memory": float64(1024), "ostype": "debian", "arch": "amd64", "features": "nesting=1",
	} {
		if diff := cmp.Diff(want, c[k]); diff != "" {
			t.Errorf("config %s (-want +got)\n%s", k, diff)
		}
	}
	if !regexp.MustCompile(`^name=eth0,bridge=vmbr0,gw=10\.1\.2\.1,hwaddr=BC:24:11:[0-9A-F:]{8},ip=10\.1\.2\.3/24,type=veth$`).
		MatchString(c["net0"].(string)) {
		t.Errorf("got net0 %q, want PVE's write-back", c["net0"])
	}
	for _, secret := range []string{"password", "ssh-public-keys"} {
		if _, ok := c[secret]; ok {
			t.Errorf("got %s in the config, want it kept out", secret)
		}
	}
	if r := e.call("GET", "/nodes/pve/qemu/200/config"); r.Status != 500 {
		t.Errorf("got %d reading a CT through /qemu, want 500", r.Status)
	}

	e.run("POST", "/nodes/pve/lxc/200/status/start")
	ifs := e.rows("/nodes/pve/lxc/200/interfaces")
	if len(ifs) != 2 || ifs[1]["inet"] != "10.1.2.3/24" {
		t.Errorf("got interfaces %v, want eth0 10.1.2.3/24", ifs)
	}
	// Feature flags other than nesting are root@pam's, which no token is
	// (pve-container LXC.pm check_ct_modify_config_perm).
	if r := e.call("PUT", "/nodes/pve/lxc/200/config", "features", "nesting=1,keyctl=1"); r.Status != 403 ||
		r.Message != "Permission check failed (changing feature flags (except nesting) is only allowed for root@pam)" {
		t.Errorf("got %d %q setting keyctl with a token, want 403", r.Status, r.Message)
	}
	e.ok(nil, "PUT", "/nodes/pve/lxc/200/config", "memory", "2048", "features", "nesting=0")
	e.ok(&c, "GET", "/nodes/pve/lxc/200/config", "current", "1")
	if c["memory"] != float64(2048) || c["features"] != "nesting=1" {
		t.Errorf("got memory %v features %v, want memory live and features pending", c["memory"], c["features"])
	}
	e.resource("lxc/200", func(r map[string]any) bool {
		return r["type"] == "lxc" && r["name"] == "ct-1" && r["status"] == "running"
	})
	if r := e.call("DELETE", "/nodes/pve/lxc/200"); r.Status != 500 || !strings.Contains(r.Message, "container is running") {
		t.Errorf("got %d %q deleting a running CT, want 500", r.Status, r.Message)
	}
	e.run("POST", "/nodes/pve/lxc/200/status/stop")

	// Template conversion answers null but runs a worker: poll the config.
	r := e.call("POST", "/nodes/pve/lxc/200/template")
	if r.Status != 200 || string(r.Data) != "null" {
		t.Fatalf("got %d %s converting to a template, want 200 null", r.Status, r.Data)
	}
	for i := 0; ; i++ {
		e.ok(&c, "GET", "/nodes/pve/lxc/200/config")
		if c["template"] == float64(1) {
			break
		}
		if i > 2000 {
			t.Fatalf("template flag never appeared: %v", c)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if c["rootfs"] != "local-lvm:base-200-disk-0,size=8G" {
		t.Errorf("got rootfs %v after template, want base volume", c["rootfs"])
	}
	e.run("POST", "/nodes/pve/lxc/200/clone", "newid", "201", "hostname", "ct-2")
	e.ok(&c, "GET", "/nodes/pve/lxc/201/config")
	if c["rootfs"] != "local-lvm:vm-201-disk-0,size=8G" || c["hostname"] != "ct-2" {
		t.Errorf("got clone rootfs %v hostname %v", c["rootfs"], c["hostname"])
	}
	e.run("PUT", "/nodes/pve/lxc/201/resize", "disk", "rootfs", "size", "+2G")
	e.run("DELETE", "/nodes/pve/lxc/201")
	if vols := e.Server.VolumesOf(201); len(vols) != 0 {
		t.Errorf("got volumes %v after destroy, want none", vols)
	}
}

package pvesim_test

import (
	"net/url"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// TestResponsesMatchSchema drives every implemented surface and checks each
// request and answer against the official schema (returns, parameters).
func TestResponsesMatchSchema(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})

	e.ok(nil, "GET", "/version")
	e.ok(nil, "GET", "/nodes")
	e.ok(nil, "GET", "/nodes/pve/status")
	e.ok(nil, "GET", "/cluster/nextid")
	e.ok(nil, "POST", "/pools", "poolid", "lab", "comment", "c")
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "name", "a", "scsi0", "local-lvm:4", "net0", "virtio,bridge=vmbr0",
		"agent", "1", "pool", "lab", "tags", "x;y", "onboot", "1", "cpulimit", "1.5")
	e.run("POST", "/nodes/pve/qemu/9000/clone", "newid", "101", "name", "b")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "cores", "4")
	e.run("POST", "/nodes/pve/qemu/100/config", "description", "d")
	for _, p := range []string{"/cluster/resources", "/nodes/pve/qemu", "/nodes/pve/qemu/100", "/nodes/pve/qemu/100/config",
		"/nodes/pve/qemu/100/pending", "/nodes/pve/qemu/100/status/current", "/nodes/pve/qemu/100/agent/network-get-interfaces",
		"/nodes/pve/qemu/9000/config", "/pools", "/pools/lab", "/nodes/pve/tasks", "/nodes/pve/network", "/nodes/pve/network/vmbr0",
		"/nodes/pve/dns", "/storage", "/storage/local", "/nodes/pve/storage", "/nodes/pve/storage/local-lvm/status",
		"/nodes/pve/storage/local-lvm/content", "/nodes/pve/storage/local/content"} {
		e.ok(nil, "GET", p)
	}
	e.ok(nil, "GET", "/pools", "poolid", "lab")
	e.run("PUT", "/nodes/pve/qemu/100/resize", "disk", "scsi0", "size", "+1G")
	e.run("POST", "/nodes/pve/qemu/100/status/stop")
	e.run("POST", "/nodes/pve/qemu/101/template")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "bond0", "type", "bond", "slaves", "eno3 eno4", "bond_mode", "active-backup")
	e.ok(nil, "PUT", "/nodes/pve/network/bond0", "type", "bond", "slaves", "eno3", "bond_mode", "802.3ad", "mtu", "9000")
	e.ok(nil, "GET", "/nodes/pve/network")
	e.run("PUT", "/nodes/pve/network")
	e.ok(nil, "DELETE", "/nodes/pve/network")
	e.ok(nil, "PUT", "/nodes/pve/dns", "search", "lab")
	e.ok(nil, "PUT", "/pools", "poolid", "lab", "vms", "100", "delete", "1")
	e.run("DELETE", "/nodes/pve/qemu/100")
	e.ok(nil, "DELETE", "/pools", "poolid", "lab")

	e.ok(nil, "POST", "/storage", "storage", "nfs1", "type", "nfs", "server", "10.0.0.5", "export", "/srv", "content", "iso,import")
	e.ok(nil, "PUT", "/storage/nfs1", "content", "iso,import,backup")
	e.run("POST", "/nodes/pve/storage/nfs1/download-url", "url", "https://releases.ubuntu.com/24.04/a.iso", "content", "iso", "filename", "a.iso")
	e.ok(nil, "GET", "/nodes/pve/storage/nfs1/content/"+url.PathEscape("nfs1:iso/a.iso"))
	e.ok(nil, "PUT", "/nodes/pve/storage/nfs1/content/"+url.PathEscape("nfs1:iso/a.iso"), "notes", "n")
	e.run("DELETE", "/nodes/pve/storage/nfs1/content/"+url.PathEscape("nfs1:iso/a.iso"))
	e.ok(nil, "DELETE", "/storage/nfs1")

	e.ok(nil, "POST", "/access/groups", "groupid", "g")
	e.ok(nil, "POST", "/access/users", "userid", "u@pve", "groups", "g")
	e.ok(nil, "POST", "/access/users/u@pve/token/tk", "privsep", "0")
	e.ok(nil, "PUT", "/access/users/u@pve/token/tk", "comment", "c")
	e.ok(nil, "PUT", "/access/acl", "path", "/vms", "roles", "PVEAuditor", "tokens", "u@pve!tk")
	for _, p := range []string{"/access/users", "/access/users/u@pve", "/access/users/u@pve/token", "/access/users/u@pve/token/tk",
		"/access/groups", "/access/groups/g", "/access/roles", "/access/acl"} {
		e.ok(nil, "GET", p)
	}
	e.ok(nil, "GET", "/access/users", "full", "1")
	e.ok(nil, "POST", "/access/roles", "roleid", "Ops", "privs", "VM.Audit")
	e.ok(nil, "PUT", "/access/roles/Ops", "privs", "Sys.Audit", "append", "1")
	e.ok(nil, "GET", "/access/roles/Ops")
	e.ok(nil, "GET", "/access/permissions")
	e.ok(nil, "GET", "/access/permissions", "path", "/vms", "userid", "u@pve!tk")
	e.ok(nil, "DELETE", "/access/roles/Ops")

	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:2", "net0", "name=eth0,bridge=vmbr0,ip=dhcp", "hostname", "c1", "cores", "2")
	e.run("POST", "/nodes/pve/lxc/200/status/start")
	for _, p := range []string{"/nodes/pve/lxc", "/nodes/pve/lxc/200", "/nodes/pve/lxc/200/config", "/nodes/pve/lxc/200/pending",
		"/nodes/pve/lxc/200/status/current", "/nodes/pve/lxc/200/interfaces", "/cluster/resources"} {
		e.ok(nil, "GET", p)
	}
	e.ok(nil, "PUT", "/nodes/pve/lxc/200/config", "swap", "256")
	e.run("POST", "/nodes/pve/lxc/200/status/shutdown")
	e.ok(nil, "POST", "/nodes/pve/lxc/200/template")

	// Side-by-side clones of the template, a merging network PUT, task logs.
	u1 := e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "301")
	u2 := e.task("POST", "/nodes/pve/qemu/9000/clone", "newid", "302", "full", "1")
	e.wait(u1)
	e.wait(u2)
	e.taskLog(u2)
	e.ok(nil, "PUT", "/nodes/pve/network/eno1", "type", "eth", "mtu", "9000")
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr0", "type", "bridge", "mtu", "9000", "delete", "comments")
	e.ok(nil, "GET", "/nodes/pve/network")
	e.ok(nil, "GET", "/nodes/pve/network/vmbr0")
	e.ok(nil, "DELETE", "/nodes/pve/network")
	e.task("POST", "/nodes/pve/qemu/301/config", "name", "staged", "delete", "tags")
	e.ok(nil, "GET", "/nodes/pve/qemu/301/pending")
	e.ok(nil, "GET", "/nodes/pve/qemu/301/config")
}

// TestWarningsMatchSchema covers the task answers of tasks ending with warnings.
func TestWarningsMatchSchema(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{WarnRate: 1})
	upid := e.task("POST", "/nodes/pve/qemu", "vmid", "100")
	e.wait(upid)
	e.taskLog(upid)
	e.ok(nil, "GET", "/nodes/pve/tasks")
	e.ok(nil, "GET", "/nodes/pve/tasks", "errors", "1")
}

// checkedEnv is a simulator behind the official-schema checker: every
// violation fails the test when it ends.
func checkedEnv(t *testing.T, opts pvesim.Options) *env {
	t.Helper()
	return startEnv(t, simtest.Options{Sim: opts, Conformance: true})
}

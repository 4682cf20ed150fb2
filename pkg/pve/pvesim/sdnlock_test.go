package pvesim_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// TestSDNLock: PVE 9's global SDN lock. It is refused while something
// is pending (unless allow-pending); while held, every write and the
// commit need its token; the commit releases it when release-lock=1 is
// given (the schema's default is not applied); DELETE with force drops it without the token.
func TestSDNLock(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple")
	if r := e.call("POST", "/cluster/sdn/lock"); r.Status != 500 || r.Message != "could not acquire lock for SDN config: configuration has pending changes" {
		t.Errorf("lock with pending changes: got %d %q", r.Status, r.Message)
	}
	var token string
	e.ok(&token, "POST", "/cluster/sdn/lock", "allow-pending", "1")
	if len(token) != 36 || token[14] != '7' {
		t.Errorf("lock token: got %q, want a UUIDv7", token)
	}
	if r := e.call("POST", "/cluster/sdn/lock", "allow-pending", "1"); r.Status != 500 || r.Message != "could not acquire lock for SDN config: invalid lock token provided!" {
		t.Errorf("second lock: got %d %q", r.Status, r.Message)
	}
	if r := e.call("POST", "/cluster/sdn/vnets", "vnet", "app", "zone", "flat"); r.Status != 500 || r.Message != "create sdn vnet object failed: invalid lock token provided!" {
		t.Errorf("write without the token: got %d %q", r.Status, r.Message)
	}
	if r := e.call("PUT", "/cluster/sdn", "lock-token", "wrong"); r.Status != 500 || r.Message != "could not commit SDN config: invalid lock token provided!" {
		t.Errorf("commit with a wrong token: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "app", "zone", "flat", "lock-token", token)
	// The commit keeps the lock unless release-lock is given: its
	// "default => 1" is not applied (RESTHandler.pm handle fills in no
	// defaults; SDN.pm reload tests `$lock_token && $release_lock`).
	e.sdnApply("lock-token", token)
	if r := e.call("POST", "/cluster/sdn/vnets", "vnet", "db", "zone", "flat"); r.Status != 500 || r.Message != "create sdn vnet object failed: invalid lock token provided!" {
		t.Errorf("write after a commit without release-lock: got %d %q, want the lock still held", r.Status, r.Message)
	}
	e.sdnApply("lock-token", token, "release-lock", "1")
	// Released by the commit: a write without a token works again.
	e.ok(nil, "PUT", "/cluster/sdn/vnets/app", "alias", "apps", "lock-token", "ignored-without-a-lock")
	e.ok(&token, "POST", "/cluster/sdn/lock", "allow-pending", "1")
	if r := e.call("DELETE", "/cluster/sdn/lock", "lock-token", "wrong"); r.Status != 500 || r.Message != "could not release lock: invalid lock token provided!" {
		t.Errorf("release with a wrong token: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "DELETE", "/cluster/sdn/lock", "force", "1")
	e.ok(nil, "POST", "/cluster/sdn/rollback")
	vnet := e.object("/cluster/sdn/vnets/app")
	if vnet["alias"] != nil {
		t.Errorf("after rollback: got %v, want the committed vnet", vnet)
	}
}

// TestSDNPermissions: the apidoc's checks and the handlers' own: lists
// leave out what the caller may not audit, a vnet is guarded on
// /sdn/zones/<zone>/<vnet>, and a NIC on a vnet needs SDN.Use there
// (pve-guest-common GuestHelpers.pm check_vnet_access).
func TestSDNPermissions(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "lan", "type", "vlan", "bridge", "vmbr0")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "dmz", "type", "simple")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "web", "zone", "lan", "tag", "10")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "edge", "zone", "dmz")
	auth := e.newToken("net@pve", "tk", false)
	if rows := dataList(t, e.as(auth, "GET", "/cluster/sdn/zones")); len(rows) != 0 {
		t.Errorf("zones without privileges: got %v", rows)
	}
	wantDenied(t, e.as(auth, "POST", "/cluster/sdn/zones", "zone", "z9", "type", "simple"), "/sdn/zones, SDN.Allocate")
	wantDenied(t, e.as(auth, "GET", "/cluster/sdn/vnets/web"), "/sdn/zones/lan/web, SDN.Audit|SDN.Allocate")
	wantDenied(t, e.as(auth, "PUT", "/cluster/sdn"), "/sdn, SDN.Allocate")
	e.grant("/sdn/zones/lan", "PVESDNAdmin", "users", "net@pve")
	if rows := dataList(t, e.as(auth, "GET", "/cluster/sdn/vnets")); len(rows) != 1 || rows[0]["vnet"] != "web" {
		t.Errorf("vnets with SDN.Allocate on lan: got %v", rows)
	}
	if r := e.as(auth, "PUT", "/cluster/sdn/vnets/web", "alias", "x"); r.Status != 200 {
		t.Errorf("update in an allowed zone: got %d %q", r.Status, r.Message)
	}
	wantDenied(t, e.as(auth, "DELETE", "/cluster/sdn/vnets/edge"), "/sdn/zones/dmz/edge, SDN.Allocate")

	e.grant("/vms", "PVEVMAdmin", "users", "net@pve")
	e.grant("/sdn/zones/localnetwork", "PVESDNUser", "users", "net@pve")
	create := func(net string) envelope {
		return e.as(auth, "POST", "/nodes/pve/qemu", "vmid", "150", "net0", net)
	}
	wantDenied(t, create("virtio,bridge=edge"), "/sdn/zones/dmz/edge, SDN.Use")
	if r := create("virtio,bridge=web"); r.Status != 200 {
		t.Errorf("a NIC on a vnet of an allowed zone: got %d %q", r.Status, r.Message)
	}
}

// TestSDNNodes: a zone limited to some nodes is generated there only;
// a vlan zone whose bridge a node lacks leaves its vnets out there (a
// warning in the reload's log) and its status says so; a NIC with a tag
// on a vnet that is not VLAN-aware cannot be plugged; a node's own
// network reload generates the committed SDN config too.
func TestSDNNodes(t *testing.T) {
	e := newEnv(t, pvesim.Options{Nodes: []string{"pve", "pve2"}})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "one", "type", "simple", "nodes", "pve2")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "lan", "type", "vlan", "bridge", "vmbr9")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "solo", "zone", "one")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "web", "zone", "lan", "tag", "10")
	for _, r := range []struct{ kv []string }{{[]string{"zone", "toolongzone", "type", "simple"}}} {
		if got := e.call("POST", "/cluster/sdn/zones", r.kv...); got.Status != 400 || got.Errors["zone"] == "" {
			t.Errorf("zone name of 11 characters: got %d %v", got.Status, got.Errors)
		}
	}
	if got := e.call("POST", "/cluster/sdn/vnets", "vnet", "ninechars", "zone", "one"); got.Status != 400 || got.Errors["vnet"] == "" {
		t.Errorf("vnet name of 9 characters: got %d %v", got.Status, got.Errors)
	}
	e.sdnApply()
	ifaces := e.rows("/nodes/pve/network", "type", "vnet")
	if len(ifaces) != 1 || ifaces[0]["iface"] != "web" {
		t.Errorf("pve vnets: got %v, want web only (solo's zone is on pve2)", ifaces)
	}
	content := e.rows("/nodes/pve/sdn/zones/lan/content")
	if len(content) != 1 || content[0]["status"] != "error" {
		t.Errorf("web on pve without vmbr9: got %v", content)
	}
	e.run("POST", "/nodes/pve2/qemu", "vmid", "101", "net0", "virtio,bridge=solo")
	e.run("POST", "/nodes/pve2/qemu/101/status/start")
	e.run("POST", "/nodes/pve/qemu", "vmid", "102", "net0", "virtio,bridge=web")
	upid := e.task("POST", "/nodes/pve/qemu/102/status/start")
	if st := e.wait(upid); st.ExitStatus == "OK" || !strings.Contains(e.logOf(upid), "bridge 'web' does not exist") {
		t.Errorf("start on a vnet whose zone bridge is missing: got %q %v", st.ExitStatus, e.logOf(upid))
	}
	// vmbr9 made and applied on pve: that reload generates web there.
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr9", "type", "bridge", "autostart", "1")
	e.run("PUT", "/nodes/pve/network")
	e.run("PUT", "/nodes/pve/network")
	e.run("POST", "/nodes/pve/qemu/102/status/start")
	e.run("POST", "/nodes/pve2/qemu", "vmid", "103", "net0", "virtio,bridge=solo,tag=5")
	upid = e.task("POST", "/nodes/pve2/qemu/103/status/start")
	if st := e.wait(upid); st.ExitStatus == "OK" || !strings.Contains(e.logOf(upid), "vm vlans are not allowed on vnet solo") {
		t.Errorf("a tagged NIC on a vnet that is not VLAN-aware: got %q %v", st.ExitStatus, e.logOf(upid))
	}
	// A container on a vnet that is only pending fails as a VM does.
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "later", "zone", "one")
	e.run("POST", "/nodes/pve2/lxc", "vmid", "104", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:4", "net0", "name=eth0,bridge=later")
	if st := e.wait(e.task("POST", "/nodes/pve2/lxc/104/status/start")); st.ExitStatus != "startup for container '104' failed" {
		t.Errorf("container on a pending vnet: got %q", st.ExitStatus)
	}
}

// TestSDNDryRun: the node's interfaces.d/sdn as the next commit would
// write it, diffed against the one it has; nothing once committed and
// reloaded. A vlan zone on a bridge that is not VLAN-aware gets the
// vmbr0vTAG bridge of the NIC's VLAN and a veth pair; a simple zone's
// vnet holds its subnets' gateways and forwards.
func TestSDNDryRun(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "lan", "type", "vlan", "bridge", "vmbr0")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "web", "zone", "lan", "tag", "10", "alias", "web tier")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "app", "zone", "flat")
	e.ok(nil, "POST", "/cluster/sdn/vnets/app/subnets", "subnet", "192.168.5.0/24", "type", "subnet", "gateway", "192.168.5.1")
	var dry map[string]string
	e.ok(&dry, "GET", "/cluster/sdn/dry-run", "node", "pve")
	_, body, _ := strings.Cut(dry["interfaces-diff"], "@@ -0,0 +1,")
	_, body, _ = strings.Cut(body, "@@\n")
	want := `+#version:1
+
+auto app
+iface app
+	address 192.168.5.1/24
+	bridge_ports none
+	bridge_stp off
+	bridge_fd 0
+	ip-forward on
+
+auto ln_web
+iface ln_web
+	link-type veth
+	veth-peer-name pr_web
+
+auto pr_web
+iface pr_web
+	link-type veth
+	veth-peer-name ln_web
+
+auto vmbr0v10
+iface vmbr0v10
+	bridge_ports  eno1.10 pr_web
+	bridge_stp off
+	bridge_fd 0
+
+auto web
+iface web
+	bridge_ports ln_web
+	bridge_stp off
+	bridge_fd 0
+	alias web tier
`
	if !strings.HasPrefix(dry["interfaces-diff"], "--- /etc/network/interfaces.d/sdn\t1970-01-01") || body != want {
		t.Errorf("dry-run before a commit: got\n%s\nwant the hunk\n%s", dry["interfaces-diff"], want)
	}
	e.sdnApply()
	dry = nil
	e.ok(&dry, "GET", "/cluster/sdn/dry-run", "node", "pve")
	if len(dry) != 0 {
		t.Errorf("dry-run after the commit: got %v, want no difference", dry)
	}
}

// TestSDNOfflineNode: reloadnetworkall goes on past a node it cannot
// reach (the worker warns and continues); that node's zones stay
// pending until it reloads its network itself.
func TestSDNOfflineNode(t *testing.T) {
	e := newEnv(t, pvesim.Options{Nodes: []string{"pve", "pve2"}})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "app", "zone", "flat")
	if err := e.Server.SetNodeOffline("pve2", true); err != nil {
		t.Fatal(err)
	}
	upid := e.task("PUT", "/cluster/sdn")
	if st := e.wait(upid); st.ExitStatus != "OK" || st.Type != "reloadnetworkall" || st.Node != "pve" {
		t.Fatalf("reloadnetworkall: got %+v", st)
	}
	if log := e.logOf(upid); !strings.Contains(log, "pve2: reloading network config\ncommand 'pvesh set /nodes/pve2/network --regenerate-frr 0' failed") {
		t.Errorf("reloadnetworkall log: got %q", log)
	}
	if err := e.Server.SetNodeOffline("pve2", false); err != nil {
		t.Fatal(err)
	}
	tasks := e.rows("/nodes/pve/tasks", "typefilter", "srvreload", "source", "all")
	if len(tasks) != 1 || tasks[0]["user"] != "root@pam" || tasks[0]["id"] != "networking" {
		t.Errorf("srvreload started by reloadnetworkall (pvesh, as root@pam): got %v", tasks)
	}
	st := e.rows("/nodes/pve2/sdn/zones")
	if len(st) != 1 || st[0]["status"] != "pending" {
		t.Errorf("pve2 after a commit it missed: got %v", st)
	}
	e.run("PUT", "/nodes/pve2/network")
	e.ok(&st, "GET", "/nodes/pve2/sdn/zones")
	if len(st) != 1 || st[0]["status"] != "available" {
		t.Errorf("pve2 after its own reload: got %v", st)
	}
}

// TestSDNStateFile: the files, the running config and what the nodes
// generated survive a restart with --state.
func TestSDNStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	e := newEnv(t, pvesim.Options{StateFile: path})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "app", "zone", "flat")
	e.sdnApply()
	e.ok(nil, "PUT", "/cluster/sdn/vnets/app", "alias", "later")
	before := e.rows("/cluster/sdn/vnets", "pending", "1")
	e.Server.Close()

	e2 := newEnv(t, pvesim.Options{StateFile: path})
	after := e2.rows("/cluster/sdn/vnets", "pending", "1")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("pending vnets after a restart (-want +got)\n%s", diff)
	}
	e2.run("POST", "/nodes/pve/qemu", "vmid", "100", "net0", "virtio,bridge=app")
	e2.run("POST", "/nodes/pve/qemu/100/status/start")
}

// TestSDNMigrate: a running VM on a vnet moves to a node where the vnet
// is up; to one outside its zone's nodes it cannot start there.
func TestSDNMigrate(t *testing.T) {
	e := newEnv(t, pvesim.Options{Nodes: []string{"pve", "pve2", "pve3"}})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple", "nodes", "pve,pve2")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "app", "zone", "flat")
	e.sdnApply()
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "net0", "virtio,bridge=app")
	e.run("POST", "/nodes/pve/qemu/100/status/start")
	e.run("POST", "/nodes/pve/qemu/100/migrate", "target", "pve2", "online", "1")
	upid := e.task("POST", "/nodes/pve2/qemu/100/migrate", "target", "pve3", "online", "1")
	if st := e.wait(upid); st.ExitStatus == "OK" || !strings.Contains(e.logOf(upid), "bridge 'app' does not exist") {
		t.Errorf("migration to a node outside the zone: got %q\n%s", st.ExitStatus, e.logOf(upid))
	}
}

// TestSDNRenderZones: qinq and vxlan zones as their plugins write them
// (QinQPlugin, VxlanPlugin generate_sdn_config): a qinq zone on a bridge
// that is not VLAN-aware gets sv_ZONE on the bridge's NIC and the
// VLAN-aware z_ZONE; a vxlan vnet tunnels to every peer but the node's
// own address; a simple vnet's SNAT goes out through the default route.
func TestSDNRenderZones(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "qz", "type", "qinq", "bridge", "vmbr0", "tag", "200")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "vx", "type", "vxlan", "peers", "192.168.100.2,192.168.100.3", "vxlan-port", "4790")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "nat", "type", "simple")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "cust", "zone", "qz", "tag", "30")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "over", "zone", "vx", "tag", "7000")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "out", "zone", "nat")
	e.ok(nil, "POST", "/cluster/sdn/vnets/out/subnets", "subnet", "10.9.0.0/24", "type", "subnet", "gateway", "10.9.0.1", "snat", "1")
	var dry map[string]string
	e.ok(&dry, "GET", "/cluster/sdn/dry-run", "node", "pve")
	for _, want := range []string{
		"+auto sv_qz\n+iface sv_qz\n+\tvlan-raw-device eno1\n+\tvlan-id 200\n",
		"+auto z_qz\n+iface z_qz\n+\tbridge-stp off\n+\tbridge-ports sv_qz ln_qz\n+\tbridge-fd 0\n+\tbridge-vlan-aware yes\n+\tbridge-vids 2-4094\n",
		"+auto cust\n+iface cust\n+\tbridge_ports z_qz.30\n",
		"+auto vxlan_over\n+iface vxlan_over\n+\tvxlan-id 7000\n+\tvxlan_remoteip 192.168.100.3\n+\tvxlan-port 4790\n+\tmtu 1450\n",
		"+\tpost-up iptables -t nat -A POSTROUTING -s '10.9.0.0/24' -o vmbr0 -j SNAT --to-source 192.168.100.2\n",
	} {
		if !strings.Contains(dry["interfaces-diff"], want) {
			t.Errorf("dry-run: missing\n%s\nin\n%s", want, dry["interfaces-diff"])
		}
	}
}

package pvesim_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// sdnApply commits the pending SDN config (PUT /cluster/sdn) and waits
// for its reloadnetworkall task, then for every node's srvreload task
// it started (PVE's reloadnetworkall does not wait for them).
func (e *env) sdnApply(kv ...string) {
	e.t.Helper()
	e.run("PUT", "/cluster/sdn", kv...)
	for _, node := range e.nodes() {
		tasks := e.rows("/nodes/"+node+"/tasks", "typefilter", "srvreload", "source", "all")
		for _, tk := range tasks {
			if tk["status"] == "RUNNING" {
				if st := e.wait(tk["upid"].(string)); st.ExitStatus != "OK" {
					e.t.Fatalf("srvreload on %s: %s", node, st.ExitStatus)
				}
			}
		}
	}
}

func (e *env) nodes() []string {
	e.t.Helper()
	rows := e.rows("/nodes")
	var out []string
	for _, r := range rows {
		out = append(out, r["node"].(string))
	}
	slices.Sort(out)
	return out
}

// byID indexes a list answer by one of its keys.
func byID(rows []map[string]any, key string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range rows {
		id, _ := r[key].(string)
		out[id] = r
	}
	return out
}

// TestSDNPendingAndRunning: writes go to the files; pending=1 shows each
// object's state and its pending values, running=1 what is committed;
// PUT /cluster/sdn commits (reloadnetworkall), the nodes' srvreload
// tasks bring the vnets up as bridges; a VM on a vnet starts only then.
func TestSDNPendingAndRunning(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "lan", "type", "vlan", "bridge", "vmbr0", "mtu", "1450")
	e.ok(nil, "POST", "/cluster/sdn/vnets", "vnet", "web", "zone", "lan", "tag", "10", "alias", "web tier")
	e.ok(nil, "POST", "/cluster/sdn/vnets/web/subnets", "subnet", "10.10.0.0/24", "type", "subnet",
		"gateway", "10.10.0.1", "dhcp-range", "start-address=10.10.0.100,end-address=10.10.0.200")

	zones := e.rows("/cluster/sdn/zones", "pending", "1")
	if len(zones) != 1 || zones[0]["state"] != "new" || zones[0]["type"] != "vlan" || zones[0]["bridge"] != nil {
		t.Fatalf("pending zones: got %v, want lan new with its keys under pending", zones)
	}
	if p := zones[0]["pending"].(map[string]any); p["bridge"] != "vmbr0" || p["mtu"] != 1450.0 {
		t.Errorf("pending zone values: got %v", p)
	}
	e.ok(&zones, "GET", "/cluster/sdn/zones", "running", "1")
	if len(zones) != 0 {
		t.Errorf("running zones before a commit: got %v", zones)
	}
	subnet := e.object("/cluster/sdn/vnets/web/subnets/lan-10.10.0.0-24")
	if subnet["cidr"] != "10.10.0.0/24" || subnet["zone"] != "lan" || subnet["gateway"] != "10.10.0.1" || subnet["digest"] == nil {
		t.Errorf("subnet: got %v", subnet)
	}
	if r, _ := subnet["dhcp-range"].([]any); len(r) != 1 || r[0].(map[string]any)["start-address"] != "10.10.0.100" {
		t.Errorf("subnet dhcp-range: got %v", subnet["dhcp-range"])
	}

	// A VM on the vnet: not a bridge yet on its node.
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "net0", "virtio,bridge=web")
	upid := e.task("POST", "/nodes/pve/qemu/100/status/start")
	if st := e.wait(upid); st.ExitStatus != "start failed: QEMU exited with code 1" {
		t.Errorf("start on a pending vnet: got %q", st.ExitStatus)
	}
	if log := e.logOf(upid); !strings.Contains(log, "bridge 'web' does not exist") {
		t.Errorf("start log: got %q", log)
	}

	e.sdnApply()
	e.ok(&zones, "GET", "/cluster/sdn/zones", "pending", "1")
	if len(zones) != 1 || zones[0]["state"] != nil || zones[0]["pending"] != nil || zones[0]["bridge"] != "vmbr0" {
		t.Errorf("pending zones after the commit: got %v", zones)
	}
	for _, node := range []string{"pve", "pve2"} {
		ifaces := e.rows("/nodes/"+node+"/network", "type", "any_bridge")
		v := byID(ifaces, "iface")["web"]
		if v == nil || v["type"] != "vnet" || v["comments"] != "web tier" {
			t.Errorf("%s: vnet web in any_bridge: got %v", node, ifaces)
		}
		st := e.rows("/nodes/" + node + "/sdn/zones")
		if len(st) != 1 || st[0]["status"] != "available" {
			t.Errorf("%s: zone status: got %v", node, st)
		}
	}
	content := e.rows("/nodes/pve/sdn/zones/lan/content")
	if len(content) != 1 || content[0]["vnet"] != "web" || content[0]["status"] != "available" {
		t.Errorf("zone content: got %v", content)
	}
	e.ok(nil, "GET", "/nodes/pve/sdn")
	e.ok(nil, "GET", "/nodes/pve/sdn/zones/lan")
	e.ok(nil, "GET", "/cluster/sdn")
	res := e.rows("/cluster/resources")
	if r := byID(res, "id")["network/pve2/zone/lan"]; r == nil || r["status"] != "available" || r["zone-type"] != "vlan" {
		t.Errorf("cluster resources: got %v", res)
	}
	e.run("POST", "/nodes/pve/qemu/100/status/start")

	// A change is pending again: the running config keeps the old value.
	e.ok(nil, "PUT", "/cluster/sdn/vnets/web", "tag", "11", "delete", "alias")
	vnet := e.object("/cluster/sdn/vnets/web", "pending", "1")
	p, _ := vnet["pending"].(map[string]any)
	if vnet["state"] != "changed" || vnet["tag"] != 10.0 || p["tag"] != 11.0 || p["alias"] != "deleted" {
		t.Errorf("pending vnet: got %v", vnet)
	}
	vnet = nil
	e.ok(&vnet, "GET", "/cluster/sdn/vnets/web", "running", "1")
	if vnet["tag"] != 10.0 || vnet["alias"] != "web tier" {
		t.Errorf("running vnet: got %v", vnet)
	}
	// A dropped integer is pending as the text "deleted".
	e.ok(nil, "PUT", "/cluster/sdn/zones/lan", "delete", "mtu")
	zones = nil
	e.ok(&zones, "GET", "/cluster/sdn/zones", "pending", "1")
	if p, _ := zones[0]["pending"].(map[string]any); zones[0]["state"] != "changed" || p["mtu"] != "deleted" || zones[0]["digest"] != nil {
		t.Errorf("zone with mtu deleted: got %v", zones)
	}
	e.ok(nil, "POST", "/cluster/sdn/rollback")
	vnet = nil
	e.ok(&vnet, "GET", "/cluster/sdn/vnets/web", "pending", "1")
	if vnet["state"] != nil || vnet["tag"] != 10.0 {
		t.Errorf("after a rollback: got %v", vnet)
	}
}

// logOf is a task's log on the node its UPID names.
func (e *env) logOf(upid string) string {
	e.t.Helper()
	var rows []struct {
		T string `json:"t"`
	}
	e.ok(&rows, "GET", "/nodes/"+strings.Split(upid, ":")[1]+"/tasks/"+url.PathEscape(upid)+"/log", "limit", "500")
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.T + "\n")
	}
	return b.String()
}

// TestSDNNodeZonesUnfiltered: a node's zone status list is open to all
// and filters nothing (pve-network API2/Network/SDN/Nodes/Zones.pm index
// checks no privilege, whatever its description says).
func TestSDNNodeZonesUnfiltered(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "flat", "type", "simple")
	e.sdnApply()
	auth := e.newToken("net@pve", "tk", false)
	var rows []map[string]any
	if r := e.as(auth, "GET", "/nodes/pve/sdn/zones"); r.Status != 200 {
		t.Fatalf("node zones without privileges: got %d %q", r.Status, r.Message)
	} else if err := json.Unmarshal(r.Data, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["zone"] != "flat" || rows[0]["status"] != "available" {
		t.Errorf("node zones without SDN.Audit: got %v, want the zone flat", rows)
	}
}

// TestSDNEvpnMacPrefix: an EVPN zone's anycast MAC is drawn with the
// datacenter's mac_prefix (Zones/EvpnPlugin.pm on_update_hook:
// random_ether_addr($dc->{mac_prefix})), BC:24:11 when unset.
func TestSDNEvpnMacPrefix(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/sdn/controllers", "controller", "ev", "type", "evpn", "asn", "65000", "peers", "10.0.0.1")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "e1", "type", "evpn", "controller", "ev", "vrf-vxlan", "100")
	if mac, _ := e.object("/cluster/sdn/zones/e1")["mac"].(string); !strings.HasPrefix(mac, "BC:24:11:") || len(mac) != 17 {
		t.Errorf("evpn zone mac without a mac_prefix: got %q", mac)
	}
	e.ok(nil, "PUT", "/cluster/options", "mac_prefix", "aa:bb")
	e.ok(nil, "POST", "/cluster/sdn/zones", "zone", "e2", "type", "evpn", "controller", "ev", "vrf-vxlan", "200")
	if mac, _ := e.object("/cluster/sdn/zones/e2")["mac"].(string); !strings.HasPrefix(mac, "AA:BB:") || len(mac) != 17 {
		t.Errorf("evpn zone mac with mac_prefix aa:bb: got %q", mac)
	}
}

// TestGuestMacPrefix: a NIC written without a MAC gets one with the
// datacenter's mac_prefix (qemu-server PVE/QemuServer/Network.pm
// parse_net, pve-container src/PVE/LXC/Config.pm parse_lxc_network:
// random_ether_addr($dc->{mac_prefix})).
func TestGuestMacPrefix(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "PUT", "/cluster/options", "mac_prefix", "aa:bb")
	e.wait(e.task("POST", "/nodes/pve/qemu", "vmid", "321", "net0", "virtio,bridge=vmbr0"))
	if net0, _ := e.object("/nodes/pve/qemu/321/config")["net0"].(string); !strings.HasPrefix(net0, "virtio=AA:BB:") {
		t.Errorf("net0 with mac_prefix aa:bb: got %q", net0)
	}
}

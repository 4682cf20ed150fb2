package pvesim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func newNetEnv(t *testing.T) *env {
	t.Helper()
	return startEnv(t, simtest.Options{Conformance: true})
}

func (e *env) iface(name string) map[string]any {
	e.t.Helper()
	return e.object("/nodes/pve/network/" + name)
}

func (e *env) changes() string {
	e.t.Helper()
	r := e.ok(nil, "GET", "/nodes/pve/network")
	if r.Changes == nil {
		return ""
	}
	return *r.Changes
}

// pve-common Network/Interfaces.pm writes "bridge-vlan-aware yes" for any
// defined value: 0 turns VLAN awareness on, only delete turns it off.
func TestBridgeVlanAwareZeroTurnsItOn(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "bridge_vlan_aware", "0")
	if m := e.iface("vmbr1"); m["bridge_vlan_aware"] != 1.0 || m["bridge_vids"] != "2-4094" {
		t.Errorf("got vlan-aware %v vids %v after bridge_vlan_aware=0, want 1 and 2-4094", m["bridge_vlan_aware"], m["bridge_vids"])
	}
	if ch := e.changes(); !strings.Contains(ch, "+\tbridge-vlan-aware yes\n+\tbridge-vids 2-4094\n") {
		t.Errorf("got changes %q, want the VLAN-aware stanza", ch)
	}
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr1", "type", "bridge", "bridge_vlan_aware", "0")
	if m := e.iface("vmbr1"); m["bridge_vlan_aware"] != 1.0 {
		t.Errorf("got vlan-aware %v after PUT bridge_vlan_aware=0, want still 1", m["bridge_vlan_aware"])
	}
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr1", "type", "bridge", "delete", "bridge_vlan_aware")
	if m := e.iface("vmbr1"); m["bridge_vlan_aware"] != nil || m["bridge_vids"] != nil {
		t.Errorf("got vlan-aware %v vids %v after delete, want neither", m["bridge_vlan_aware"], m["bridge_vids"])
	}
	// A VLAN list is only written for a VLAN-aware bridge.
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr1", "type", "bridge", "bridge_vids", "10 20")
	if m := e.iface("vmbr1"); m["bridge_vids"] != nil {
		t.Errorf("got vids %v on a bridge that is not VLAN-aware, want none", m["bridge_vids"])
	}
	// autostart=0 is written as no "auto" line: off.
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr1", "type", "bridge", "autostart", "0")
	if m := e.iface("vmbr1"); m["autostart"] != nil {
		t.Errorf("got autostart %v after autostart=0, want none", m["autostart"])
	}
}

// pve-manager Network.pm check_duplicate_gateway(6).
func TestSecondDefaultGateway(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr0", "type", "bridge", "cidr", "192.168.100.2/24", "gateway", "192.168.100.1",
		"cidr6", "fd00::2/64", "gateway6", "fd00::1")
	tests := []struct {
		name, method, path string
		kv                 []string
		param, msg         string
	}{
		{"create with gateway", "POST", "/nodes/pve/network", []string{"iface", "vmbr1", "type", "bridge", "cidr", "10.0.0.2/24",
			"gateway", "10.0.0.1"}, "gateway", "Default gateway already exists on interface 'vmbr0'."},
		{"create with gateway6", "POST", "/nodes/pve/network", []string{"iface", "vmbr1", "type", "bridge", "cidr6", "fd01::2/64",
			"gateway6", "fd01::1"}, "gateway6", "Default ipv6 gateway already exists on interface 'vmbr0'."},
		{"update with gateway", "PUT", "/nodes/pve/network/eno2", []string{"type", "eth", "cidr", "10.0.0.2/24", "gateway", "10.0.0.1"},
			"gateway", "Default gateway already exists on interface 'vmbr0'."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, tc.kv...)
			if r.Status != 400 || r.Errors[tc.param] != tc.msg {
				t.Errorf("got %d %q %v, want 400 errors.%s %q", r.Status, r.Message, r.Errors, tc.param, tc.msg)
			}
		})
	}
	// The holder may restate its own gateway; once it drops it, another may take it.
	e.ok(nil, "PUT", "/nodes/pve/network/vmbr0", "type", "bridge", "cidr", "192.168.100.2/24", "gateway", "192.168.100.1",
		"cidr6", "fd00::2/64", "delete", "gateway6")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "cidr6", "fd01::2/64", "gateway6", "fd01::1")
}

// The writer's options per bond mode, and what it reads back.
func TestBondOptionsFollowTheMode(t *testing.T) {
	tests := []struct {
		mode          string
		xmit, primary any
	}{
		{"active-backup", nil, "eno3"},
		{"balance-xor", "layer3+4", nil},
		{"802.3ad", "layer3+4", nil},
		{"balance-rr", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			e := newNetEnv(t)
			e.ok(nil, "POST", "/nodes/pve/network", "iface", "bond0", "type", "bond", "slaves", "eno4 eno3", "bond_mode", tc.mode,
				"bond_xmit_hash_policy", "layer3+4", "bond-primary", "eno3", "mtu", "9000")
			m := e.iface("bond0")
			got := map[string]any{"xmit": m["bond_xmit_hash_policy"], "primary": m["bond-primary"], "slaves": m["slaves"],
				"miimon": m["bond_miimon"], "mtu": m["mtu"]}
			want := map[string]any{"xmit": tc.xmit, "primary": tc.primary, "slaves": "eno3 eno4", "miimon": "100", "mtu": "9000"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("bond0 (-want +got)\n%s", diff)
			}
			if slave := e.iface("eno3"); slave["autostart"] != 1.0 {
				t.Errorf("got slave autostart %v, want 1: the writer brings slaves up", slave["autostart"])
			}
		})
	}
}

// The writer's checks (pve-common Network/Interfaces.pm
// __write_etc_network_interfaces), and create_network's Open vSwitch
// check: a plain 500, and nothing staged.
func TestNetworkWriterChecks(t *testing.T) {
	tests := []struct {
		name, method, path string
		kv                 []string
		msg                string
	}{
		{"bond slave missing", "POST", "/nodes/pve/network", []string{"iface", "bond0", "type", "bond", "slaves", "eno9"},
			"bond 'bond0' - wrong interface type on slave 'eno9' ('' != 'eth or bond')"},
		{"bond slaves split on blanks only", "POST", "/nodes/pve/network", []string{"iface", "bond0", "type", "bond", "slaves", "eno3,eno4"},
			"bond 'bond0' - wrong interface type on slave 'eno3,eno4' ('' != 'eth or bond')"},
		{"bond slave a bridge", "POST", "/nodes/pve/network", []string{"iface", "bond0", "type", "bond", "slaves", "vmbr0"},
			"bond 'bond0' - wrong interface type on slave 'vmbr0' ('bridge' != 'eth or bond')"},
		{"bond-primary not a slave", "POST", "/nodes/pve/network", []string{"iface", "bond0", "type", "bond", "slaves", "eno3",
			"bond_mode", "active-backup", "bond-primary", "eno4"}, "bond 'bond0' - bond-primary interface is not a slave"},
		{"vlan parent missing", "POST", "/nodes/pve/network", []string{"iface", "eno9.10", "type", "vlan"},
			"vlan 'eno9.10' - unable to find parent 'eno9'"},
		{"vlan without raw device", "POST", "/nodes/pve/network", []string{"iface", "vlan10", "type", "vlan"},
			"missing vlan-raw-device option"},
		{"custom vlan without id", "POST", "/nodes/pve/network", []string{"iface", "mgmt", "type", "vlan", "vlan-raw-device", "eno2"},
			"missing vlan-id option"},
		{"vlan above its parent's mtu", "POST", "/nodes/pve/network", []string{"iface", "eno2.10", "type", "vlan", "mtu", "9000"},
			"interface 'eno2' - mtu 1500 is lower than 'eno2.10' - mtu 9000"},
		{"bridge port missing", "POST", "/nodes/pve/network", []string{"iface", "vmbr1", "type", "bridge", "bridge_ports", "eno9"},
			"bridge 'vmbr1' - unable to find bridge port 'eno9'"},
		{"bridge above its port's mtu", "POST", "/nodes/pve/network", []string{"iface", "vmbr1", "type", "bridge", "bridge_ports", "eno2",
			"mtu", "9000"}, "interface 'eno2' - mtu 1500 is lower than 'vmbr1' - mtu 9000"},
		{"bridge port with an address", "PUT", "/nodes/pve/network/eno1", []string{"type", "eth", "cidr", "10.0.0.5/24"},
			"iface eno1 - ip address can't be set on interface if bridged in vmbr0"},
		{"deleting a bridge port", "DELETE", "/nodes/pve/network/eno1", nil, "bridge 'vmbr0' - unable to find bridge port 'eno1'"},
		{"no Open vSwitch on the node", "POST", "/nodes/pve/network", []string{"iface", "vmbr9", "type", "OVSBridge"},
			"Open VSwitch is not installed (need package 'openvswitch-switch')"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newNetEnv(t)
			r := e.call(tc.method, tc.path, tc.kv...)
			if r.Status != 500 || r.Message != tc.msg {
				t.Errorf("got %d %q %v, want 500 %q", r.Status, r.Message, r.Errors, tc.msg)
			}
			if ch := e.changes(); ch != "" {
				t.Errorf("got staged changes %q after a refused write, want none", ch)
			}
		})
	}
	t.Run("vlan port of a bridge made on the fly", func(t *testing.T) {
		e := newNetEnv(t)
		e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "bridge_ports", "eno2.30")
	})
}

// What the reader makes of the written file.
func TestNetworkReadBack(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "mtu", "9000")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "eno2.50", "type", "vlan", "address", "10.5.0.2", "netmask", "255.255.255.0",
		"mtu", "1500")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vlan60", "type", "vlan", "vlan-raw-device", "eno2")
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "mgmt", "type", "vlan", "vlan-raw-device", "eno2", "vlan-id", "70",
		"comments", "line one  \nline two\n\n")
	pick := func(m map[string]any, keys ...string) map[string]any {
		out := map[string]any{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	keys := []string{"type", "cidr", "address", "netmask", "mtu", "vlan-id", "vlan-raw-device", "families", "comments", "exists", "method6"}
	tests := []struct {
		iface string
		want  map[string]any
	}{
		{"eno2.50", map[string]any{"type": "vlan", "cidr": "10.5.0.2/24", "address": "10.5.0.2", "netmask": "24", "mtu": "1500",
			"vlan-id": "50", "vlan-raw-device": "eno2", "families": []any{"inet"}, "exists": 1.0, "method6": "manual"}},
		{"vlan60", map[string]any{"type": "vlan", "vlan-id": "60", "vlan-raw-device": "eno2", "families": []any{"inet"},
			"exists": 1.0, "method6": "manual"}},
		{"mgmt", map[string]any{"type": "vlan", "vlan-id": "70", "vlan-raw-device": "eno2", "families": []any{"inet"},
			"comments": "line one\nline two\n", "exists": 1.0, "method6": "manual"}},
	}
	for _, tc := range tests {
		t.Run(tc.iface, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pick(e.iface(tc.iface), keys...)); diff != "" {
				t.Errorf("%s (-want +got)\n%s", tc.iface, diff)
			}
		})
	}
	if ch := e.changes(); strings.Contains(ch, "inet6") {
		t.Errorf("got an inet6 stanza without address6:\n%s", ch)
	}

	// An IPv6 address is a stanza of its own; a PUT without it drops it.
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "vmbr1", "type", "bridge", "cidr6", "fd00::2/64", "comments", "v6 only")
	m := e.iface("vmbr1")
	if diff := cmp.Diff(map[string]any{"families": []any{"inet6"}, "cidr6": "fd00::2/64", "netmask6": "64", "method": "manual",
		"method6": "static", "comments": "v6 only\n"}, pick(m, "families", "cidr6", "netmask6", "method", "method6", "comments")); diff != "" {
		t.Errorf("vmbr1 (-want +got)\n%s", diff)
	}
	if ch := e.changes(); !strings.Contains(ch, "+iface vmbr1 inet6 static\n+\taddress fd00::2/64\n+\tbridge-ports none\n") {
		t.Errorf("got changes %q, want vmbr1's inet6 stanza with the bridge options", ch)
	}
	// A PUT without the IPv6 address drops it; the repeated values of the
	// delete list are one list (pve-common RESTHandler.pm).
	r := e.raw("PUT", "/nodes/pve/network/vmbr1", url.Values{"type": {"bridge"}, "cidr": {"10.9.0.1/24"}, "mtu": {"1500"},
		"delete": {"comments", "mtu"}}, "PVEAPIToken="+testToken+"="+testSecret)
	if r.Status != 200 {
		t.Fatalf("PUT with a repeated delete: got %d %q %v, want 200", r.Status, r.Message, r.Errors)
	}
	m = e.iface("vmbr1")
	if diff := cmp.Diff(map[string]any{"families": []any{"inet"}, "cidr": "10.9.0.1/24", "method": "static", "method6": "manual", "mtu": "1500"},
		pick(m, "families", "cidr", "cidr6", "method", "method6", "comments", "mtu")); diff != "" {
		t.Errorf("vmbr1 after a PUT without cidr6 (-want +got)\n%s", diff)
	}
}

// A JSON array for a list parameter is one list, as repeated form values.
func TestJSONArrayForAListParameter(t *testing.T) {
	e := newNetEnv(t)
	e.ok(nil, "PUT", "/nodes/pve/network/eno2", "type", "eth", "mtu", "9000", "comments", "x")
	body := `{"type":"eth","delete":["comments","mtu"]}`
	req, err := http.NewRequest("PUT", e.URL+"/api2/json/nodes/pve/network/eno2", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "PVEAPIToken="+testToken+"="+testSecret)
	resp, err := e.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT with a JSON delete list: got %d, want 200", resp.StatusCode)
	}
	if m := e.iface("eno2"); m["mtu"] != nil || m["comments"] != nil {
		t.Errorf("got eno2 %v, want mtu and comments deleted", m)
	}
}

// pve-manager Network.pm reload_network_config moves interfaces.new into
// place before `ifreload -a`: a reload that fails on a slave the host
// lacks leaves the new file running and nothing staged, so DELETE reverts
// nothing; the log shows ifupdown2's error line.
func TestReloadFailsOnMissingSlave(t *testing.T) {
	e := newNetEnv(t)
	// A stanza for a NIC the host does not have (renamed or removed):
	// typed eth by its name, so the writer takes it as a slave.
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "eno9", "type", "eth")
	if m := e.iface("eno9"); m["type"] != "eth" || m["exists"] != nil {
		t.Fatalf("eno9: got type %v exists %v, want eth without exists", m["type"], m["exists"])
	}
	e.ok(nil, "POST", "/nodes/pve/network", "iface", "bond0", "type", "bond", "slaves", "eno3 eno9", "autostart", "1")
	st := e.wait(e.task("PUT", "/nodes/pve/network"))
	if want := "command 'ifreload -a' failed: exit code 1"; st.ExitStatus != want {
		t.Fatalf("reload: got exit status %q, want %q", st.ExitStatus, want)
	}
	log := e.taskLog(st.UPID)
	if want := []string{"bond0 : error: bond0: skipping slave eno9, does not exist ", "TASK ERROR: command 'ifreload -a' failed: exit code 1"}; !cmp.Equal(log, want) {
		t.Errorf("task log: got %q, want %q", log, want)
	}
	if ch := e.changes(); ch != "" {
		t.Errorf("after the failed reload: got staged changes %q, want none (the file was moved before ifreload)", ch)
	}
	if m := e.iface("bond0"); m["slaves"] != "eno3 eno9" {
		t.Errorf("bond0 after the failed reload: got slaves %v, want the new file in place", m["slaves"])
	}
	e.ok(nil, "DELETE", "/nodes/pve/network")
	if m := e.iface("bond0"); m["type"] != "bond" {
		t.Errorf("bond0 after DELETE: got %v, want it still there (nothing was staged)", m)
	}
	// Without the missing slave the reload goes through.
	e.ok(nil, "PUT", "/nodes/pve/network/bond0", "type", "bond", "slaves", "eno3", "autostart", "1")
	e.run("PUT", "/nodes/pve/network")
}

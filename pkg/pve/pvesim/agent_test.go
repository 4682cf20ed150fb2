package pvesim_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestAgentNetworkInterfaces: the guest agent answers only for a running
// VM with an agent, with PVE's messages otherwise (qemu-server
// QemuServer/Agent.pm assert_agent_available), and hands out DHCP leases
// from the range, one per VM, stable while it runs.
func TestAgentNetworkInterfaces(t *testing.T) {
	e := newEnv(t, pvesim.Options{DHCPRange: netip.MustParsePrefix("127.0.77.0/30"), TaskDuration: time.Millisecond})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "memory", "512", "net0", "virtio,bridge=vmbr0")
	e.run("POST", "/nodes/pve/qemu", "vmid", "101", "memory", "512", "net0", "virtio,bridge=vmbr0", "agent", "0")
	e.run("POST", "/nodes/pve/qemu", "vmid", "102", "memory", "512", "net0", "virtio,bridge=vmbr0", "agent", "enabled=1")
	e.run("POST", "/nodes/pve/qemu", "vmid", "103", "memory", "512", "net0", "virtio,bridge=vmbr0", "agent", "1")
	e.run("POST", "/nodes/pve/qemu", "vmid", "104", "memory", "512", "net0", "virtio,bridge=vmbr0", "agent", "1")
	get := func(id string) (int, string, string) {
		var out agentIfaces
		r := e.call("GET", "/nodes/pve/qemu/"+id+"/agent/network-get-interfaces")
		if r.Status != 200 {
			return r.Status, r.Message, ""
		}
		if err := jsonUnmarshal(r.Data, &out); err != nil || len(out.Result) != 2 {
			t.Fatalf("agent of %s: %s", id, r.Data)
		}
		if len(out.Result[1].IPs) == 0 {
			return 200, "", "none"
		}
		return 200, "", out.Result[1].IPs[0].IP
	}
	for _, tc := range []struct{ id, msg string }{
		{"100", "No QEMU guest agent configured"},
		{"102", "VM 102 is not running"},
	} {
		if st, msg, _ := get(tc.id); st != 500 || msg != tc.msg {
			t.Errorf("agent of stopped %s: %d %q, want 500 %q", tc.id, st, msg, tc.msg)
		}
	}
	for _, id := range []string{"101", "102", "103", "104"} {
		e.run("POST", "/nodes/pve/qemu/"+id+"/status/start")
	}
	time.Sleep(5 * time.Millisecond) // the agent starts a task duration after the boot
	if st, msg, _ := get("101"); st != 500 || msg != "QEMU guest agent is not running" {
		t.Errorf("agent: 0: %d %q, want 500 QEMU guest agent is not running", st, msg)
	}
	_, _, a := get("102")
	_, _, b := get("103")
	_, _, a2 := get("102")
	if a != "127.0.77.1" || b != "127.0.77.2" || a2 != a {
		t.Errorf("leases %s %s %s, want 127.0.77.1, .2 and the first again", a, b, a2)
	}
	if st, _, ip := get("104"); st != 200 || ip != "none" {
		t.Errorf("no lease left: %d %s, want eth0 without an address", st, ip)
	}
	// A static address wins over DHCP.
	e.ok(nil, "PUT", "/nodes/pve/qemu/104/config", "ipconfig0", "ip=127.0.0.9/8")
	if _, _, ip := get("104"); ip != "127.0.0.9" {
		t.Errorf("static address: got %s", ip)
	}
}

// TestDescriptionLimit: PVE takes a description of up to 8192 characters
// (qemu-server QemuServer.pm maxLength => 1024 * 8, counted in characters
// of the decoded UTF-8) and refuses a longer one per parameter.
func TestDescriptionLimit(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "memory", "512")
	ok := strings.Repeat("é", 8192)
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/config", "description", ok)
	r := e.call("PUT", "/nodes/pve/qemu/100/config", "description", ok+"x")
	if r.Status != 400 || r.Errors["description"] != "value may only be 8192 characters long" {
		t.Errorf("8193 characters: %d %s %s, want 400 naming the limit", r.Status, r.Message, r.Errors)
	}
}

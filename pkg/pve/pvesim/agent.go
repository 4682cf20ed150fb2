package pvesim

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// DefaultDHCPRange is where the guest agent's DHCP leases come from when
// Options.DHCPRange is not set: loopback, so that a test that connects
// to a simulated guest never sends a packet off the machine.
var DefaultDHCPRange = netip.MustParsePrefix("127.0.100.0/24")

// agentIfaces answers GET …/agent/network-get-interfaces as
// qemu-server does (src/PVE/API2/Qemu/Agent.pm register_command, through
// src/PVE/QemuServer/Agent.pm assert_agent_available): "No QEMU guest
// agent configured" when the config has no agent key at all, "VM N is not
// running", then "QEMU guest agent is not running" (also for agent: 0,
// whose VM has no agent channel) — each a 500 (a plain die). The answer
// is qemu-guest-agent's guest-network-get-interfaces wrapped in
// {"result": …}: lo, and eth0 with ipconfig0's static address, else a
// DHCP lease from Options.DHCPRange.
func (s *Server) agentIfaces(k *guestKind, q *request) (any, error) {
	v, err := s.guestOf(k, q)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Conf["agent"]; !ok {
		return nil, fail(http.StatusInternalServerError, "No QEMU guest agent configured")
	}
	if !v.Running {
		return nil, fail(http.StatusInternalServerError, "VM %d is not running", v.VMID)
	}
	if !agentEnabled(v.Conf) || time.Now().Before(v.agentAt) {
		return nil, fail(http.StatusInternalServerError, "QEMU guest agent is not running")
	}
	var addrs []any
	ip, prefix := "", s.opts.DHCPRange.Bits()
	if ipc, ok := schema.PropValue(props(v.Conf["ipconfig0"]), "ip"); ok && ipc != "dhcp" {
		addr, bits, _ := strings.Cut(ipc, "/")
		ip = addr
		if b, err := strconv.Atoi(bits); err == nil {
			prefix = b
		}
	} else {
		// No lease left: the interface has no IPv4 address, as a DHCP
		// client without a lease.
		if a, err := s.lease(v.VMID); err == nil {
			ip = a.String()
		}
	}
	if ip != "" {
		addrs = append(addrs, map[string]any{"ip-address": ip, "ip-address-type": "ipv4", "prefix": prefix})
	}
	_, mac := netModelMAC(v.Conf["net0"])
	return map[string]any{"result": []any{
		map[string]any{"name": "lo", "hardware-address": "00:00:00:00:00:00",
			"ip-addresses": []any{map[string]any{"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8}}},
		map[string]any{"name": "eth0", "hardware-address": strings.ToLower(mac),
			"ip-addresses": addrs},
	}}, nil
}

// lease is vmid's DHCP lease: the one it has, else the first address of
// the range no other guest holds (the network and broadcast addresses
// skipped in ranges of 4 or more). A guest keeps its lease while the
// simulator runs; a full range leaves the guest without an address, as
// a DHCP client without a lease has none.
// The caller holds s.mu.
func (s *Server) lease(vmid int) (netip.Addr, error) {
	if a, ok := s.leases[vmid]; ok {
		return a, nil
	}
	ensureMap(&s.leases)
	held := map[netip.Addr]bool{}
	for id, a := range s.leases {
		if _, ok := s.st.VMs[id]; ok {
			held[a] = true
		} else {
			delete(s.leases, id) // the guest is gone: its lease is free
		}
	}
	r := s.opts.DHCPRange
	first, size := r.Addr(), uint64(1)<<(32-r.Bits())
	skipEnds := size >= 4
	a := first
	for i := uint64(0); i < size; i, a = i+1, a.Next() {
		if skipEnds && (i == 0 || i == size-1) {
			continue
		}
		if !held[a] {
			s.leases[vmid] = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("DHCP range %s is exhausted", r)
}

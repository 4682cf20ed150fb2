package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Lookup says where a guest's provisioning address comes from, in order:
// the static IP, else the A record of <name>.<DNSDomain> asked of
// DNSServers, else the QEMU guest agent.
type Lookup struct {
	// IP is the guest's static `ip` ("10.0.0.5" or "10.0.0.5/24").
	IP string
	// DNSDomain and DNSServers are the connection's: each server
	// ("host[:port]", an IP; port 53 by default) is asked directly over UDP,
	// never through the system resolver.
	DNSDomain  string
	DNSServers []string
	// Agent asks the guest agent for the guest's interfaces (the planner
	// calls PVE's …/agent/network-get-interfaces); nil when there is none.
	// Its errors are retried until the deadline: the agent starts late.
	Agent func(ctx context.Context) ([]AgentInterface, error)
	// AllowLoopback accepts loopback addresses from the agent, for the
	// simulator, whose leases are 127.x; the "lo" interface stays skipped.
	AllowLoopback bool
}

// AgentInterface is one interface of the guest agent's
// network-get-interfaces answer (qemu-guest-agent's GuestNetworkInterface).
type AgentInterface struct {
	Name         string           `json:"name"`
	HardwareAddr string           `json:"hardware-address,omitempty"`
	Addresses    []AgentIPAddress `json:"ip-addresses"`
}

// AgentIPAddress is one address of an AgentInterface.
type AgentIPAddress struct {
	Type    string `json:"ip-address-type"` // "ipv4" or "ipv6"
	Address string `json:"ip-address"`
	Prefix  int    `json:"prefix"`
}

// ParseAgentInterfaces decodes the data of PVE's
// GET …/agent/network-get-interfaces, {"result":[…]}; a bare list is
// accepted too.
func ParseAgentInterfaces(data []byte) ([]AgentInterface, error) {
	var wrapped struct {
		Result []AgentInterface `json:"result"`
	}
	if err := json.Unmarshal(data, &wrapped); err == nil && wrapped.Result != nil {
		return wrapped.Result, nil
	}
	var list []AgentInterface
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("guest agent network-get-interfaces: %w", err)
	}
	return list, nil
}

// AgentIPv4 picks the provisioning address from the guest agent's answer:
// the first global unicast IPv4 address of an interface other than the
// loopback one, in the agent's order. allowLoopback also accepts 127.x
// addresses (on interfaces other than "lo"), as the simulator's leases are.
func AgentIPv4(ifaces []AgentInterface, allowLoopback bool) (netip.Addr, bool) {
	for _, ifc := range ifaces {
		if ifc.Name == "lo" || strings.HasPrefix(strings.ToLower(ifc.Name), "loopback") {
			continue
		}
		for _, a := range ifc.Addresses {
			if a.Type != "" && a.Type != "ipv4" {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil || !ip.Is4() {
				continue
			}
			if ip.IsGlobalUnicast() || (allowLoopback && ip.IsLoopback()) {
				return ip, true
			}
		}
	}
	return netip.Addr{}, false
}

// Resolve finds the address to provision vm at, waiting (within
// o.Timeout) for a DNS record or the guest agent as needed.
func Resolve(ctx context.Context, vm string, l Lookup, o Options) (netip.Addr, error) {
	return resolve(ctx, newWaiter(vm, &o), vm, l)
}

func resolve(ctx context.Context, w *waiter, vm string, l Lookup) (netip.Addr, error) {
	if ip := strings.TrimSpace(l.IP); ip != "" && ip != "dhcp" {
		ip, _, _ = strings.Cut(ip, "/")
		a, err := netip.ParseAddr(ip)
		if err != nil || !a.Is4() {
			return netip.Addr{}, fmt.Errorf("vm %s: ip %q: want an IPv4 address", vm, l.IP)
		}
		return a, nil
	}
	useDNS := l.DNSDomain != "" && len(l.DNSServers) > 0
	if !useDNS && l.Agent == nil {
		return netip.Addr{}, fmt.Errorf("vm %s: no address to provision at: set ip, or dnsDomain and dnsServers on the connection, or enable the QEMU guest agent", vm)
	}
	var found netip.Addr
	if useDNS {
		fqdn := vm + "." + strings.TrimSuffix(strings.TrimPrefix(l.DNSDomain, "."), ".")
		status := fmt.Sprintf("the A record of %s at %s", fqdn, strings.Join(l.DNSServers, ", "))
		askDNS := func(ctx context.Context) (bool, string, error) {
			var errs []error
			for _, srv := range l.DNSServers {
				a, err := lookupA(ctx, srv, fqdn)
				if err == nil {
					found = a
					return true, "", nil
				}
				errs = append(errs, fmt.Errorf("%s: %w", srv, err))
			}
			return false, status, fmt.Errorf("%s: %w", fqdn, errors.Join(errs...))
		}
		if l.Agent != nil {
			// One round only: the guest agent is the fallback, and a
			// record that is not there now is not waited for.
			if done, _, _ := askDNS(ctx); done {
				return found, nil
			}
			if ctx.Err() != nil {
				return netip.Addr{}, ctx.Err()
			}
		} else {
			if err := w.poll(ctx, "", askDNS); err != nil {
				return netip.Addr{}, err
			}
			return found, nil
		}
	}
	err := w.poll(ctx, "", func(ctx context.Context) (bool, string, error) {
		const status = "an address from the QEMU guest agent"
		ifaces, err := l.Agent(ctx)
		if err != nil {
			return false, status, fmt.Errorf("guest agent: %w", err)
		}
		if a, ok := AgentIPv4(ifaces, l.AllowLoopback); ok {
			found = a
			return true, "", nil
		}
		return false, status, errors.New("guest agent: no global IPv4 address on a non-loopback interface yet")
	})
	return found, err
}

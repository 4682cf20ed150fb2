package planner

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// The lockout guard (issue 20 item 4): a plan that leaves the cluster's
// or a node's firewall enabled with an inbound DROP or REJECT policy and
// no rule that keeps PVE's API (8006) and SSH (22) reachable from the
// address pvectl connects from warns in the plan, and apply refuses it
// unless --allow-lockout. PVE's own `management` IP set counts: the host
// firewall accepts the API and SSH from it (pve-firewall Firewall.pm
// ruleset_generate_host_rules: "ACCEPT … -m set --match-set PVEFW-management").

// lockoutPorts are the ports pvectl and its operator need.
var lockoutPorts = []int{8006, 22}

// clientAddr is the local address the host of base is reached from. A
// UDP socket's connect picks the route and sends nothing; "" when it
// cannot be known.
func clientAddr(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "8006"
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil {
		return "" // a name: resolving it is not the guard's business
	}
	conn, err := net.Dial("udp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return ""
	}
	defer conn.Close()
	if a, ok := conn.LocalAddr().(*net.UDPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// lockoutRisk says how the firewall the spec leaves would cut the client
// off ("" when it would not, or cannot be told).
func lockoutRisk(st *fwState, w *spec.FirewallWire) string {
	if w.Scope != spec.FirewallCluster && w.Scope != spec.FirewallNode {
		return ""
	}
	opt := func(k, def string) string {
		if v, ok := w.Options[k]; ok {
			return v
		}
		if v, ok := st.Options[k]; ok {
			return v
		}
		return def
	}
	if opt("enable", "0") == "0" {
		return ""
	}
	// PVE's default inbound policy is DROP (Firewall.pm: policy_in).
	if p := opt("policy_in", "DROP"); p != "DROP" && p != "REJECT" {
		return ""
	}
	client, err := netip.ParseAddr(st.Client)
	if err != nil {
		return ""
	}
	sets := st.IPSets
	if w.IPSets != nil {
		sets = w.IPSets
	}
	if inSet(sets["management"], client) {
		return ""
	}
	var open []int
	for _, port := range lockoutPorts {
		if !portKept(w.Rules, sets, client, port) {
			open = append(open, port)
		}
	}
	if len(open) == 0 {
		return ""
	}
	var ports []string
	for _, p := range open {
		ports = append(ports, strconv.Itoa(p))
	}
	return fmt.Sprintf("the firewall is enabled with inbound policy %s and no rule accepts tcp port %s from %s, the address pvectl connects from (nor is it in the management IP set): applying may lock pvectl and you out; add such a rule, or apply with --allow-lockout",
		opt("policy_in", "DROP"), strings.Join(ports, " and "), client)
}

// portKept reports whether an enabled inbound ACCEPT rule, before any
// DROP or REJECT that would catch it first, accepts tcp port from client.
func portKept(rules []map[string]string, sets map[string][]map[string]string, client netip.Addr, port int) bool {
	for _, r := range rules {
		if r["type"] != "in" || r["enable"] == "0" {
			continue
		}
		if !sourceHas(r["source"], sets, client) || !portMatches(r, port) {
			continue
		}
		switch r["action"] {
		case "ACCEPT":
			return true
		case "DROP", "REJECT":
			return false
		}
	}
	return false
}

func portMatches(r map[string]string, port int) bool {
	if m := r["macro"]; m != "" {
		return (m == "SSH" && port == 22)
	}
	if p := r["proto"]; p != "" && p != "tcp" && p != "6" {
		return false
	}
	d := r["dport"]
	if d == "" {
		return true
	}
	for _, item := range strings.Split(d, ",") {
		lo, hi, isRange := strings.Cut(item, ":")
		a, errA := strconv.Atoi(lo)
		b := a
		if isRange {
			var errB error
			if b, errB = strconv.Atoi(hi); errB != nil {
				continue
			}
		}
		if errA == nil && a <= port && port <= b {
			return true
		}
	}
	return false
}

// sourceHas reports whether a rule's source takes client: no source, a
// matching address or CIDR, or one of the scope's IP sets (+name) that
// holds it. Aliases and other scopes' sets are not followed: the guard
// errs towards warning.
func sourceHas(src string, sets map[string][]map[string]string, client netip.Addr) bool {
	if src == "" {
		return true
	}
	for _, item := range strings.Split(src, ",") {
		if name, ok := strings.CutPrefix(item, "+"); ok {
			name = strings.TrimPrefix(name, "dc/")
			if inSet(sets[name], client) {
				return true
			}
			continue
		}
		if cidrHas(item, client) {
			return true
		}
	}
	return false
}

func inSet(entries []map[string]string, client netip.Addr) bool {
	for _, e := range entries {
		if e["nomatch"] != "1" && cidrHas(e["cidr"], client) {
			return true
		}
	}
	return false
}

func cidrHas(s string, client netip.Addr) bool {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Contains(client)
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a == client
	}
	return false
}

func (firewallKind) Lockout(c *engine.Change) string {
	if st, ok := c.State.(*fwState); ok && c.Action != engine.NoOp && c.Action != engine.Delete {
		return st.Lockout
	}
	return ""
}

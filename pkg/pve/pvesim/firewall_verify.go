package pvesim

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Rule verification as pve-firewall src/PVE/Firewall.pm has it
// (verify_rule, parse_address_list, parse_port_name_number_or_range,
// $apply_macro, the pve-fw-* formats).

const (
	fwMaxIPSetName = 64 // $max_ipset_name_length
	fwMaxAliasName = 64 // $max_alias_name_length
	fwMaxGroupName = 18 // $max_group_name_length
)

var (
	// $security_group_name_pattern, $ipset_name_pattern, $ip_alias_pattern.
	fwNameRE        = lazyre.New(`^[A-Za-z][A-Za-z0-9\-_]+$`)
	fwAliasRefRE    = lazyre.New(`^(dc/|guest/)?([A-Za-z][A-Za-z0-9\-_]+)$`)
	fwIPSetRefRE    = lazyre.New(`^\+(guest/|dc/|sdn/)?([A-Za-z][A-Za-z0-9\-_]+)$`)
	fwHeaderRE      = lazyre.New(`(?i)^\[(group|ipset)\s+(\S+)\]\s*(?:#\s*(.*?)\s*)?$`)
	fwMacroActionRE = lazyre.New(`^(\S+)\((ACCEPT|DROP|REJECT)\)$`)
	fwZeroPrefixRE  = lazyre.New(`/0+$`)
	fwPortRangeRE   = lazyre.New(`^([0-9]+):([0-9]+)$`)
	fwPortRE        = lazyre.New(`^[0-9]+$`)
	fwIfaceRE       = lazyre.New(`(?i)^[a-z][a-z0-9_]{1,20}([:.]\d+)?$`)
	fwGuestIfaceRE  = lazyre.New(`^net(\d+)$`)
)

// fwMacro is one macro of Firewall.pm's tables.
type fwMacro struct {
	ipversion int
	rules     []fwMacroRule
	v6        []fwMacroRule
}

// fwMacroRule is a macro rule's fixed values (its action is the rule's).
type fwMacroRule struct{ proto, dport, sport string }

// fwProtocolsWithPorts is $PROTOCOLS_WITH_PORTS.
var fwProtocolsWithPorts = setOf("udp", "17", "udplite", "136", "tcp", "6", "dccp", "33", "sctp", "132")

// fwRuleEnvTypes is $rule_env_direction_lookup.
var fwRuleEnvTypes = map[string][]string{
	"ct": {"in", "out", "group"}, "vm": {"in", "out", "group"},
	"group": {"in", "out", "forward"}, "cluster": {"in", "out", "forward", "group"},
	"host": {"in", "out", "forward", "group"}, "vnet": {"forward", "group"},
}

// fwMacroName is $pve_fw_preferred_macro_names: a macro by its name in
// any case.
func fwMacroName(name string) (string, bool) {
	for k := range fwMacros {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// fwAliasRef splits an alias reference ("dc/name", "guest/name", "name").
func fwAliasRef(s string) (scope, name string, ok bool) {
	m := fwAliasRefRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// resolveFWAlias is resolve_alias: the local alias unless the reference
// says dc/, else the cluster's unless it says guest/. Reading cluster.fw
// passes it as both (so "guest/x" finds the cluster's x there); the
// cluster's create_ip passes no local one.
func resolveFWAlias(cluster, local *fwConf, name, scope string) (*fwAlias, error) {
	key := strings.ToLower(name)
	if scope != "dc/" && local != nil {
		if a := local.Aliases[key]; a != nil {
			return a, nil
		}
	}
	if scope != "guest/" && cluster != nil {
		if a := cluster.Aliases[key]; a != nil {
			return a, nil
		}
	}
	return nil, fmt.Errorf("no such alias '%s'", name)
}

// parseIPOrCIDR is parse_ip_or_cidr: an IPv4 or IPv6 address with an
// optional prefix, /32 and /128 dropped.
func parseIPOrCIDR(s string) (string, int, error) {
	addr, _, hasLen := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return "", 0, errors.New("value does not look like a valid IP address or CIDR network")
	}
	if hasLen && !fwPortRE.MatchString(s[len(addr)+1:]) {
		return "", 0, errors.New("value does not look like a valid IP address or CIDR network")
	}
	if a.Is4() {
		return strings.TrimSuffix(s, "/32"), 4, nil
	}
	return strings.TrimSuffix(s, "/128"), 6, nil
}

// cleanCIDR is clean_cidr: the host bits of a prefix cleared.
func cleanCIDR(s string) string {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return s
	}
	return p.Masked().String()
}

// netIPCheck is what Net::IP->new accepts of one address-list element:
// an address, a clean prefix or a range; its error text is Net::IP's
// (checked against Net::IP 1.26 for the forms here; a prefix that is not
// a number is ignored, as Net::IP does).
func netIPCheck(elem string) (int, error) {
	if elem == "" || strings.HasPrefix(elem, "-") || strings.HasSuffix(elem, "-") || strings.HasSuffix(elem, "/") {
		return 0, fmt.Errorf("Invalid chars in IP %s", elem)
	}
	if lo, hi, ok := strings.Cut(elem, "-"); ok {
		return netIPRange(elem, strings.TrimSpace(lo), strings.TrimSpace(hi))
	}
	addr, plen, hasLen := strings.Cut(elem, "/")
	a, err := parseNetIPAddr(addr)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(plen)
	if !hasLen || err != nil {
		return ipVersion(a), nil
	}
	if n > a.BitLen() {
		return 0, fmt.Errorf("Prefix length %d is longer than IP address (%d)", n, a.BitLen())
	}
	if p := netip.PrefixFrom(a, n); p.Masked().Addr() != a {
		return 0, fmt.Errorf("Invalid prefix %s/%d", binaryIP(a), n)
	}
	return ipVersion(a), nil
}

// netIPRange checks "lo-hi": one family, lo not above hi.
func netIPRange(elem, lo, hi string) (int, error) {
	a, err := parseNetIPAddr(lo)
	if err != nil {
		return 0, err
	}
	b, err := parseNetIPAddr(hi)
	switch {
	case a.Is4() && (err != nil || !b.Is4()):
		return 0, fmt.Errorf("Not a valid IPv4 address %s", hi)
	case err != nil || a.Is4() != b.Is4():
		return 0, fmt.Errorf("Invalid IP address %s", elem)
	case b.Less(a) && a.Is4():
		return 0, fmt.Errorf("Begin address is greater than End address %s - %s", a, b)
	case b.Less(a):
		return 0, fmt.Errorf("Begin address is greater than End address %s - %s", a.StringExpanded(), b.StringExpanded())
	}
	return ipVersion(a), nil
}

// parseNetIPAddr accepts an address as Net::IP does, short IPv4 forms
// ("10.1") included.
func parseNetIPAddr(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a, nil
	}
	if strings.Trim(s, "0123456789.") != "" && !strings.Contains(s, ":") {
		return netip.Addr{}, fmt.Errorf("Invalid chars in IP %s", s)
	}
	quads := strings.Split(s, ".")
	if strings.Contains(s, ":") || len(quads) > 4 {
		return netip.Addr{}, fmt.Errorf("Invalid IP address %s", s)
	}
	for len(quads) < 4 {
		quads = append(quads, "0")
	}
	for _, q := range quads {
		if n, err := strconv.Atoi(q); err != nil || n > 255 {
			return netip.Addr{}, fmt.Errorf("Invalid quad in IP address %s - %s", s, q)
		}
	}
	return netip.ParseAddr(strings.Join(quads, "."))
}

func ipVersion(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// binaryIP is Net::IP's bit string of an address.
func binaryIP(a netip.Addr) string {
	n := new(big.Int).SetBytes(a.AsSlice())
	return fmt.Sprintf("%0*s", a.BitLen(), n.Text(2))
}

// parseFWAddressList is parse_address_list: an IP set or alias reference,
// or a comma list of addresses (one family; a range only alone).
func parseFWAddressList(s string) (int, error) {
	if strings.HasPrefix(s, "+") && !strings.ContainsAny(s, " \t") && len(s) > 1 {
		if len(s) > fwMaxIPSetName+1 {
			return 0, errors.New("ipset name too long")
		}
		return 0, nil
	}
	if fwAliasRefRE.MatchString(s) {
		if len(s) > fwMaxAliasName {
			return 0, errors.New("alias name too long")
		}
		return 0, nil
	}
	// Perl's split drops trailing empty fields only: "a,,b" has an empty
	// element (refused as an address), "a," is "extraneous commas".
	elems := strings.Split(s, ",")
	if strings.HasSuffix(s, ",") {
		return 0, errors.New("extraneous commas in list")
	}
	ver, ranges := 0, false
	for _, e := range elems {
		v, err := netIPCheck(e)
		if err != nil {
			return 0, fmt.Errorf("invalid IP address: %w", err)
		}
		ranges = ranges || strings.Contains(e, "-")
		if ver != 0 && v != ver {
			return 0, fmt.Errorf("detected mixed ipv4/ipv6 addresses in address list '%s'", s)
		}
		ver = v
	}
	if ranges && len(elems) > 1 {
		return 0, errors.New("you can't use a range in a list")
	}
	return ver, nil
}

// parseFWPorts is parse_port_name_number_or_range; dport allows ICMP type
// names (where they used to be kept).
func parseFWPorts(s string, dport bool) error {
	if strings.HasSuffix(s, ",") {
		return errors.New("extraneous commas in list")
	}
	count, icmp := 0, false
	for _, item := range strings.Split(s, ",") {
		if m := fwPortRangeRE.FindStringSubmatch(item); m != nil {
			count += 2
			p1, p2 := atoiBig(m[1]), atoiBig(m[2])
			switch {
			case p1 > 65535:
				return fmt.Errorf("invalid port '%s'", m[1])
			case p2 > 65535:
				return fmt.Errorf("invalid port '%s'", m[2])
			case p1 > p2:
				return fmt.Errorf("backwards range '%s:%s' not allowed, did you mean '%s:%s'?", m[1], m[2], m[2], m[1])
			}
		} else if fwPortRE.MatchString(item) {
			count++
			if atoiBig(item) > 65535 {
				return fmt.Errorf("invalid port '%s'", item)
			}
		} else if dport && (fwICMPTypes[item] || fwICMPv6Types[item]) {
			icmp = true
		} else if !fwServices[item] {
			return fmt.Errorf("invalid port '%s'", item)
		}
	}
	if icmp && count > 0 {
		return errors.New("ICMP ports not allowed in port range")
	}
	if count > 15 {
		return errors.New("too many entries in port list (> 15 numbers)")
	}
	return nil
}

// atoiBig reads a digit string, saturating (Perl compares numerically).
func atoiBig(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 1 << 30
	}
	return n
}

// fwFormatErrors are the pve-fw-* format checks of a call's parameters
// (PVE's parameter verification: 400 with each parameter's message,
// which pve-common JSONSchema.pm check_prop prefixes "invalid format - ");
// the apidoc's other facts are checked before. verify_rule, which runs
// after, gives its own messages bare.
func fwFormatErrors(q *request) map[string]string {
	errs := map[string]string{}
	check := func(k string, f func(string) error) {
		if v := q.get(k); q.has(k) && v != "" {
			if err := f(v); err != nil {
				errs[k] = "invalid format - " + err.Error()
			}
		}
	}
	check("source", func(v string) error { _, err := parseFWAddressList(v); return err })
	check("dest", func(v string) error { _, err := parseFWAddressList(v); return err })
	check("sport", func(v string) error { return parseFWPorts(v, false) })
	check("dport", func(v string) error { return parseFWPorts(v, true) })
	check("proto", func(v string) error {
		if !fwProtocols[v] {
			return fmt.Errorf("unknown protocol '%s'", v)
		}
		return nil
	})
	check("icmp-type", func(v string) error {
		if !fwICMPTypes[v] && !fwICMPv6Types[v] {
			return fmt.Errorf("invalid icmp-type value '%s'", v)
		}
		return nil
	})
	return errs
}

// ruleVerifier carries verify_rule's state: the errors in the order
// found (outside noerr, PVE raises the first at once) and the IP version
// seen.
type ruleVerifier struct {
	errs      [][2]string
	ipversion int
	die       error // a plain die (mixed IP versions from an alias)
}

func (v *ruleVerifier) add(param, msg string) {
	v.errs = append(v.errs, [2]string{param, strings.TrimSuffix(msg, "\n")})
}

func (v *ruleVerifier) setVersion(ver int) error {
	if ver == 0 {
		return nil
	}
	if v.ipversion != 0 && ver != v.ipversion {
		return errors.New("detected mixed ipv4/ipv6 addresses in rule")
	}
	v.ipversion = ver
	return nil
}

// verifyFWRule is verify_rule for a rule of env with the cluster's and
// the scope's configuration (either may be nil). With noerr (reading a
// file) the errors are kept on the rule; else the first is returned as
// PVE's raise_param_exc (a 400).
func verifyFWRule(r *fwRule, cluster, fw *fwConf, env string, noerr bool) error {
	v := &ruleVerifier{}
	v.checkTypeAction(r, env)
	v.checkIface(r, env)
	if r.Macro != "" {
		if name, ok := fwMacroName(r.Macro); ok {
			r.Macro = name
		} else {
			v.add("macro", fmt.Sprintf("unknown macro '%s'", r.Macro))
		}
	}
	v.checkProtoPorts(r)
	for _, side := range []struct{ name, value string }{{"source", r.Source}, {"dest", r.Dest}} {
		if side.value == "" || v.die != nil {
			continue
		}
		ver, err := parseFWAddressList(side.value)
		if err == nil {
			err = v.setVersion(ver)
		}
		if err != nil {
			v.add(side.name, err.Error())
		}
		v.checkRef(side.name, side.value, cluster, fw)
	}
	if v.ipversion != 0 {
		r.IPVersion = v.ipversion
	}
	if r.Macro != "" && len(v.errs) == 0 && v.die == nil {
		v.applyMacro(r)
	}
	return v.result(r, noerr)
}

// result ends verify_rule: the first error raised in order.
func (v *ruleVerifier) result(r *fwRule, noerr bool) error {
	if noerr {
		for _, e := range v.errs {
			ensureMap(&r.Errors)
			if _, ok := r.Errors[e[0]]; !ok {
				r.Errors[e[0]] = e[1]
			}
		}
		return nil
	}
	if len(v.errs) > 0 {
		return paramErr1(v.errs[0][0], "%s", v.errs[0][1])
	}
	return v.die
}

func (v *ruleVerifier) checkTypeAction(r *fwRule, env string) {
	if r.Type == "" {
		v.add("type", "missing property")
	}
	if r.Action == "" {
		v.add("action", "missing property")
	}
	if r.Type == "" {
		return
	}
	valid := false
	for _, t := range fwRuleEnvTypes[env] {
		valid = valid || t == r.Type
	}
	if !valid {
		v.add("type", fmt.Sprintf("invalid rule type '%s' for rule_env '%s'", r.Type, env))
	}
	switch r.Type {
	case "in", "out", "forward":
		if r.Type == "forward" && r.Action == "REJECT" {
			v.add("action", "cannot define REJECT rules on forward chain")
		}
		if r.Action != "" && r.Action != "ACCEPT" && r.Action != "DROP" && r.Action != "REJECT" {
			v.add("action", fmt.Sprintf("unknown action '%s'", r.Action))
		}
	case "group":
		if env == "group" {
			v.add("type", "security groups not allowed")
		}
		if r.Action != "" && !fwNameRE.MatchString(r.Action) {
			v.add("action", "invalid characters in security group name")
		}
	default:
		v.add("type", fmt.Sprintf("unknown rule type '%s'", r.Type))
	}
}

func (v *ruleVerifier) checkIface(r *fwRule, env string) {
	if r.Iface == "" {
		return
	}
	if env == "group" || env == "vnet" {
		v.add("type", "parameter -i not allowed for this rule type")
	}
	if !fwIfaceRE.MatchString(r.Iface) {
		v.add("iface", fmt.Sprintf("invalid network interface name '%s'", r.Iface))
	}
	if (env == "vm" || env == "ct") && !fwGuestIfaceRE.MatchString(r.Iface) {
		v.add("iface", `value does not match the regex pattern 'net\d+'`)
	}
}

// checkProtoPorts checks proto, dport, icmp-type and sport in verify_rule's order.
func (v *ruleVerifier) checkProtoPorts(r *fwRule) {
	icmp := r.Proto == "icmp" || r.Proto == "icmpv6" || r.Proto == "ipv6-icmp"
	if r.Proto != "" {
		if !fwProtocols[r.Proto] {
			v.add("proto", fmt.Sprintf("unknown protocol '%s'", r.Proto))
		}
		switch r.Proto {
		case "icmp":
			v.setVersion(4)
		case "icmpv6", "ipv6-icmp":
			v.setVersion(6)
		}
	}
	v.checkPorts("dport", r.Dport, r.Proto, icmp)
	if t := r.ICMPType; t != "" {
		if !icmp {
			v.add("proto", "missing property - 'icmp-type' requires this property")
		}
		if r.Dport != "" {
			v.add("icmp-type", "'icmp-type' cannot be specified together with 'dport'")
		}
		switch {
		case r.Proto == "icmp" && !fwICMPTypes[t]:
			v.add("icmp-type", fmt.Sprintf("invalid icmp-type '%s' for proto 'icmp'", t))
		case (r.Proto == "icmpv6" || r.Proto == "ipv6-icmp") && !fwICMPv6Types[t]:
			v.add("icmp-type", fmt.Sprintf("invalid icmp-type '%s' for proto '%s'", t, r.Proto))
		}
	}
	v.checkPorts("sport", r.Sport, r.Proto, false)
}

// checkPorts: the list parses, a protocol is given and has ports (ICMP
// types may stand in dport).
func (v *ruleVerifier) checkPorts(name, value, proto string, icmp bool) {
	if value == "" {
		return
	}
	if err := parseFWPorts(value, icmp); err != nil {
		v.add(name, err.Error())
	}
	if proto == "" {
		v.add("proto", fmt.Sprintf("missing property - '%s' requires this property", name))
	}
	if !fwProtocolsWithPorts[proto] && !icmp {
		v.add(name, fmt.Sprintf("protocol '%s' does not support ports", proto))
	}
}

// checkRef is $check_ipset_or_alias_property: a "+name" must be an IP
// set of the cluster or the scope (or SDN's), a bare name an alias of
// either; an alias brings its IP version.
func (v *ruleVerifier) checkRef(param, value string, cluster, fw *fwConf) {
	if strings.HasPrefix(value, "+") {
		m := fwIPSetRefRE.FindStringSubmatch(value)
		if m == nil {
			v.add(param, fmt.Sprintf("invalid ipset name '%s'", value))
			return
		}
		if !hasIPSet(cluster, m[2]) && !hasIPSet(fw, m[2]) && !hasSDNIPSet(cluster, m[2]) && !hasSDNIPSet(fw, m[2]) {
			v.add(param, fmt.Sprintf("no such ipset '%s'", m[2]))
		}
		return
	}
	scope, name, ok := fwAliasRef(value)
	if !ok {
		return
	}
	key := strings.ToLower(name)
	if !hasAlias(cluster, key) && !hasAlias(fw, key) {
		v.add(param, fmt.Sprintf("no such alias '%s'", value))
	}
	var e *fwAlias
	if scope != "dc/" && fw != nil {
		e = fw.Aliases[key]
	}
	if scope != "guest/" && e == nil && cluster != nil {
		e = cluster.Aliases[key]
	}
	if e != nil && v.die == nil {
		v.die = v.setVersion(e.IPVersion)
	}
}

func hasIPSet(c *fwConf, name string) bool {
	if c == nil {
		return false
	}
	_, ok := c.IPSets[name]
	return ok
}

func hasSDNIPSet(c *fwConf, name string) bool {
	if c == nil {
		return false
	}
	_, ok := c.SDN[name]
	return ok
}

func hasAlias(c *fwConf, key string) bool { return c != nil && c.Aliases[key] != nil }

// applyMacro is $apply_macro with verify: a value the rule sets that a
// macro rule fixes otherwise is refused (the IPv6 variant for an IPv6
// rule; a macro of the other IP version is skipped).
func (v *ruleVerifier) applyMacro(r *fwRule) {
	m := fwMacros[r.Macro]
	tpl := m.rules
	if v.ipversion == 6 && m.v6 != nil {
		tpl = m.v6
	}
	if v.ipversion != 0 && m.ipversion != 0 && m.ipversion != v.ipversion {
		return
	}
	for _, t := range tpl {
		for _, kv := range [][3]string{{"proto", t.proto, r.Proto}, {"dport", t.dport, r.Dport}, {"sport", t.sport, r.Sport}} {
			if kv[1] != "" && kv[2] != "" && kv[1] != kv[2] {
				v.add(kv[0], fmt.Sprintf("parameter '%s' already define in macro (value = '%s')", kv[0], kv[1]))
				return
			}
		}
	}
}

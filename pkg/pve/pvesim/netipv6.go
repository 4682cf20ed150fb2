package pvesim

import (
	"net/netip"
	"strconv"
	"strings"
)

// ipv6Types is Net::IP's %IPv6ranges (libnet-ip-perl 1.26, what PVE
// ships): the type of an IPv6 address is that of the longest prefix it is
// in (ip_iptypev6).
var ipv6Types = []struct {
	prefix netip.Prefix
	typ    string
}{
	{mustPrefix("::/8"), "RESERVED"}, {mustPrefix("::/128"), "UNSPECIFIED"},
	{mustPrefix("::1/128"), "LOOPBACK"}, {mustPrefix("::ffff:0:0/96"), "IPV4MAP"},
	{mustPrefix("100::/8"), "RESERVED"}, {mustPrefix("100::/64"), "DISCARD"},
	{mustPrefix("200::/7"), "RESERVED"}, {mustPrefix("400::/6"), "RESERVED"},
	{mustPrefix("800::/5"), "RESERVED"}, {mustPrefix("1000::/4"), "RESERVED"},
	{mustPrefix("2000::/3"), "GLOBAL-UNICAST"}, {mustPrefix("2001::/32"), "TEREDO"},
	{mustPrefix("2001:2::/48"), "BMWG"}, {mustPrefix("2001:db8::/32"), "DOCUMENTATION"},
	{mustPrefix("2001:10::/28"), "ORCHID"}, {mustPrefix("2002::/16"), "6TO4"},
	{mustPrefix("4000::/3"), "RESERVED"}, {mustPrefix("6000::/3"), "RESERVED"},
	{mustPrefix("8000::/3"), "RESERVED"}, {mustPrefix("a000::/3"), "RESERVED"},
	{mustPrefix("c000::/3"), "RESERVED"}, {mustPrefix("e000::/4"), "RESERVED"},
	{mustPrefix("f000::/5"), "RESERVED"}, {mustPrefix("f800::/6"), "RESERVED"},
	{mustPrefix("fa00::/7"), "RESERVED"}, {mustPrefix("fc00::/7"), "UNIQUE-LOCAL-UNICAST"},
	{mustPrefix("fe00::/9"), "RESERVED"}, {mustPrefix("fe80::/10"), "LINK-LOCAL-UNICAST"},
	{mustPrefix("fec0::/10"), "RESERVED"}, {mustPrefix("ff00::/8"), "MULTICAST"},
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// ipv6Type is Net::IP ip_iptypev6 of addr.
func ipv6Type(addr netip.Addr) string {
	best, typ := -1, ""
	for _, r := range ipv6Types {
		if r.prefix.Bits() > best && r.prefix.Contains(addr) {
			best, typ = r.prefix.Bits(), r.typ
		}
	}
	return typ
}

// checkIPv6Host is pve-manager PVE/API2/Network.pm check_ipv6_settings,
// which create_network and update_network run on the address6 they were
// sent (cidr6 split): only a global, unique-local or link-local unicast
// address may be a host's, and an address whose bits are the netmask's
// counts as ANYCAST. The refusal is a 400 on "address" (sic), naming the
// address as sent. cidr6 is "address/bits".
func checkIPv6Host(cidr6 string) error {
	text, bits, _ := strings.Cut(cidr6, "/")
	addr, err := netip.ParseAddr(text)
	if err != nil {
		return nil // the schema's ipv6 and CIDRv6 formats refused it already
	}
	n, _ := strconv.Atoi(bits)
	typ := ipv6Type(addr)
	if isMask(addr, n) {
		typ = "ANYCAST"
	}
	switch typ {
	case "GLOBAL-UNICAST", "UNIQUE-LOCAL-UNICAST", "LINK-LOCAL-UNICAST":
		return nil
	}
	return paramErr1("address", "%s with type '%s', cannot be used as host IPv6 address.", text, typ)
}

// isMask is whether addr's bits are n ones and then zeros (Net::IP
// ip_get_mask($n, 6)).
func isMask(addr netip.Addr, n int) bool {
	b := addr.As16()
	for i := 0; i < 128; i++ {
		one := b[i/8]&(0x80>>(i%8)) != 0
		if one != (i < n) {
			return false
		}
	}
	return true
}

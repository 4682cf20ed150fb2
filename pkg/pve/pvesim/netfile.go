package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// What pve-common src/PVE/Network/Interfaces.pm does when it writes
// /etc/network/interfaces(.new) (__write_etc_network_interfaces,
// __interface_to_string) and reads it back (__read_etc_network_interfaces).

var (
	// physicalNIC is the reader's PHYSICAL_NIC_RE: names typed "eth".
	physicalNIC = lazyre.New(`^(?:eth\d+|en[^:.]+|ib[^:.]+|(?:nic|if)\d+)$`)
	bondName    = lazyre.New(`^bond\d+$`)
	dotVLAN     = lazyre.New(`^(\S+)\.(\d+)$`)
	vlanN       = lazyre.New(`^vlan(\d+)$`)
	listSeps    = lazyre.New(`[;,\s]+`)
)

// dieErr is one of the writer's dies: a plain 500, and nothing written.
func dieErr(format string, args ...any) error {
	return fail(http.StatusInternalServerError, format, args...)
}

// checkInterfaces runs the writer's checks over the whole file, in its
// order: ports used twice, bonds, VLANs, bridge ports. The values are the
// ones the API stored: the writer splits slaves and bridge ports on
// whitespace only, so "eno3,eno4" is one (missing) interface here.
func checkInterfaces(cfg map[string]*iface) error {
	names := slices.Sorted(maps.Keys(cfg))
	used := map[string]string{}
	for _, name := range names {
		for _, p := range listSeps.Split(strings.TrimSpace(cfg[name].BridgePorts+" "+cfg[name].Slaves), -1) {
			if p == "" {
				continue
			}
			if other, ok := used[p]; ok && other != name {
				return dieErr("port '%s' is already used on interface '%s'", p, other)
			}
			used[p] = name
		}
	}
	for _, name := range names {
		if err := checkBond(cfg, name); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := checkVLAN(cfg, name); err != nil {
			return err
		}
	}
	for _, name := range names {
		if err := checkBridgePorts(cfg, name); err != nil {
			return err
		}
	}
	return nil
}

// checkBond: every slave an eth or a bond, bond-primary one of them. The
// writer looks a slave up and sets its autostart before it tests whether
// the slave exists, which makes Perl create it: a missing slave is reported
// as one of the wrong type (” != …), never as "unable to find slave".
func checkBond(cfg map[string]*iface, name string) error {
	d := cfg[name]
	if d.Type != "bond" || d.Slaves == "" {
		return nil
	}
	primaryIsSlave := false
	for _, p := range strings.Fields(d.Slaves) {
		n := cfg[p]
		typ := ""
		if n != nil {
			typ = n.Type
		}
		if typ != "eth" && typ != "bond" {
			return dieErr("bond '%s' - wrong interface type on slave '%s' ('%s' != 'eth or bond')", name, p, typ)
		}
		if err := checkMTU(cfg, name, p); err != nil {
			return err
		}
		primaryIsSlave = primaryIsSlave || d.BondPrimary == p
	}
	if d.BondPrimary != "" && !primaryIsSlave {
		return dieErr("bond '%s' - bond-primary interface is not a slave", name)
	}
	return nil
}

// checkVLAN: the parent (from the name eno1.10, or vlan-raw-device) exists
// and can carry VLANs.
func checkVLAN(cfg map[string]*iface, name string) error {
	d := cfg[name]
	if d.Type != "vlan" {
		return nil
	}
	var parent string
	var id int
	if m := dotVLAN.FindStringSubmatch(name); m != nil {
		parent, id = m[1], atoi(m[2])
	} else {
		if d.VlanRawDevice == "" {
			return dieErr("missing vlan-raw-device option")
		}
		parent = d.VlanRawDevice
		if m := vlanN.FindStringSubmatch(name); m != nil {
			id = atoi(m[1])
		} else {
			// A custom name needs ifupdown2, which PVE 9 has, and vlan-id.
			if d.VlanID == 0 {
				return dieErr("missing vlan-id option")
			}
			id = d.VlanID
		}
	}
	if id > 4094 {
		return dieErr("vlan '%s' - vlan-id %d should be <= 4094", name, id)
	}
	n := cfg[parent]
	if n == nil {
		return dieErr("vlan '%s' - unable to find parent '%s'", name, parent)
	}
	switch n.Type {
	case "eth", "bridge", "bond", "vlan":
	default:
		return dieErr("vlan '%s' - wrong interface type on parent '%s' ('%s' != 'eth|bond|bridge|vlan' )", name, parent, n.Type)
	}
	return checkMTU(cfg, parent, name)
}

// checkBridgePorts: every port exists (a VLAN port eno1.10 is made on the
// fly), carries no address of its own, and has an MTU no lower than the
// bridge's.
func checkBridgePorts(cfg map[string]*iface, name string) error {
	d := cfg[name]
	if d.Type != "bridge" {
		return nil
	}
	for _, p := range strings.Fields(d.BridgePorts) {
		n := cfg[p]
		if n == nil {
			if m := dotVLAN.FindStringSubmatch(p); m != nil {
				n = &iface{Name: p, Type: "vlan", Method: "manual", Method6: "manual"}
				if parent := cfg[m[1]]; parent != nil {
					n.MTU = parent.MTU
				}
			}
		}
		if n == nil {
			return dieErr("bridge '%s' - unable to find bridge port '%s'", name, p)
		}
		if (n.Method == "static" && !strings.HasPrefix(n.CIDR, "0.0.0.0/")) ||
			(n.Method6 == "static" && !strings.HasPrefix(n.CIDR6, "::/")) {
			return dieErr("iface %s - ip address can't be set on interface if bridged in %s", p, name)
		}
		if err := checkMTUOf(n, d); err != nil {
			return err
		}
	}
	return nil
}

func checkMTU(cfg map[string]*iface, parent, child string) error {
	return checkMTUOf(cfg[parent], cfg[child])
}

// checkMTUOf is the writer's check_mtu: a child (bridge, VLAN, slave) may
// not have a larger MTU than its parent; a parent without one has 1500,
// a bond without one takes the child's.
func checkMTUOf(parent, child *iface) error {
	if child == nil || child.MTU == 0 || parent == nil {
		return nil
	}
	pmtu := parent.MTU
	if pmtu == 0 && parent.Type == "bond" {
		pmtu = child.MTU
	}
	if pmtu == 0 {
		pmtu = 1500
	}
	if pmtu < child.MTU {
		return dieErr("interface '%s' - mtu %d is lower than '%s' - mtu %d", parent.Name, pmtu, child.Name, child.MTU)
	}
	return nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// typePrio is the writer's ordering of interface types; an interface sorts
// by the type of its root device (eno1.10 with eno1) plus its depth.
var typePrio = map[string]int{"loopback": 100000, "eth": 200000, "bond": 400000, "bridge": 500000, "vlan": 600000}

// writeOrder sorts interfaces as the writer prints them: type, then file
// position (50000 for one not written yet), then name.
func writeOrder(cfg map[string]*iface) []*iface {
	out := slices.Collect(maps.Values(cfg))
	prio := func(i *iface) (int, bool) {
		root, rest, _ := strings.Cut(strings.NewReplacer(":", ".").Replace(i.Name), ".")
		r := cfg[root]
		if r == nil {
			return 0, false
		}
		tp, known := typePrio[r.Type]
		if !known {
			return 0, false
		}
		if rest != "" {
			tp += strings.Count(rest, ".") + 1
		}
		return tp, true
	}
	pos := func(i *iface) int {
		if i.Priority > 0 {
			return i.Priority
		}
		return 50000
	}
	sort.Slice(out, func(a, b int) bool {
		ta, okA := prio(out[a])
		tb, okB := prio(out[b])
		if !okA || !okB {
			ta, tb = 0, 0
		}
		pa, pb := ta+pos(out[a]), tb+pos(out[b])
		if pa != pb {
			return pa < pb
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// reread makes cfg what the file the writer prints reads back as.
func reread(cfg map[string]*iface) {
	order := writeOrder(cfg)
	for _, d := range order {
		if d.Type == "bond" {
			// The writer brings every existing slave up at boot.
			for _, p := range strings.Fields(d.Slaves) {
				if n := cfg[p]; n != nil {
					n.Autostart = true
				}
			}
		}
	}
	for pos, d := range order {
		d.Priority = pos + 2 // the reader counts from 2; 1 is for a missing lo
		writeOptions(d)
		writeFamilies(d)
		readOtherPorts(d)
		d.Type = readType(d)
	}
	for _, d := range order {
		if d.Type == "vlan" {
			if p := cfg[d.VlanRawDevice]; p != nil {
				d.Exists = p.Exists
			}
		}
		if d.Type == "alias" {
			// The reader: an alias (eno1:1) exists as its parent does
			// (Network/Interfaces.pm __read_etc_network_interfaces).
			parent, _, _ := strings.Cut(d.Name, ":")
			d.Exists = cfg[parent] != nil && cfg[parent].Exists
		}
	}
}

// writeOptions applies what the writer prints of the type's options and
// what the reader makes of them.
func writeOptions(d *iface) {
	switch d.Type {
	case "bridge":
		d.BridgePorts = sortedPorts(d.BridgePorts)
		d.BridgeSTP = orDefault(d.BridgeSTP, "off")
		if d.BridgeFD == "" && d.BridgeSTP == "off" {
			d.BridgeFD = "0"
		}
		switch {
		case !d.BridgeVlanAware:
			d.BridgeVids = "" // only written for a VLAN-aware bridge
		case d.BridgeVids == "":
			d.BridgeVids = "2-4094" // written as the default list
		}
	case "bond":
		d.Slaves = sortedPorts(d.Slaves)
		d.BondMode = orDefault(d.BondMode, "balance-rr")
		// Options of other modes are not written.
		if d.BondMode != "balance-xor" && d.BondMode != "802.3ad" {
			d.BondXmitHashPolicy = ""
		}
		if d.BondMode != "active-backup" {
			d.BondPrimary = ""
		}
	}
}

// readOtherPorts is what the reader makes of the slaves and bridge_ports
// the writer printed, as they were, among the other settings of a type
// that is neither a bond nor a bridge: lists split on blanks, sorted,
// without "none"; a bridge_ports line makes the interface a bridge, with
// the reader's STP and forwarding delay defaults (pve-common
// Network/Interfaces.pm __interface_to_string, __read_etc_network_interfaces).
func readOtherPorts(d *iface) {
	if d.Type == "bridge" || d.Type == "bond" {
		return
	}
	fields := func(s string) string {
		f := slices.DeleteFunc(strings.Fields(s), func(p string) bool { return p == "none" })
		slices.Sort(f)
		return strings.Join(slices.Compact(f), " ")
	}
	d.Slaves, d.BridgePorts = fields(d.Slaves), fields(d.BridgePorts)
	if d.BridgePorts != "" {
		d.BridgeSTP = "off"
		d.BridgeFD = "0"
	}
}

// sortedPorts is a port list as the reader keeps it: the writer joins it
// with spaces ("none" when empty), the reader sorts it and drops "none".
func sortedPorts(s string) string {
	ports := strings.Fields(listSeps.ReplaceAllString(s, " "))
	ports = slices.DeleteFunc(ports, func(p string) bool { return p == "none" })
	slices.Sort(ports)
	return strings.Join(slices.Compact(ports), " ")
}

// writeFamilies writes one stanza per address family: an address of a
// family the interface does not have (a PUT without address6) is not
// written; comments are read back as one text, a line each.
func writeFamilies(d *iface) {
	if len(d.Families) == 0 {
		d.Families = []string{"inet"}
		if d.CIDR6 != "" {
			d.Families = append(d.Families, "inet6")
		}
	}
	inet, inet6 := d.hasFamily("inet"), d.hasFamily("inet6")
	comments, comments6 := d.Comments, d.Comments6
	if !inet {
		d.CIDR, d.Gateway, d.Method = "", "", "manual"
		comments6, comments = comments, "" // an inet6-only interface keeps its comments there
	}
	if !inet6 {
		d.CIDR6, d.Gateway6, d.Method6, comments6 = "", "", "manual", ""
	}
	d.Comments, d.Comments6 = commentLines(comments)+commentLines(comments6), ""
	if d.Method == "" {
		d.Method = "manual"
	}
	if d.Method6 == "" {
		d.Method6 = "manual"
	}
}

// commentLines is a comment as written ("#line" each) and read back: each
// line without trailing blanks and with a newline.
func commentLines(s string) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimRight(l, " \t\r\f\v"))
		b.WriteByte('\n')
	}
	return b.String()
}

// readType is the type the reader gives an interface, from its name and
// options; vlan-raw-device and vlan-id of a dotted or vlanN name come from
// the name (the writer drops them).
func readType(d *iface) string {
	switch {
	case d.Type == "bridge" || d.BridgePorts != "": // bridge-ports is always written
		return "bridge"
	case d.Type == "loopback":
		return "loopback"
	case bondName.MatchString(d.Name):
		return "bond"
	case strings.Contains(d.Name, ":"):
		return "alias"
	}
	if m := dotVLAN.FindStringSubmatch(d.Name); m != nil {
		d.VlanRawDevice, d.VlanID = m[1], atoi(m[2])
		return "vlan"
	}
	if d.VlanRawDevice != "" {
		if m := vlanN.FindStringSubmatch(d.Name); m != nil {
			d.VlanID = atoi(m[1])
		}
		return "vlan"
	}
	if d.Exists || physicalNIC.MatchString(d.Name) {
		return "eth"
	}
	return "unknown"
}

// render prints an interfaces file the way the writer does, for the
// staged diff.
func render(m map[string]*iface) string {
	var b strings.Builder
	for _, i := range writeOrder(m) {
		if i.Autostart {
			fmt.Fprintf(&b, "auto %s\n", i.Name)
		}
		fams := i.Families
		if len(fams) == 0 {
			fams = []string{"inet"}
		}
		for n, fam := range fams {
			opt := func(k, v string) {
				if v != "" {
					fmt.Fprintf(&b, "\t%s %s\n", k, v)
				}
			}
			if fam == "inet" {
				fmt.Fprintf(&b, "iface %s inet %s\n", i.Name, orDefault(i.Method, "manual"))
				if i.NoMask {
					opt("address", strings.TrimSuffix(i.CIDR, "/32"))
				} else {
					opt("address", i.CIDR)
				}
				opt("gateway", i.Gateway)
			} else {
				fmt.Fprintf(&b, "iface %s inet6 %s\n", i.Name, orDefault(i.Method6, "manual"))
				opt("address", i.CIDR6)
				opt("gateway", i.Gateway6)
			}
			if n == 0 {
				renderOptions(&b, i, opt)
				if i.Comments != "" {
					for _, line := range strings.Split(strings.TrimSuffix(i.Comments, "\n"), "\n") {
						fmt.Fprintf(&b, "#%s\n", line)
					}
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("source /etc/network/interfaces.d/*\n")
	return b.String()
}

func renderOptions(b *strings.Builder, i *iface, opt func(k, v string)) {
	mtu := ""
	if i.MTU > 0 {
		mtu = strconv.Itoa(i.MTU)
	}
	switch i.Type {
	case "bridge":
		opt("bridge-ports", orDefault(i.BridgePorts, "none"))
		opt("bridge-stp", i.BridgeSTP)
		opt("bridge-fd", i.BridgeFD)
		if i.BridgeVlanAware {
			opt("bridge-vlan-aware", "yes")
			opt("bridge-vids", i.BridgeVids)
		}
		opt("mtu", mtu)
	case "bond":
		opt("bond-slaves", orDefault(i.Slaves, "none"))
		opt("bond-miimon", "100")
		opt("bond-mode", i.BondMode)
		opt("bond-xmit-hash-policy", i.BondXmitHashPolicy)
		opt("bond-primary", i.BondPrimary)
		opt("mtu", mtu)
	default:
		// The other settings, sorted by key; a dotted or vlanN name
		// carries its VLAN itself.
		opt("mtu", mtu)
		if i.Type == "vlan" && !dotVLAN.MatchString(i.Name) {
			if !vlanN.MatchString(i.Name) && i.VlanID > 0 {
				opt("vlan-id", strconv.Itoa(i.VlanID))
			}
			opt("vlan-raw-device", i.VlanRawDevice)
		}
	}
}

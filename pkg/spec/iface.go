package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Network interfaces: what PVE's writer and reader of
// /etc/network/interfaces (pve-common src/PVE/Network/Interfaces.pm) do
// with a call that the API itself accepts, checked offline.

// ifaceParams are the create parameters every interface kind takes; each
// kind adds its own (a bridge's ports, a bond's slaves and mode).
func ifaceParams() []string {
	return []string{"node", "iface", "type", "autostart", "mtu", "comments", "comments6",
		"cidr", "address", "netmask", "gateway", "cidr6", "address6", "netmask6", "gateway6"}
}

// linuxBondModes are the modes of a Linux bond; the create call's enum
// also has Open vSwitch's (balance-slb, lacp-…), which the kernel's
// bonding driver does not know.
var linuxBondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

// bondName is the reader's test for a bond: it types an interface by its
// name, so a bond named otherwise reads back as "unknown".
var bondName = lazyre.New(`^bond\d+$`)

// bondModeKeeps says which mode-bound options the writer writes
// (__interface_to_string): the hash policy for balance-xor and 802.3ad,
// the primary for active-backup; the others are dropped.
var bondModeKeeps = map[string][]string{
	"bond_xmit_hash_policy": {"balance-xor", "802.3ad"},
	"bond-primary":          {"active-backup"},
}

// BondModeDrops reports whether PVE's writer leaves option key out of a
// bond of the given mode ("" is the writer's default, balance-rr).
func BondModeDrops(key, mode string) bool {
	keeps, ok := bondModeKeeps[key]
	if mode == "" {
		mode = "balance-rr"
	}
	return ok && !slices.Contains(keeps, mode)
}

// BondModeOptions lists the options whose keeping depends on the mode.
func BondModeOptions() []string { return []string{"bond_xmit_hash_policy", "bond-primary"} }

// BondModeNeed names the modes that keep option key, for messages.
func BondModeNeed(key string) string { return strings.Join(bondModeKeeps[key], " or ") }

// checkPortList: the writer's checks split ports and slaves on blanks only
// (`split(/\s+/, …)`), so "eno3,eno4" is one interface that does not exist.
func checkPortList(r *Resource, key string) []problem {
	v := r.Params.Get(key)
	if !strings.ContainsAny(v, ",;") {
		return nil
	}
	return []problem{{key, fmt.Sprintf("%s %q: PVE's writer splits %s on blanks only, so it would look for one interface %q: separate them with spaces or write a list",
		key, v, key, v)}}
}

// checkBridge finds what PVE would not take in a bridge's spec.
func checkBridge(r *Resource) []problem {
	return checkPortList(r, "bridge_ports")
}

// checkBond finds what PVE would refuse or silently drop in a bond's spec.
// An option the mode drops is an error rather than a plan that never
// settles; when the spec leaves bond_mode out, the plan decides with the
// live or default mode.
func checkBond(r *Resource) []problem {
	var out []problem
	if name := r.Params.Get("iface"); name != "" && !bondName.MatchString(name) {
		out = append(out, problem{"iface", fmt.Sprintf("iface %q: PVE recognises a bond by its name only (bond0, bond1, …); any other name reads back as an interface of unknown type", name)})
	}
	mode, modeSet := r.Params.Lookup("bond_mode")
	if modeSet && !slices.Contains(linuxBondModes, mode) {
		out = append(out, problem{"bond_mode", fmt.Sprintf("bond_mode %q is an Open vSwitch bond mode; a Linux bond takes %s", mode, strings.Join(linuxBondModes, ", "))})
	}
	if modeSet {
		for _, key := range BondModeOptions() {
			if _, set := r.Params.Lookup(key); set && BondModeDrops(key, mode) {
				out = append(out, problem{key, fmt.Sprintf("%s is kept only with bond_mode %s (PVE does not write it for %s, and the plan would never settle): drop it, or change bond_mode",
					key, BondModeNeed(key), mode)})
			}
		}
	}
	if p := r.Params.Get("bond-primary"); p != "" {
		if slaves, ok := r.Params.Lookup("slaves"); ok && !slices.Contains(schema.SplitList(slaves), p) {
			out = append(out, problem{"bond-primary", fmt.Sprintf("bond-primary %q is not one of the slaves (PVE refuses: bond-primary interface is not a slave)", p)})
		}
	}
	return append(out, checkPortList(r, "slaves")...)
}

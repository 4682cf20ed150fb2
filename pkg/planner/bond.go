package planner

import (
	"fmt"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// bondKind manages BondInterface (the shared logic is ifaceKind's).
var bondKind = ifaceKind{typ: "bond", ports: "slaves", check: checkBondCall}

// checkBondCall finds what PVE would refuse or drop in a bond's call, with
// the mode the bond will have: the spec's, else the live one carried by
// the update, else PVE's default balance-rr (validate already refused an
// option the spec's own bond_mode drops).
func checkBondCall(_ *engine.Builder, r *spec.Resource, lo *engine.LiveObj, sent map[string]string) ([]string, error) {
	mode := sent["bond_mode"]
	from := "its bond_mode"
	switch {
	case r.Params.Get("bond_mode") != "":
	case mode != "":
		from = "its live bond_mode (the spec sets none)"
	default:
		mode, from = "balance-rr", "PVE's default mode (the spec sets no bond_mode)"
	}
	for _, key := range spec.BondModeOptions() {
		if _, set := r.Params.Lookup(key); set && spec.BondModeDrops(key, mode) {
			return nil, fmt.Errorf("%s: %s is kept only with bond_mode %s, and this bond has %s, %s: PVE would not write it and the plan would never settle; set bond_mode, or drop %s",
				keyWhere(r, key), key, spec.BondModeNeed(key), from, mode, key)
		}
	}
	// The writer dies on a primary that is not a slave (pve-common
	// Network/Interfaces.pm __write_etc_network_interfaces); the spec may
	// name it against live slaves.
	if p := sent["bond-primary"]; p != "" && !spec.BondModeDrops("bond-primary", mode) {
		found := false
		for _, s := range schema.SplitList(sent["slaves"]) {
			found = found || s == p
		}
		if !found {
			return nil, fmt.Errorf("%s: bond-primary %q is not one of the bond's slaves %q (PVE refuses: bond-primary interface is not a slave)",
				keyWhere(r, "bond-primary"), p, sent["slaves"])
		}
	}
	return nil, nil
}

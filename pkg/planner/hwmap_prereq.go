package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// mappingPrereq needs the mapping a guest's device names, with an entry
// for the node the guest is to run on: PVE refuses to start the guest
// otherwise (qemu-server QemuServer/PCI.pm and USB.pm, pve-guest-common
// Mapping/Dir.pm find_on_current_node). `validate` refuses it already
// when the guest's spec writes its node (pkg/spec hwmap.go); this is the
// plan's check for a node the connection's default or placement chose,
// against the specs' mapping or the live one. A mapping PVE does not have
// at all is refused only for a guest the apply starts: PVE makes a guest
// naming it (qemu-server API2/Qemu.pm check_hostpci_perm asks only
// Mapping.Use on its path), a later start fails; one of the specs' with
// no entry for the node is a mistake either way, as `validate` says.
func mappingPrereq(m spec.GuestMapping, node string, starts bool) engine.Prereq {
	refusal := mappingRefusal(m, node)
	return engine.Prereq{Key: m.Key, What: fmt.Sprintf("%s mapping %s with an entry for node %s", m.Type, m.ID, node),
		Kind: spec.KindHardwareMapping, Value: m.Type + "/" + m.ID,
		FromSpec: func(p *spec.Resource) string {
			if slices.Contains(spec.MappingNodes(p), node) {
				return ""
			}
			return fmt.Sprintf("%s mapping %s (%s) has no entry for node %s: %s; add an entry for %s to its map", m.Type, m.ID, p.Address(), node, refusal, node)
		},
		Read: func(ctx context.Context, lc *engine.LiveConn) error {
			if !lc.Sees("/mapping/"+m.Type+"/"+m.ID, "Mapping.Audit", "Mapping.Use", "Mapping.Modify") || !lc.HasNode(node) {
				return nil // PVE's list hides it: PVE says at the start
			}
			_, err := lc.HWMapRows(ctx, m.Type)
			return err
		},
		Live: func(lc *engine.LiveConn) string {
			rows, read := lc.CfgLists[engine.HWMapListPath(m.Type)]
			if !read {
				return ""
			}
			lo := hwmapFind(rows, m.ID)
			if !lo.Exists {
				if !starts {
					return ""
				}
				return fmt.Sprintf("%s mapping %s does not exist (in PVE or in these specs): %s; make it first (kind HardwareMapping), or drop running: true", m.Type, m.ID, mappingRefusal(m, node))
			}
			for _, e := range strings.Split(lo.Config.Get("map"), "\n") {
				if _, kv, err := spec.NormalizeMappingEntry(e); err == nil && kv["node"] == node {
					return ""
				}
			}
			return fmt.Sprintf("%s mapping %s has no entry for node %s: %s; add an entry for %s to its map", m.Type, m.ID, node, refusal, node)
		}}
}

// mappingRefusal is what PVE answers at the start.
func mappingRefusal(m spec.GuestMapping, node string) string {
	switch m.Type {
	case spec.MappingPCI:
		return "PVE does not start the guest (PCI device mapping not found for '" + m.ID + "')"
	case spec.MappingUSB:
		return "PVE does not start the guest (USB device mapping not found for '" + m.ID + "')"
	}
	return "PVE does not start the guest (No directory mapping for node " + node + ".)"
}

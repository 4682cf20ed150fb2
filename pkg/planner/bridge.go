package planner

import (
	"fmt"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// bridgeKind manages LinuxBridge (the shared logic is ifaceKind's).
var bridgeKind = ifaceKind{typ: "bridge", ports: "bridge_ports", check: checkBridgeCall}

// checkBridgeCall finds what PVE would not keep in a bridge's call.
func checkBridgeCall(_ *engine.Builder, r *spec.Resource, lo *engine.LiveObj, _ map[string]string) ([]string, error) {
	if _, ok := r.Params.Lookup("bridge_vids"); ok && !vlanAware(r, lo) {
		return nil, fmt.Errorf("%s: bridge_vids is kept only on a VLAN-aware bridge (PVE writes no VLAN list otherwise, and the plan would never settle): set bridge_vlan_aware: true, or drop bridge_vids", keyWhere(r, "bridge_vids"))
	}
	return nil, nil
}

// vlanAware is whether r's bridge will be VLAN-aware after the plan: the
// spec's flag, else the live one.
func vlanAware(r *spec.Resource, lo *engine.LiveObj) bool {
	if v, ok := r.Params.Lookup("bridge_vlan_aware"); ok {
		on, _ := schema.ParseBool(v)
		return on
	}
	if slices.Contains(r.Remove, "bridge_vlan_aware") {
		return false
	}
	on, _ := schema.ParseBool(lo.Config.Get("bridge_vlan_aware"))
	return on
}

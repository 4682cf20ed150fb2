package planner

import (
	"maps"
	"slices"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
)

// A node lists every zone, whoever made it: after a commit only the
// zones it touched are waited for or fail the apply; another zone in
// error or pending is said, not a failure.
func TestSDNTouchedZones(t *testing.T) {
	vnets := []*pve.Config{
		pve.ConfigOf(map[string]string{"vnet": "web", "zone": "lab"}),
		pve.ConfigOf(map[string]string{"vnet": "db", "zone": "prod"}),
	}
	pend := []sdnPending{{Key: "subnets/web/10.1.0.0-24"}, {Key: "zones/edge"}}
	touched := touchedZones(pend, vnets)
	if want := map[string]bool{"lab": true, "edge": true}; !maps.Equal(touched, want) {
		t.Errorf("touched %v, want %v", touched, want)
	}
	if got := touchedZones(append(pend, sdnPending{Key: "controllers/evpn1"}), vnets); got != nil {
		t.Errorf("with a controller pending: got %v, want every zone (nil)", got)
	}
	zones := []*pve.Config{
		pve.ConfigOf(map[string]string{"zone": "lab", "status": "pending"}),
		pve.ConfigOf(map[string]string{"zone": "edge", "status": "error"}),
		pve.ConfigOf(map[string]string{"zone": "prod", "status": "error"}),
		pve.ConfigOf(map[string]string{"zone": "old", "status": "pending"}),
		pve.ConfigOf(map[string]string{"zone": "ok", "status": "available"}),
	}
	pending, failed, others := zoneStates(zones, touched)
	if !slices.Equal(pending, []string{"lab"}) || !slices.Equal(failed, []string{"edge"}) ||
		!maps.Equal(others, map[string]string{"prod": "error", "old": "pending"}) {
		t.Errorf("zoneStates: pending %v failed %v others %v", pending, failed, others)
	}
	pending, failed, others = zoneStates(zones, nil)
	if len(pending) != 2 || len(failed) != 2 || others != nil {
		t.Errorf("every zone touched: pending %v failed %v others %v", pending, failed, others)
	}
}

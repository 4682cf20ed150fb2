package planner

import (
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// A guest's NIC on a bridge needs SDN.Use on the bridge in its zone
// (pve-guest-common GuestHelpers.pm check_vnet_access): `localnetwork`
// for a plain bridge, the vnet's own zone for an SDN vnet. The guest's
// needs name the local zone (guestperms.go bridgeNeed); vnetZoneNeeds
// puts a vnet's zone in, from the vnets the specs define and those a
// plan read live (the SDN kinds' shared list), as the simulator checks
// (pvesim bridgeZone). A vnet's firewall calls need SDN.Audit or
// SDN.Allocate on /sdn/zones/<zone>/<vnet> (pve-firewall
// API2/Firewall/Vnet.pm); the Firewall names only the vnet, so its needs
// carry vnetZoneMarker+vnet, which vnetZoneNeeds turns into the vnet's
// path in its zone, or /sdn/zones when the zone is not known (stricter
// than PVE, never kinder).

const localZonePrefix = "/sdn/zones/localnetwork/"

// vnetZoneMarker+vnet stands for a vnet's path in its zone until
// vnetZoneNeeds resolves it; it is never checked as it is.
const vnetZoneMarker = "/sdn/vnet-zone/"

// vnetZoneNeeds rewrites the needs of needs whose path is a vnet of the
// connection conn: bridge needs and vnet firewall needs.
func vnetZoneNeeds(set *spec.Set, lc *engine.LiveConn, conn string, needs []engine.PermNeed) []engine.PermNeed {
	var zones map[string]string
	for i, n := range needs {
		if vnet, ok := strings.CutPrefix(n.Path, vnetZoneMarker); ok {
			if zones == nil {
				zones = vnetZones(set, lc, conn)
			}
			needs[i].Path = "/sdn/zones"
			if z := zones[vnet]; z != "" {
				needs[i].Path = "/sdn/zones/" + z + "/" + vnet
			}
			continue
		}
		rest, ok := strings.CutPrefix(n.Path, localZonePrefix)
		if !ok {
			continue
		}
		if zones == nil {
			zones = vnetZones(set, lc, conn)
		}
		bridge, tag, _ := strings.Cut(rest, "/")
		if z := zones[bridge]; z != "" {
			needs[i].Path = "/sdn/zones/" + z + "/" + bridge
			if tag != "" {
				needs[i].Path += "/" + tag
			}
		}
	}
	return needs
}

// vnetZones maps each vnet known to the plan to its zone: the specs'
// SdnVnet documents first, then the live list if the plan read it.
func vnetZones(set *spec.Set, lc *engine.LiveConn, conn string) map[string]string {
	out := map[string]string{}
	if lc != nil {
		lc.SharedMu.Lock()
		l := lc.Shared["/cluster/sdn/vnets"]
		lc.SharedMu.Unlock()
		if l != nil {
			for _, row := range l.Rows {
				out[row.Get("vnet")] = row.Get("zone")
			}
		}
	}
	if set != nil {
		for _, r := range set.Resources {
			if r.Kind == spec.KindSdnVnet && r.Connection == conn && r.State == spec.Present {
				out[r.Params.Get("vnet")] = r.Params.Get("zone")
			}
		}
	}
	return out
}

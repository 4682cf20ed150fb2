package planner

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// A guest's NIC on an SDN vnet needs SDN.Use on the vnet in its own zone
// (check_vnet_access), not in the local zone: a token granted exactly
// there plans, applies and plans clean; one granted on the local zone's
// path is refused naming the vnet's zone, as the simulator refuses it.
func TestSimVnetNICNeedsItsZone(t *testing.T) {
	admin := newSim(t)
	const sdn = "kind: SdnZone\nname: acc\nspec: {type: vlan, bridge: vmbr0}\n---\nkind: SdnVnet\nname: accnet\nspec: {zone: acc, tag: 42}\n---\nkind: SdnApply\nname: sdn\n"
	applyPlan(t, admin, planFor(t, admin, loadSpec(t, sdn), engine.Options{}))
	const vm = "kind: QemuVM\nname: onvnet\nspec:\n  vmid: 170\n  memory: 512\n  net0: virtio,bridge=accnet\n"
	for _, tc := range []struct {
		name, sdnPath, want string
	}{
		{"vnet zone", "/sdn/zones/acc/accnet", ""},
		// The vnet is hidden from such a token (check_sdn_bridge).
		{"local zone", "/sdn/zones/localnetwork/accnet", "bridge accnet does not exist on node pve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := "net" + strings.ReplaceAll(tc.name, " ", "") + "@pve"
			tok, id := asToken(t, admin, user, "plan")
			grantBoth(t, admin, user, id, "/vms/170", "PVEVMAdmin")
			grantBoth(t, admin, user, id, "/vms", "PVEAuditor")
			grantBoth(t, admin, user, id, "/storage", "PVEDatastoreUser")
			grantBoth(t, admin, user, id, tc.sdnPath, "PVESDNUser")
			set := loadSpec(t, vm)
			p, err := tryPlan(t, tok, set, engine.Options{})
			if !succeeded(t, err, tc.want) {
				return
			}
			applyPlan(t, tok, p)
			wantConverged(t, t.Errorf, tok, set, "next plan")
			applyPlan(t, admin, planFor(t, admin, set, engine.Options{Destroy: true}))
		})
	}
}

package planner

import (
	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The registry: every kind the planner supports, and the hooks their
// families add to the engine (kind.go). A new kind is a line here.
func init() {
	for name, k := range map[string]engine.KindOps{
		spec.KindQemuVM:        qemu,
		spec.KindTemplate:      templates,
		spec.KindLxcContainer:  lxc,
		spec.KindLinuxBridge:   bridgeKind,
		spec.KindBondInterface: bondKind,
		spec.KindPool:          poolKind{},
		spec.KindNetworkApply:  netApplyKind{},
		spec.KindNodeDns:       nodeDNSKind{},

		spec.KindDownloadedImage: downloadKind{},
		spec.KindConfigDriveISO:  configDriveKind{},
		spec.KindUser:            userKind{},
		spec.KindAPIToken:        tokenKind{},
		spec.KindACL:             aclKind{},
		spec.KindStorage:         storageKind{},
		spec.KindRole:            roleKind,
		spec.KindGroup:           groupKind,
		spec.KindRealm:           realmKind,
		spec.KindRealmSyncJob:    realmSyncKind,
		spec.KindMetricServer:    metricServerKind,
		spec.KindClusterOptions:  clusterOptionsKind{},

		spec.KindHAResource:     haResourceKind,
		spec.KindHARule:         haRuleKind,
		spec.KindBackupJob:      backupJobKind,
		spec.KindReplicationJob: replicationJobKind,

		spec.KindFirewall:      firewallKind{},
		spec.KindSecurityGroup: securityGroupKind{},

		spec.KindSdnZone:       sdnZoneKind,
		spec.KindSdnVnet:       sdnVnetKind,
		spec.KindSdnSubnet:     sdnSubnetKind,
		spec.KindSdnController: sdnControllerKind,
		spec.KindSdnApply:      sdnApplyKind{},

		spec.KindHardwareMapping: hwmapKind{},
	} {
		engine.Register(name, k)
	}
	engine.PlanSteps = append(engine.PlanSteps, planSnapshots)
	engine.ApplyWrappers = append(engine.ApplyWrappers, withSnapshot)
	engine.NeedRewriters = append(engine.NeedRewriters, vnetZoneNeeds)
}

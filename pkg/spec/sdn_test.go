package spec

import (
	"strings"
	"testing"
)

// SDN bad input: what pve-network's plugins refuse, and overlapping
// subnets, named at file:line before any API call.
func TestSdnBadInput(t *testing.T) {
	doc := `kind: SdnZone
name: lan
spec: {type: vlan, bridge: vmbr0, peers: 10.0.0.1}
---
kind: SdnZone
name: odd
spec: {type: vlam, bridge: vmbr0}
---
kind: SdnZone
name: noBridge
spec: {type: vlan}
---
kind: SdnVnet
name: v1
spec: {zone: lan, tag: 5000}
---
kind: SdnVnet
name: v2
spec: {zone: lan, vlanaware: true}
---
kind: SdnSubnet
name: s1
spec: {vnet: v1, subnet: 10.1.0.0/24, gateway: 10.2.0.1, dhcp-range: "start-address=10.9.0.10,end-address=10.9.0.20"}
---
kind: SdnSubnet
name: s2
spec: {vnet: v1, subnet: 10.1.0.0/16}
---
kind: SdnSubnet
name: s3
spec: {vnet: v2, subnet: 10.3.0.0/24}
---
kind: SdnController
name: ctl
spec: {type: evpn, peers: 10.0.0.1}
---
kind: SdnController
name: bgp1
spec: {type: bgp, node: pve, asn: 65000, peers: 10.0.0.2, isis-domain: x}
---
kind: SdnController
name: ctl2
spec: {type: evpn, asn: 65001}
---
kind: SdnApply
name: sdn
---
kind: SdnApply
name: sdn2
`
	_, diags := loadFiles(t, map[string]string{"sdn.yaml": doc}, nil)
	got := strings.Join(diags, "\n")
	for _, want := range []string{
		"sdn.yaml:3: SdnZone/lan: a vlan zone has no option peers",
		"sdn.yaml:7: spec.type: value 'vlam' does not have a value in the enumeration",
		"sdn.yaml:9: SdnZone/noBridge",
		"a vlan zone needs bridge",
		"sdn.yaml:15: SdnVnet/v1: tag 5000 is out of range",
		"sdn.yaml:17: SdnVnet/v2: a vnet of zone lan (SdnZone/lan, a vlan zone) needs its VLAN tag",
		"sdn.yaml:23: SdnSubnet/s1: gateway 10.2.0.1 is not in subnet 10.1.0.0/24",
		"\"start-address=10.9.0.10,end-address=10.9.0.20\" is not inside subnet 10.1.0.0/24",
		"sdn.yaml:27: SdnSubnet/s2: subnet 10.1.0.0/16 overlaps 10.1.0.0/24 of SdnSubnet/s1",
		"sdn.yaml:31: SdnSubnet/s3: vnet v2 (SdnVnet/v2) is VLAN-aware",
		"SdnController/ctl: the evpn controller needs asn",
		"SdnController/bgp1: the bgp controller has no option isis-domain",
		"SdnController/ctl2: an evpn controller needs exactly one of peers and fabric",
		"SdnApply/sdn2 has the same SDN commit as SdnApply/sdn",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

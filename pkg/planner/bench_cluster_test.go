package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Issue 22 item 5: the plan cost of the firewall and SDN kinds. A no-op
// plan of N guests each with its own Firewall (a scope of its own: four
// reads each, TestNoOpPlanCallsPerClusterKind), and of N SDN vnets with a
// subnet each (lists read once per plan), with a simulated per-request
// latency. requests/op shows the reads; docs/performance.md has the
// figures.
func BenchmarkPlanClusterKinds(b *testing.B) {
	cases := []struct {
		name string
		n    int
		doc  func(i int) string
		head string
	}{
		{"guest-firewalls", 500, func(i int) string {
			return fmt.Sprintf("kind: QemuVM\nname: fw%d\nspec:\n  vmid: %d\n  memory: 512\n---\nkind: Firewall\nname: fw%d\nspec:\n  scope: QemuVM/fw%d\n  options: {enable: 1}\n  rules:\n    - {type: in, action: ACCEPT, macro: SSH}\n", i, 1000+i, i, i)
		}, ""},
		{"sdn-vnets", 200, func(i int) string {
			return fmt.Sprintf("kind: SdnVnet\nname: vn%d\nspec: {zone: bench, tag: %d}\n---\nkind: SdnSubnet\nname: vn%d-v4\nspec: {vnet: vn%d, subnet: 10.%d.%d.0/24}\n", i, 100+i, i, i, 100+i/250, i%250)
		}, "kind: SdnZone\nname: bench\nspec: {type: vlan, bridge: vmbr0}\n---\nkind: SdnApply\nname: sdn\n"},
	}
	for _, c := range cases {
		for _, lat := range []time.Duration{0, 5 * time.Millisecond} {
			b.Run(fmt.Sprintf("%s=%d/latency=%s", c.name, c.n, lat), func(b *testing.B) {
				env := newBenchEnv(b, lat, time.Millisecond)
				docs := []string{}
				if c.head != "" {
					docs = append(docs, c.head)
				}
				for i := range c.n {
					docs = append(docs, c.doc(i))
				}
				env.planConverged(b, loadSpec(b, strings.Join(docs, "---\n")))
			})
		}
	}
}

package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestImplicitEdges(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: Connection
name: other
spec: {url: "https://pve2:8006", tokenId: "root@pam!t"}
---
kind: Pool
name: web
---
kind: Pool
name: gone
state: absent
---
kind: LinuxBridge
name: vmbr1
spec: {node: pve}
---
kind: LinuxBridge
name: vmbr2
spec: {node: pve2}
---
kind: LinuxBridge
name: vmbr3
state: absent
---
kind: LinuxBridge
name: vmbr4
connection: other
---
kind: NetworkApply
name: pve
---
kind: QemuVM
name: a
spec:
  node: pve
  pool: web
  net0: virtio,bridge=vmbr1
  net1: {model: virtio, bridge: vmbr2}
  net2: {model: e1000, bridge: vmbr4}
---
kind: QemuVM
name: b
dependsOn: [QemuVM/a, QemuVM/a]
spec:
  pool: gone
  net0: {model: virtio, bridge: vmbr3}
`}, nil)
	want := map[string][]string{
		"Pool/web":          {},
		"Pool/gone":         {},
		"LinuxBridge/vmbr1": {},
		"LinuxBridge/vmbr2": {},
		"LinuxBridge/vmbr3": {},
		"LinuxBridge/vmbr4": {},
		// Every bridge of node pve or of no node, on the same connection,
		// absent ones included (their removal needs the commit too).
		"NetworkApply/pve": {"LinuxBridge/vmbr1", "LinuxBridge/vmbr3"},
		// vmbr2 is on another node, vmbr4 on another connection.
		"QemuVM/a": {"LinuxBridge/vmbr1", "Pool/web"},
		// No edges to absent targets; the explicit edge deduplicated.
		"QemuVM/b": {"QemuVM/a"},
	}
	if diff := cmp.Diff(want, set.DepGraph().Deps); diff != "" {
		t.Errorf("Graph.Deps (-want +got):\n%s", diff)
	}
	if got, want := set.Lookup("QemuVM/a").DependsOn, []Ref{{"LinuxBridge", "vmbr1"}, {"Pool", "web"}}; !cmp.Equal(got, want) {
		t.Errorf("QemuVM/a DependsOn: got %v want %v", got, want)
	}
}

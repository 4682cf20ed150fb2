package spec

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkLoad is `pvectl validate` of N resources without the process:
// YAML, conversion, schema checks, identities, references (pools named by
// VMs, bridges named by NICs, bond ports) and the graph. Time and memory
// per op should grow linearly with N.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			path := b.TempDir() + "/spec.yaml"
			if err := os.WriteFile(path, []byte(manyResources(n)), 0o600); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				set, err := Load([]string{path}, LoadOptions{Getenv: func(string) (string, bool) { return "", false }})
				if err != nil {
					b.Fatal(err)
				}
				if len(set.Resources) != n {
					b.Fatalf("%d resources, want %d", len(set.Resources), n)
				}
			}
		})
	}
}

// manyResources is n documents: 1 % pools, 1 % bridges (on bonds), the
// rest VMs naming a pool and a bridge each.
func manyResources(n int) string {
	var b strings.Builder
	groups := max(n/100, 1)
	doc := func(format string, args ...any) {
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, format, args...)
	}
	for i := range groups {
		doc("kind: Pool\nname: pool%d\n", i)
		doc("kind: BondInterface\nname: bond%d\nspec:\n  node: pve\n  slaves: eno%d\n  bond_mode: active-backup\n", i, i+10)
		doc("kind: LinuxBridge\nname: vmbr%d\nspec:\n  node: pve\n  bridge_ports: bond%d\n", i+1, i)
	}
	for i := range n - 3*groups {
		doc("kind: QemuVM\nname: vm%d\nspec:\n  node: pve\n  vmid: %d\n  memory: 1024\n  cores: 2\n  pool: pool%d\n  scsi0: local-lvm:8,discard=on,ssd=1\n  net0: virtio,bridge=vmbr%d,firewall=1\n  tags: bench;pvectl\n", i, 1000+i, i%groups, i%groups+1)
	}
	return b.String()
}

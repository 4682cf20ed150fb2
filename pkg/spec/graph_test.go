package spec

import (
	"strings"
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
	if diff := cmp.Diff(want, set.Graph.Deps); diff != "" {
		t.Errorf("Graph.Deps (-want +got):\n%s", diff)
	}
	if got, want := set.Lookup("QemuVM/a").DependsOn, []Ref{{"LinuxBridge", "vmbr1"}, {"Pool", "web"}}; !cmp.Equal(got, want) {
		t.Errorf("QemuVM/a DependsOn: got %v want %v", got, want)
	}
}

func TestGraphOrderAndDependents(t *testing.T) {
	g := &Graph{Deps: map[string][]string{
		"QemuVM/z":          {"Pool/p"},
		"QemuVM/a":          {"LinuxBridge/vmbr1", "Pool/p"},
		"Pool/p":            {},
		"LinuxBridge/vmbr1": {},
		"NetworkApply/pve":  {"LinuxBridge/vmbr1"},
	}}
	wantOrder := []string{"LinuxBridge/vmbr1", "NetworkApply/pve", "Pool/p", "QemuVM/a", "QemuVM/z"}
	if diff := cmp.Diff(wantOrder, g.Order()); diff != "" {
		t.Errorf("Order (-want +got):\n%s", diff)
	}
	tests := []struct {
		addr string
		want []string
	}{
		{"Pool/p", []string{"QemuVM/a", "QemuVM/z"}},
		{"LinuxBridge/vmbr1", []string{"NetworkApply/pve", "QemuVM/a"}},
		{"QemuVM/a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, g.Dependents(tt.addr)); diff != "" {
				t.Errorf("Dependents(%s): got %v want %v", tt.addr, g.Dependents(tt.addr), tt.want)
			}
		})
	}
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name string
		deps map[string][]string
		want [][]string
	}{
		{
			name: "none",
			deps: map[string][]string{"A/a": {"B/b"}, "B/b": {}},
		},
		{
			name: "two separate cycles, each from its first member in file order",
			deps: map[string][]string{
				"A/a": {"B/b"}, "B/b": {"C/c"}, "C/c": {"A/a"},
				"D/d": {"D/d"},
				"E/e": {"A/a"},
			},
			want: [][]string{{"B/b", "C/c", "A/a", "B/b"}, {"D/d", "D/d"}},
		},
		{
			name: "shortest cycle of a component",
			deps: map[string][]string{"B/b": {"C/c", "A/a"}, "C/c": {"A/a"}, "A/a": {"B/b"}},
			want: [][]string{{"B/b", "A/a", "B/b"}},
		},
	}
	rank := map[string]int{"B/b": 0, "C/c": 1, "A/a": 2, "D/d": 3, "E/e": 4}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&Graph{Deps: tt.deps}).cycles(rank)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cycles: got %v want %v", got, tt.want)
			}
		})
	}
}

func TestOrderOf(t *testing.T) {
	tests := []struct {
		name   string
		deps   map[string][]string
		want   []string
		errHas string
	}{
		{
			name: "ties by address",
			deps: map[string][]string{"c": nil, "b": nil, "a": {"c"}},
			want: []string{"b", "c", "a"},
		},
		{
			name:   "cycle",
			deps:   map[string][]string{"a": {"b"}, "b": {"a"}, "c": nil},
			errHas: "dependency cycle among [a b]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel := map[string]bool{}
			for a := range tt.deps {
				sel[a] = true
			}
			got, err := (&Graph{Deps: tt.deps}).OrderOf(sel)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("OrderOf: got error %v want %q", err, tt.errHas)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OrderOf: got %v want %v", got, tt.want)
			}
		})
	}
}

package dag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
			got := (&Graph{Deps: tt.deps}).Cycles(rank)
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

func TestOrderWithCycle(t *testing.T) {
	g := &Graph{Deps: map[string][]string{"A/a": {"B/b"}, "B/b": {"A/a"}, "C/c": {}}}
	want := []string{"C/c", "A/a", "B/b"}
	if diff := cmp.Diff(want, g.Order()); diff != "" {
		t.Errorf("Order: got %v want %v", g.Order(), want)
	}
}

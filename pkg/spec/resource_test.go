package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResourceAccessors(t *testing.T) {
	r := &Resource{
		Params: map[string]string{"node": "pve"},
		Own: map[string]any{
			"running": true, "image": "ubuntu", "keys": []any{"a", "b"}, "csv": "x,y", "n": 3,
		},
	}
	if v, ok := r.Bool("running"); !v || !ok {
		t.Errorf("Bool(running): got %v, %v want true, true", v, ok)
	}
	if v, ok := r.Bool("image"); v || ok {
		t.Errorf("Bool(image): got %v, %v want false, false", v, ok)
	}
	if got := r.String("image"); got != "ubuntu" {
		t.Errorf("String(image): got %q want ubuntu", got)
	}
	if got := r.String("n"); got != "" {
		t.Errorf("String(n): got %q want empty", got)
	}
	for key, want := range map[string][]string{"keys": {"a", "b"}, "csv": {"x", "y"}, "none": nil} {
		if diff := cmp.Diff(want, r.Strings(key)); diff != "" {
			t.Errorf("Strings(%s): got %v want %v", key, r.Strings(key), want)
		}
	}
	if got := r.Node(); got != "pve" {
		t.Errorf("Node: got %q want pve", got)
	}
}

func TestCreateCall(t *testing.T) {
	tests := []struct {
		kind, method, path string
		ok                 bool
	}{
		{KindQemuVM, "POST", "/nodes/{node}/qemu", true},
		{KindLinuxBridge, "POST", "/nodes/{node}/network", true},
		{KindPool, "POST", "/pools", true},
		{KindNetworkApply, "PUT", "/nodes/{node}/network", true},
		{KindConnection, "", "", false},
		{"Storage", "", "", false},
	}
	for _, tt := range tests {
		m, p, ok := CreateCall(tt.kind)
		if m != tt.method || p != tt.path || ok != tt.ok {
			t.Errorf("CreateCall(%s): got %s %s %v want %s %s %v", tt.kind, m, p, ok, tt.method, tt.path, tt.ok)
		}
	}
}

func TestLoadAnchors(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: QemuVM
name: vm
dependsOn: &deps [Pool/p]
spec:
  net0: &nic {model: virtio, bridge: vmbr0, tag: "${VLAN:-10}"}
  net1: *nic
---
kind: Pool
name: p
`}, nil)
	r := set.Lookup("QemuVM/vm")
	want := map[string]string{"name": "vm", "net0": "model=virtio,bridge=vmbr0,tag=10", "net1": "model=virtio,bridge=vmbr0,tag=10"}
	if diff := cmp.Diff(want, r.Params); diff != "" {
		t.Errorf("Params (-want +got):\n%s", diff)
	}
}

func TestDiagnosticsError(t *testing.T) {
	ds := Diagnostics{
		{Pos: Pos{File: "a.yaml", Line: 3}, Msg: "first"},
		{Pos: Pos{File: "b.yaml"}, Msg: "second"},
	}
	if got, want := ds.Error(), "a.yaml:3: first\nb.yaml: second"; got != want {
		t.Errorf("Error: got %q want %q", got, want)
	}
}

func TestOrderWithCycle(t *testing.T) {
	g := &Graph{Deps: map[string][]string{"A/a": {"B/b"}, "B/b": {"A/a"}, "C/c": {}}}
	want := []string{"C/c", "A/a", "B/b"}
	if diff := cmp.Diff(want, g.Order()); diff != "" {
		t.Errorf("Order: got %v want %v", g.Order(), want)
	}
}

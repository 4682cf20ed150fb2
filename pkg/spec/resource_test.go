package spec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResourceAccessors(t *testing.T) {
	on := true
	r := &Resource{Kind: KindQemuVM, Name: "vm", Params: ParamsOf(map[string]string{"node": "pve"}), Keys: &GuestKeys{Running: &on}}
	if v := Guest(r).Running; v == nil || !*v {
		t.Errorf("Guest(r).Running: got %v want true", v)
	}
	if v := Guest(&Resource{Kind: KindQemuVM}).Running; v != nil {
		t.Errorf("Guest of a resource without keys: got running %v want unset", *v)
	}
	if diff := cmp.Diff(map[string]any{"running": true}, r.OwnFields()); diff != "" {
		t.Errorf("OwnFields (-want +got):\n%s", diff)
	}
	if got := r.Node(); got != "pve" {
		t.Errorf("Node: got %q want pve", got)
	}
}

// TestResourceJSONRoundTrip checks that a plan file gives back a
// resource's own keys as its kind's struct, unset keys staying unset.
func TestResourceJSONRoundTrip(t *testing.T) {
	off := false
	for _, in := range []*Resource{
		{Kind: KindQemuVM, Name: "a", Params: ParamsOf(map[string]string{"name": "a"}), Keys: &GuestKeys{Running: &off}},
		{Kind: KindQemuVM, Name: "b", Params: ParamsOf(map[string]string{"name": "b"})},
		{Kind: KindPool, Name: "p", Params: ParamsOf(map[string]string{"poolid": "p"})},
	} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("marshal %s: %v", in.Address(), err)
		}
		var out Resource
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("unmarshal %s: %v", in.Address(), err)
		}
		if diff := cmp.Diff(in, &out); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", in.Address(), diff)
		}
	}
	var out Resource
	err := json.Unmarshal([]byte(`{"kind":"QemuVM","name":"x","own":{"runing":true}}`), &out)
	if err == nil || !strings.Contains(err.Error(), "runing") {
		t.Errorf("unknown own key in a plan file: got %v want an error naming it", err)
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
		{KindStorage, "POST", "/storage", true},
		{KindTemplate, "POST", "/nodes/{node}/qemu", true},
		{"Nope", "", "", false},
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
	if diff := cmp.Diff(want, r.Params.Map()); diff != "" {
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

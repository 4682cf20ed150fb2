package pve

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigDecoding(t *testing.T) {
	in := `{
		"memory": 2048, "cores": "4", "balloon": 0, "cpuunits": 1.0, "ratio": 0.5, "big": 1e3,
		"onboot": true, "agent": false,
		"net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0",
		"digest": "3b4f2c", "description": "line1\nline2",
		"families": ["inet", "inet6"], "obj": {"a": 1},
		"gone": null, "neg": -3
	}`
	var got *Config
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := ConfigOf(map[string]string{
		"memory": "2048", "cores": "4", "balloon": "0", "cpuunits": "1", "ratio": "0.5", "big": "1000",
		"onboot": "1", "agent": "0",
		"net0":   "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0",
		"digest": "3b4f2c", "description": "line1\nline2",
		"families": `["inet","inet6"]`, "obj": `{"a":1}`,
		"neg": "-3",
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	var null *Config
	if err := json.Unmarshal([]byte(`null`), &null); err != nil || null != nil {
		t.Errorf("got %v, %v; want nil config from null", null, err)
	}
	if err := json.Unmarshal([]byte(`[1]`), &null); err == nil {
		t.Error("got no error decoding an array into Config, want one")
	}
}

func TestClusterResourceDecoding(t *testing.T) {
	in := `[
		{"id":"qemu/100","type":"qemu","node":"pve","vmid":100,"name":"web","status":"running","template":0,"tags":"a;b","pool":"prod"},
		{"id":"qemu/9000","type":"qemu","node":"pve","vmid":9000,"name":"ubuntu-24.04-cloud","status":"stopped","template":1},
		{"id":"lxc/200","type":"lxc","node":"pve","vmid":"200","name":"ct"},
		{"id":"storage/pve/local","type":"storage","node":"pve","storage":"local","status":"available"},
		{"id":"node/pve","type":"node","node":"pve","status":"online","uptime":123}
	]`
	var got []ClusterResource
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := []ClusterResource{
		{ID: "qemu/100", Type: "qemu", Node: "pve", VMID: 100, Name: "web", Status: "running", Tags: "a;b", Pool: "prod"},
		{ID: "qemu/9000", Type: "qemu", Node: "pve", VMID: 9000, Name: "ubuntu-24.04-cloud", Status: "stopped", Template: true},
		{ID: "lxc/200", Type: "lxc", Node: "pve", VMID: 200, Name: "ct"},
		{ID: "storage/pve/local", Type: "storage", Node: "pve", Storage: "local", Status: "available"},
		{ID: "node/pve", Type: "node", Node: "pve", Status: "online"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}

	// A saved plan keeps resources as JSON: the round trip must hold.
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var back []ClusterResource
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	bad := []string{`{"vmid":"abc"}`, `{"vmid":1.5}`, `{"template":2}`, `{"vmid":{}}`}
	for _, b := range bad {
		t.Run(b, func(t *testing.T) {
			var r ClusterResource
			if err := json.Unmarshal([]byte(b), &r); err == nil {
				t.Errorf("got %+v, want an error", r)
			}
		})
	}
}

func TestQemuStatusDecoding(t *testing.T) {
	tests := []struct {
		name, in string
		want     QemuStatus
	}{
		{name: "template", in: `{"status":"stopped","qmpstatus":"stopped","name":"t","template":1}`, want: QemuStatus{Status: "stopped", QMPStatus: "stopped", Name: "t", Template: true}},
		{name: "locked", in: `{"status":"stopped","lock":"clone"}`, want: QemuStatus{Status: "stopped", Lock: "clone"}},
		{name: "bool template", in: `{"status":"running","template":false}`, want: QemuStatus{Status: "running"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got QemuStatus
			if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

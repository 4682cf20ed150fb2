package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// USB and directory mappings as pve-manager's Mapping/USB.pm and Dir.pm
// keep them (map required in every write, a directory node listed once,
// the answering node's directory must exist), and what a VM start makes
// of usbN: mapping=… and virtiofsN: dirid=… (qemu-server USB.pm,
// Virtiofs.pm).
func TestUSBAndDirMappings(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	e.ok(nil, "POST", "/cluster/mapping/usb", "id", "stick", "map", "node=pve,id=0781:5583,path=1-2", "description", "a flash drive")
	if r := e.call("POST", "/cluster/mapping/usb", "id", "stick", "map", "node=pve,id=0781:5583"); r.Status != 500 || r.Message != "create hardware mapping failed: usb ID 'stick' already defined" {
		t.Errorf("second usb create: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/mapping/usb", "id", "gone", "map", "node=pve,id=1234:5678")
	list := e.rows("/cluster/mapping/usb", "check-node", "pve")
	if len(list) != 2 || !strings.Contains(jsonString(t, list[0]["errors"]), "usb device '1234:5678' not found") || jsonString(t, list[1]["errors"]) != "[]" {
		t.Errorf("usb mappings checked on pve: got %v", list)
	}
	e.ok(nil, "PUT", "/cluster/mapping/usb/stick", "map", "node=pve,id=0781:5583,path=1-2", "delete", "description")
	got := e.object("/cluster/mapping/usb/stick")
	if got["description"] != nil || jsonString(t, got["map"]) != `["node=pve,id=0781:5583,path=1-2"]` {
		t.Errorf("usb mapping after update: %v", got)
	}

	e.ok(nil, "POST", "/cluster/mapping/dir", "id", "share", "map", "node=pve,path=/srv/share")
	for _, tc := range []struct {
		maps []string
		want string
	}{
		{[]string{"node=pve,path=/nowhere"}, "Path /nowhere does not exist"},
		{[]string{"node=pve,path=/etc/hostname"}, "Path /etc/hostname exists, but is not a directory"},
		{[]string{"node=pve2,path=/a", "node=pve2,path=/b"}, "Node 'pve2' is specified 2 times."},
	} {
		kv := []string{"id", "bad"}
		for _, m := range tc.maps {
			kv = append(kv, "map", m)
		}
		if r := e.call("POST", "/cluster/mapping/dir", kv...); r.Status != 500 || r.Message != tc.want {
			t.Errorf("dir create %v: got %d %q, want %q", tc.maps, r.Status, r.Message, tc.want)
		}
	}

	starts := []startCase{
		{"usb mapped", "100", []string{"usb0", "mapping=stick"}, "OK"},
		{"usb unknown", "101", []string{"usb0", "mapping=nope"}, "USB device mapping not found for 'nope'"},
		{"usb hardware gone", "102", []string{"usb0", "mapping=gone"}, "USB Mapping invalid (hardware probably changed): usb device '1234:5678' not found"},
		{"dir mapped", "103", []string{"virtiofs0", "dirid=share"}, "OK"},
		{"dir unknown", "104", []string{"virtiofs0", "dirid=nope"}, "Directory ID nope does not exist."},
	}
	e.checkStarts(t, starts)
	if r := e.call("PUT", "/cluster/mapping/dir/share", "map", "node=pve,path=/nowhere"); r.Status != 500 || r.Message != "update directory mapping failed: Path /nowhere does not exist" {
		t.Errorf("dir update to a missing path: got %d %q", r.Status, r.Message)
	}
	dirs := e.rows("/cluster/mapping/dir", "check-node", "pve2")
	if len(dirs) != 1 || !strings.Contains(jsonString(t, dirs[0]["checks"]), "No mapping for node pve2.") {
		t.Errorf("dir mappings checked on pve2: got %v", dirs)
	}
	e.ok(nil, "DELETE", "/cluster/mapping/dir/share")
	if r := e.call("GET", "/cluster/mapping/dir/share"); r.Status != 500 || r.Message != "mapping 'share' not found" {
		t.Errorf("deleted dir mapping: got %d %q", r.Status, r.Message)
	}
}

package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// PCI mappings as pve-manager keeps them, and what a VM start makes of
// its hostpciN: a mapping needs an entry for the node that its hardware
// matches, a raw device must exist, pcie needs q35 (qemu-server
// QemuServer/PCI.pm parse_hostpci, parse_hostpci_devices;
// pve-guest-common Mapping/PCI.pm assert_valid).
func TestPCIMappingsAndStart(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	const good = "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "gpu0", "map", good, "description", "the GPU")
	if r := e.call("POST", "/cluster/mapping/pci", "id", "gpu0", "map", good); r.Status != 500 || r.Message != "create hardware mapping failed: pci ID 'gpu0' already defined" {
		t.Errorf("second create: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "wrong", "map", "node=pve,path=0000:01:00.0,id=1234:5678,iommugroup=14,subsystem-id=10de:1454")
	list := e.rows("/cluster/mapping/pci", "check-node", "pve")
	if len(list) != 2 || jsonString(t, list[0]["checks"]) != "[]" ||
		!strings.Contains(jsonString(t, list[1]["checks"]), "Invalid configuration: 'id' does not match for 'wrong' (10de:2204 != 1234:5678)") {
		t.Errorf("mappings checked on pve: got %v", list)
	}

	starts := []startCase{
		{"mapped", "100", []string{"machine", "q35", "hostpci0", "mapping=gpu0,pcie=1"}, "OK"},
		{"no entry", "101", []string{"hostpci0", "mapping=nope"}, "PCI device mapping not found for 'nope'"},
		{"hardware changed", "102", []string{"hostpci0", "mapping=wrong"},
			"PCI device mapping invalid (hardware probably changed): 'id' does not match for 'wrong' (10de:2204 != 1234:5678)"},
		{"pcie without q35", "103", []string{"hostpci0", "mapping=gpu0,pcie=1"}, "q35 machine model is not enabled"},
	}
	e.checkStarts(t, starts)

	if r := e.call("PUT", "/cluster/mapping/pci/gpu0", "description", "x"); r.Status != 500 || r.Message != "update hardware mapping failed: missing value for required option 'map'" {
		t.Errorf("update without map: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "DELETE", "/cluster/mapping/pci/wrong")
	if r := e.call("GET", "/cluster/mapping/pci/wrong"); r.Status != 500 || r.Message != "mapping 'wrong' not found" {
		t.Errorf("deleted mapping: got %d %q", r.Status, r.Message)
	}
}

// An update's delete list as SectionConfig's delete_from_config checks
// it: map is required, other keys are unknown, and a key may not be set
// and deleted at once.
func TestMappingDeleteRefusals(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	const pci = "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"
	const usb = "node=pve,id=0781:5583,path=1-2"
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "gpu0", "map", pci, "description", "the GPU")
	e.ok(nil, "POST", "/cluster/mapping/usb", "id", "stick", "map", usb, "description", "a flash drive")
	for _, c := range []struct{ path, m, del, also, want string }{
		{"pci/gpu0", pci, "map", "", "unable to delete required option 'map'"},
		{"pci/gpu0", pci, "mdev,nope", "", "no such option 'nope'"},
		{"pci/gpu0", pci, "mdev", "mdev", "cannot set and delete property 'mdev' at the same time!"},
		{"usb/stick", usb, "map", "", "unable to delete required option 'map'"},
		{"usb/stick", usb, "mdev", "", "no such option 'mdev'"},
		{"usb/stick", usb, "description", "description", "cannot set and delete property 'description' at the same time!"},
	} {
		args := []string{"map", c.m, "delete", c.del}
		if c.also != "" {
			args = append(args, c.also, "1")
		}
		r := e.call("PUT", "/cluster/mapping/"+c.path, args...)
		if r.Status != 500 || r.Message != "update hardware mapping failed: "+c.want {
			t.Errorf("%s delete %s: got %d %q", c.path, c.del, r.Status, r.Message)
		}
	}
	got := e.object("/cluster/mapping/pci/gpu0")
	if got["description"] != "the GPU" {
		t.Errorf("refused updates changed the mapping: %v", got)
	}
}

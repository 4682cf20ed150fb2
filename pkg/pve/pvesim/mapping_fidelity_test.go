package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// A USB map entry's id is compared with what sysfs reads, as configured
// (pve-guest-common Mapping/USB.pm assert_valid: $realId ne $id): the
// format's pattern takes upper case, the device's id is lower case, so an
// upper-case id matches no device.
func TestUSBMappingIDCase(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/mapping/usb", "id", "ups", "map", "node=pve,id=051D:0002,path=1-1.4")
	e.ok(nil, "POST", "/cluster/mapping/usb", "id", "ups2", "map", "node=pve,id=051D:0002")
	list := e.rowsBy("id", "/cluster/mapping/usb", "check-node", "pve")
	if got := jsonString(t, list["ups"]["errors"]); !strings.Contains(got, "Invalid configuration: 'id' does not match for 'ups' (051d:0002 != 051D:0002)") {
		t.Errorf("ups checked on pve: %s", got)
	}
	if got := jsonString(t, list["ups2"]["errors"]); !strings.Contains(got, "Invalid configuration: usb device '051D:0002' not found") {
		t.Errorf("ups2 checked on pve: %s", got)
	}
	e.checkStarts(t, []startCase{{"upper-case id", "100", []string{"usb0", "mapping=ups2"},
		"USB Mapping invalid (hardware probably changed): usb device '051D:0002' not found"}})
}

// The mapping lists proxy to check-node (proxyto_callback) before their
// handler runs: pveproxy looks the node up (pve-manager PVE/HTTPServer.pm
// rest_handler, remote_node_ip), so an unknown name fails its hostname
// lookup and a node that is down is not reached.
func TestMappingCheckNodeProxy(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	if err := e.Server.SetNodeOffline("pve2", true); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"pci", "usb", "dir"} {
		r := e.call("GET", "/cluster/mapping/"+typ, "check-node", "pve9")
		if want := "hostname lookup 'pve9' failed - failed to get address info for: pve9: Name or service not known"; r.Status != 500 || r.Message != want {
			t.Errorf("%s check-node pve9: got %d %q, want %q", typ, r.Status, r.Message, want)
		}
		if r := e.call("GET", "/cluster/mapping/"+typ, "check-node", "pve2"); r.Status != 595 {
			t.Errorf("%s check-node on the offline pve2: got %d %q, want 595", typ, r.Status, r.Message)
		}
	}
}

// A PCI mapping's booleans are kept as sent, 0 too: check_config keeps
// the value, SectionConfig.pm write_config writes any defined boolean,
// so GET answers mdev: 0 until the key is deleted.
func TestPCIMappingFalseBooleans(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	const good = "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "gpu0", "map", good, "mdev", "0", "live-migration-capable", "0")
	got := e.object("/cluster/mapping/pci/gpu0")
	if jsonString(t, got["mdev"]) != "0" || jsonString(t, got["live-migration-capable"]) != "0" {
		t.Errorf("GET after a create with mdev=0, live-migration-capable=0: %v", got)
	}
	e.ok(nil, "PUT", "/cluster/mapping/pci/gpu0", "map", good, "delete", "mdev", "live-migration-capable", "1")
	got = e.object("/cluster/mapping/pci/gpu0")
	if _, ok := got["mdev"]; ok || jsonString(t, got["live-migration-capable"]) != "1" {
		t.Errorf("GET after deleting mdev, live-migration-capable=1: %v", got)
	}
}

// A virtiofs directory with expose-acl does not start on a Windows VM
// (qemu-server Virtiofs.pm assert_virtiofs_config, Helpers.pm
// windows_version): checked once the node's entry is found.
func TestVirtiofsACLOnWindows(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/mapping/dir", "id", "share", "map", "node=pve,path=/srv/share")
	e.checkStarts(t, []startCase{
		{"acl on windows", "100", []string{"ostype", "win11", "virtiofs0", "dirid=share,expose-acl=1"},
			"Please disable ACLs for virtiofs on Windows VMs, otherwise the virtiofs shared directory cannot be mounted."},
		{"acl on linux", "101", []string{"ostype", "l26", "virtiofs0", "dirid=share,expose-acl=1"}, "OK"},
		{"no acl on windows", "102", []string{"ostype", "win11", "virtiofs0", "dirid=share"}, "OK"},
	})
}

// A PCI path given without its function is every function of the device
// (SysFSTools.pm lspci filters by prefix), and a mediated device cannot
// be one of several (qemu-server PCI.pm parse_hostpci).
func TestHostPCIMultifunctionMdev(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	const ids = ",id=10de:2204,iommugroup=14,subsystem-id=10de:1454"
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "whole", "map", "node=pve,path=0000:01:00"+ids)
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "fn0", "map", "node=pve,path=0000:01:00.0"+ids)
	e.checkStarts(t, []startCase{
		{"whole device", "100", []string{"hostpci0", "mapping=whole"}, "OK"},
		{"mdev on a whole device", "101", []string{"hostpci0", "mapping=whole,mdev=nvidia-35"},
			"cannot use mediated device with multifunction device"},
		{"mdev on one function", "102", []string{"hostpci0", "mapping=fn0,mdev=nvidia-35"}, "OK"},
	})
}

// A value with a line feed cannot be a config line: SectionConfig.pm
// check_value refuses it in check_config, schema checked or not — before
// the lock in a mapping's create, under it (prefixed) in its update, and
// in a metric server's create.
func TestSectionValueLineFeed(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	const pci = "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"
	e.ok(nil, "POST", "/cluster/mapping/usb", "id", "stick", "map", "node=pve,id=0781:5583,path=1-2")
	for _, c := range []struct {
		method, path string
		kv           []string
		want         string
	}{
		{"POST", "/cluster/mapping/pci", []string{"id", "gpu0", "map", pci, "description", "a\nb"}, "property contains a line feed"},
		{"POST", "/cluster/mapping/dir", []string{"id", "share", "map", "node=pve,path=/srv", "description", "a\nb"}, "property contains a line feed"},
		{"PUT", "/cluster/mapping/usb/stick", []string{"map", "node=pve,id=0781:5583", "description", "a\rb"},
			"update hardware mapping failed: property contains a line feed"},
		{"POST", "/cluster/metrics/server/in", []string{"type", "influxdb", "server", "127.0.0.9", "port", "8089", "bucket", "a\nb"}, "property contains a line feed"},
	} {
		if r := e.call(c.method, c.path, c.kv...); r.Status != 500 || r.Message != c.want {
			t.Errorf("%s %s: got %d %q, want 500 %q", c.method, c.path, r.Status, r.Message, c.want)
		}
	}
}

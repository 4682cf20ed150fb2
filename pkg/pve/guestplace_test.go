package pve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// PVE 7 listed a node's containers with vmid as a JSON string; the list
// is read the same either way.
func TestNodeGuestsVMIDAsString(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /nodes/pve/lxc", data(json.RawMessage(`[{"vmid":"200","name":"dns01","status":"running"},{"vmid":201,"name":"ct","status":"stopped"}]`)))
	rows, err := f.client(t).NodeGuests(context.Background(), LXC, "pve")
	if err != nil {
		t.Fatal(err)
	}
	want := []ClusterResource{
		{ID: "lxc/200", Type: "lxc", Node: "pve", VMID: 200, Name: "dns01", Status: "running"},
		{ID: "lxc/201", Type: "lxc", Node: "pve", VMID: 201, Name: "ct", Status: "stopped"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// The migration check reads PVE's 0/1 and booleans alike and keeps what
// the planner decides on.
func TestMigrationCheckDecoding(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /nodes/pve/qemu/100/migrate", data(json.RawMessage(`{"running":1,"allowed_nodes":[],
		"not_allowed_nodes":{"pve2":{"unavailable-resources":["hostpci0"]}},
		"local_disks":[{"volid":"local-lvm:vm-100-disk-0","size":8589934592,"cdrom":0,"is_unused":0,"drivename":"scsi0"},
			{"volid":"local:iso/a.iso","size":1024,"cdrom":true,"is_unused":false,"drivename":"ide2"}],
		"local_resources":["hostpci0"],"mapped-resources":["hostpci0"],
		"mapped-resource-info":{"hostpci0":{"name":"gpu0"}},"has-dbus-vmstate":1}`)))
	got, err := f.client(t).MigrationCheck(context.Background(), "pve", 100, "pve2")
	if err != nil {
		t.Fatal(err)
	}
	want := &MigrationCheck{
		Running: true, AllowedNodes: []string{},
		NotAllowed:     map[string]NodeBlockers{"pve2": {UnavailableResources: []string{"hostpci0"}}},
		LocalDisks:     []LocalDisk{{Volid: "local-lvm:vm-100-disk-0", Size: 8589934592, DriveName: "scsi0"}, {Volid: "local:iso/a.iso", Size: 1024, CDROM: true, DriveName: "ide2"}},
		LocalResources: []string{"hostpci0"},
		Mapped:         map[string]MappedDevice{"hostpci0": {Name: "gpu0"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("check (-want +got):\n%s", diff)
	}
	if q := f.requests()[0].Query; q != "target=pve2" {
		t.Errorf("query %q, want target=pve2", q)
	}
}

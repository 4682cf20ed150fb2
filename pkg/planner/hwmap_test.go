package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

const hwmapSpec = `kind: HardwareMapping
name: gpu
spec:
  type: pci
  description: the GPU
  map:
    - node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454
    - {node: pve2, path: "0000:01:00.0", id: "10de:2204", iommugroup: 14, subsystem-id: "10de:1454"}
---
kind: HardwareMapping
name: stick
spec:
  type: usb
  map: ["node=pve,id=0781:5583,path=1-2"]
---
kind: HardwareMapping
name: share
spec:
  type: dir
  description: shared files
  map: [{node: pve, path: /srv/share}]
---
kind: QemuVM
name: hw
spec:
  node: pve
  machine: q35
  hostpci0: mapping=gpu,pcie=1
  usb0: mapping=stick
  virtiofs0: share
  running: true
`

// TestSimHardwareMappingLifecycle: one apply makes a pci, a usb and a dir
// mapping, then the VM that uses all three (after them: it starts); the
// next plan is clean; hand edits (an entry dropped, a description
// changed) are found and restored, a description the spec does not write is
// left alone; destroy removes the VM before the
// mappings.
func TestSimHardwareMappingLifecycle(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	ctx := context.Background()
	set := loadSpec(t, hwmapSpec)
	applyCounted(t, sim, set, "first plan", engine.Create, 4)
	wantClean(t, planFor(t, sim, set, engine.Options{}), "second plan")
	get := getter(t, sim.cl)
	if c := get("/cluster/mapping/pci/gpu"); c.Get("description") != "the GPU" || !strings.Contains(c.Get("map"), "node=pve2,") {
		t.Errorf("pci mapping: got %v", c)
	}
	if c := get("/cluster/mapping/dir/share"); c.Get("map") != `["node=pve,path=/srv/share"]` {
		t.Errorf("dir mapping: got %v", c)
	}

	for _, call := range []struct {
		path string
		kv   map[string][]string
	}{
		{"/cluster/mapping/pci/gpu", map[string][]string{"map": {"node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"}}},
		{"/cluster/mapping/dir/share", map[string][]string{"map": {"node=pve,path=/srv/share"}, "description": {"changed"}}},
		{"/cluster/mapping/usb/stick", map[string][]string{"map": {"node=pve,id=0781:5583,path=1-2"}, "description": {"added"}}},
	} {
		if err := sim.cl.Do(ctx, "PUT", call.path, call.kv, nil); err != nil {
			t.Fatalf("PUT %s: %v", call.path, err)
		}
	}
	// The usb mapping's description is not written in the spec: not
	// pvectl's, left alone.
	applyCounted(t, sim, set, "plan after hand edits", engine.Update, 2)
	wantClean(t, planFor(t, sim, set, engine.Options{}), "plan after restore")
	if c := get("/cluster/mapping/dir/share"); c.Get("description") != "shared files" {
		t.Errorf("dir description not restored: %v", c)
	}

	d := planFor(t, sim, set, engine.Options{Destroy: true})
	var order []string
	for _, c := range d.Changes {
		if c.Action == engine.Delete {
			order = append(order, c.Resource.Address())
		}
	}
	if len(order) != 4 || order[0] != "QemuVM/hw" {
		t.Fatalf("destroy order: got %v, want the VM first", order)
	}
	applyPlan(t, sim, d)
	for _, typ := range []string{"pci", "usb", "dir"} {
		var rows []*pve.Config
		if err := sim.cl.Do(ctx, "GET", "/cluster/mapping/"+typ, nil, &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 0 {
			t.Errorf("destroy left %s mappings %v", typ, rows)
		}
	}
}

// TestSimMappedDevicePreflight: a token that may configure VMs but holds
// nothing on a mapping gets a plan refused naming Mapping.Use (and the
// mapping it cannot see); with PVEMappingUser on /mapping/pci/gpu it
// passes the GPU to a VM without being root, as qemu-server's
// check_hostpci_perm allows, and PVE starts it.
func TestSimMappedDevicePreflight(t *testing.T) {
	admin := newSim(t)
	const mapping = `kind: HardwareMapping
name: gpu
spec:
  type: pci
  map: ["node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"]
`
	applyPlan(t, admin, planFor(t, admin, loadSpec(t, mapping), engine.Options{}))
	tok, id := asToken(t, admin, "ci@pve", "gpu")
	grantBoth(t, admin, "ci@pve", id, "/vms", "PVEVMAdmin")
	grantBoth(t, admin, "ci@pve", id, "/storage", "PVEDatastoreUser")
	grantBoth(t, admin, "ci@pve", id, "/sdn/zones/localnetwork", "PVESDNUser")
	set := loadSpec(t, mapping+`---
kind: QemuVM
name: cuda
spec:
  node: pve
  memory: 1024
  machine: q35
  scsi0: local-lvm:4
  hostpci0: mapping=gpu,pcie=1
  running: true
`)
	_, err := tryPlan(t, tok, set, engine.Options{})
	wantSays(t, err,
		"HardwareMapping/gpu: the API token ci@pve!gpu lacks Mapping.Audit or Mapping.Use or Mapping.Modify on /mapping/pci/gpu, needed to see the mapping",
		"QemuVM/cuda: the API token ci@pve!gpu lacks Mapping.Use on /mapping/pci/gpu, needed to set hostpci0",
	)
	grantBoth(t, admin, "ci@pve", id, "/mapping/pci/gpu", "PVEMappingUser")
	p := planFor(t, tok, set, engine.Options{})
	if s := p.Summary(); s.Create != 1 {
		t.Fatalf("got %+v (%q), want the VM created", s, summary(p))
	}
	applyPlan(t, tok, p)
	wantClean(t, planFor(t, tok, set, engine.Options{}), "plan after apply")
}

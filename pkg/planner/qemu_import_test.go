package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// Issue 23 (5): a cloud image imported at a size of the spec's is one
// apply — created as STORAGE:0,import-from (all PVE takes), then grown —
// and the image's DownloadedImage comes first; the next plan is clean.
func TestSimImportThenGrow(t *testing.T) {
	sim, _ := newDataSim(t)
	set := loadSpec(t, `kind: DownloadedImage
name: noble
spec:
  node: pve
  storage: local
  content: import
  filename: noble-server-cloudimg-amd64.qcow2
  url: https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img
---
kind: QemuVM
name: cloud-vm
spec:
  node: pve
  memory: 1024
  scsihw: virtio-scsi-pci
  scsi0: local-lvm:20,import-from=local:import/noble-server-cloudimg-amd64.qcow2
`)
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"create DownloadedImage/noble", "create QemuVM/cloud-vm <- DownloadedImage/noble"})
	var vm *engine.Change
	for _, c := range p.Changes {
		if c.Address == "QemuVM/cloud-vm" {
			vm = c
		}
	}
	if !slicesContain(vm.Reasons, "scsi0: imported from local:import/noble-server-cloudimg-amd64.qcow2 at the image's size, then grown to 20G") {
		t.Errorf("the plan does not say the disk is imported then grown: %q", vm.Reasons)
	}
	applyPlan(t, sim, p)
	vmid := stateOf(vm).Created
	cfg, err := sim.cl.QemuConfig(context.Background(), "pve", vmid)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Get("scsi0"); !strings.HasSuffix(got, "size=20G") {
		t.Errorf("scsi0 %q: want the imported disk grown to 20G", got)
	}
	wantConverged(t, t.Errorf, sim, set, "second plan")
}

func slicesContain(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

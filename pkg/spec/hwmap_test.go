package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHardwareMappingLoad(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: HardwareMapping
name: gpu
spec:
  type: pci
  description: the GPU
  live-migration-capable: true
  map:
    - node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454
    - {node: pve2, id: "10de:2204", path: "0000:01:00.0", iommugroup: 14, subsystem-id: "10de:1454"}
---
kind: HardwareMapping
name: share
spec:
  type: dir
  map: [{node: pve, path: /srv/share}]
---
kind: QemuVM
name: app
spec:
  node: pve
  hostpci0: mapping=gpu,pcie=1
  virtiofs0: share
`}, nil)
	gpu := set.Lookup("HardwareMapping/gpu")
	if diff := cmp.Diff(map[string]string{"id": "gpu", "description": "the GPU", "live-migration-capable": "1"}, gpu.Params.Map()); diff != "" {
		t.Errorf("gpu params (-want +got):\n%s", diff)
	}
	want := []string{"node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454",
		"node=pve2,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"}
	if diff := cmp.Diff(want, MappingKeys(gpu).Entries); diff != "" {
		t.Errorf("gpu entries (-want +got):\n%s", diff)
	}
	if got, want := set.Lookup("QemuVM/app").DependsOn, []Ref{{"HardwareMapping", "gpu"}, {"HardwareMapping", "share"}}; !cmp.Equal(got, want) {
		t.Errorf("QemuVM/app DependsOn: got %v want %v", got, want)
	}
}

// Bad input: each problem at its file:line, before any API call.
func TestHardwareMappingBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"no type", "kind: HardwareMapping\nname: mm\nspec:\n  map: [\"node=pve,id=0781:5583\"]\n", "spec.type is required"},
		{"bad type", "kind: HardwareMapping\nname: mm\nspec:\n  type: gpu\n  map: [\"node=pve,id=0781:5583\"]\n", `a.yaml:4: HardwareMapping/mm: spec.type "gpu": want pci, usb or dir`},
		{"no map", "kind: HardwareMapping\nname: mm\nspec:\n  type: usb\n", "spec.map is required"},
		{"mdev on usb", "kind: HardwareMapping\nname: mm\nspec:\n  type: usb\n  mdev: true\n  map: [\"node=pve,id=0781:5583\"]\n", "a.yaml:5: HardwareMapping/mm: mdev is an option of pci mappings only"},
		{"bad usb id", "kind: HardwareMapping\nname: mm\nspec:\n  type: usb\n  map:\n    - node=pve,id=0781:5583\n    - node=pve2,id=zz\n", "a.yaml:7: HardwareMapping/mm: map[1]: invalid format - id: value does not match the regex pattern"},
		{"unknown sub-key", "kind: HardwareMapping\nname: mm\nspec:\n  type: dir\n  map: [{node: pve, path: /srv, xattr: 1}]\n", "property 'xattr' is not defined"},
		{"dir node twice", "kind: HardwareMapping\nname: mm\nspec:\n  type: dir\n  map:\n    - node=pve,path=/a\n    - node=pve,path=/b\n", "a.yaml:7: HardwareMapping/mm: map[1]: node pve has a second entry"},
		{"guest node missing", "kind: HardwareMapping\nname: gpu\nspec:\n  type: pci\n  map: [\"node=pve,path=0000:01:00.0,id=10de:2204\"]\n---\nkind: QemuVM\nname: app\nspec:\n  node: pve2\n  hostpci0: mapping=gpu\n",
			"a.yaml:11: QemuVM/app: hostpci0 names pci mapping gpu (HardwareMapping/gpu), which has no entry for node pve2 (its nodes: pve): PVE does not start the guest (\"PCI device mapping not found for 'gpu'\")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadFiles(t, map[string]string{"a.yaml": tc.doc}, nil)
			if !strings.Contains(strings.Join(diags, "\n"), tc.want) {
				t.Errorf("diagnostics:\n%s\nwant one containing %q", strings.Join(diags, "\n"), tc.want)
			}
		})
	}
}

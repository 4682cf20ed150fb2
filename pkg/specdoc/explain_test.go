package specdoc

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

func explainText(t *testing.T, path string, d *schema.Descriptions) string {
	t.Helper()
	var b strings.Builder
	if err := Explain(&b, path, ExplainOptions{Descriptions: d}); err != nil {
		t.Fatalf("explain %s: %v", path, err)
	}
	return b.String()
}

func TestExplain(t *testing.T) {
	d, err := schema.LoadDescriptions(apidocPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want []string
	}{
		// The acceptance: type, range and description.
		{"QemuVM.net0.tag", []string{"TYPE:        integer", "RANGE:       1 … 4094", "VLAN tag to apply to packets on this interface.",
			"Updated in place with PUT /nodes/{node}/qemu/{vmid}/config.", "On a running VM: applied at once", "vmconfig_update_net"}},
		{"qemuvm.spec.net3", []string{"FIELD:       net3 (one of net0 … net31)", "SUB-KEYS:    bridge, firewall", "SHORTHANDS:  e1000", "hotplug option includes network"}},
		{"QemuVM.cores", []string{"RANGE:       at least 1", "DEFAULT:     1", "stays pending until the VM restarts"}},
		{"QemuVM.ostype", []string{"ENUM:        other, wxp"}},
		{"QemuVM.node", []string{"Updated in place with POST /nodes/{node}/qemu/{vmid}/migrate", "migrates online"}},
		{"QemuVM.scsi0.file", []string{"moves the disk there with POST /nodes/{node}/qemu/{vmid}/move_disk (delete=1)"}},
		{"LxcContainer.rootfs", []string{"move_volume (delete=1; PVE moves a container's volumes only while it is stopped"}},
		{"QemuVM.vmid", []string{"Names the VM"}},
		{"QemuVM.storage", []string{"Used only to create the VM"}},
		{"QemuVM.scsi0", []string{"ALIASES:", "volume (for file)", "grows the disk with PUT /nodes/{node}/qemu/{vmid}/resize"}},
		{"QemuVM.scsi0.size", []string{"Updated in place with PUT /nodes/{node}/qemu/{vmid}/resize", "A disk only grows"}},
		{"QemuVM.machine", []string{"ALIAS:       i440fx is written as pc"}},
		{"QemuVM.tags", []string{`separated by ";"`, "($fast_plug_option)"}},
		{"QemuVM.running", []string{"(a pvectl key)", "TYPE:        boolean", "status/start"}},
		{"QemuVM.dependsOn", []string{"a document key"}},
		{"QemuVM", []string{"CREATE:      POST /nodes/{node}/qemu", "IDENTITY:    vmid when set, else name", "net0…net31", "PVECTL KEYS", "running", "fromTemplate"}},
		{"Template", []string{"CREATE:      POST /nodes/{node}/qemu", "baseImage                string, required", "provision",
			"UPDATE:      none: a template is kept as it is or rebuilt, never updated in place"}},
		{"Template.cores", []string{"Replaces the template: it is part of the recipe"}},
		{"Template.scsi0.size", []string{"Replaces the template: it is part of the recipe"}},
		{"Template.node", []string{"Replaces the template: node is part of the recipe", "it is not migrated"}},
		{"Template.template", []string{"Fixed: a Template always has template=1"}},
		{"Template.name", []string{"Names the template"}},
		{"Template.sshUser", []string{"Used only to create the template (how the bake reaches the VM"}},
		{"QemuVM.fromTemplate", []string{"Clone a Template of these specs"}},
		{"HardwareMapping", []string{"CREATE:      POST /cluster/mapping/pci", "PATHS:       pci in these paths is the spec's type: /cluster/mapping/pci, /cluster/mapping/usb or /cluster/mapping/dir"}},
		{"LxcContainer.unprivileged", []string{"Replaces the container: PVE cannot convert a container"}},
		{"LxcContainer.mp0", []string{"a new one is added at once"}},
		{"LinuxBridge.type", []string{`always "bridge"`, "Fixed: a LinuxBridge always has type=bridge"}},
		{"Connection.tokenSecret", []string{"SECRET:      yes", "${VAR}"}},
		{"Defaults", []string{"Kinds: ACL, APIToken, ", " Connection, ", " QemuVM, "}},
		{"Defaults.QemuVM.memory", []string{"KIND:        QemuVM", "FIELD:       memory"}},
	} {
		t.Run(c.path, func(t *testing.T) {
			got := explainText(t, c.path, d)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestExplainWithoutDescriptions(t *testing.T) {
	got := explainText(t, "QemuVM.net0.tag", nil)
	for _, w := range []string{"RANGE:       1 … 4094", "--apidoc FILE", "pve-docs/api-viewer/apidoc.js"} {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q:\n%s", w, got)
		}
	}
}

func TestExplainUnknown(t *testing.T) {
	for _, c := range []struct {
		path, suggestion string
		planned          bool
	}{
		{"QemVM", "QemuVM", false},
		{"Qemu", "QemuVM", false},
		{"Nothing", "", false},
		{"QemuVM.memroy", "memory", false},
		{"QemuVM.nte1", "net1", false},
		{"QemuVM.net0.tga", "tag", false},
		{"QemuVM.cores.x", "", false},
		{"QemuVM.net0.tag.x", "", false},
	} {
		t.Run(c.path, func(t *testing.T) {
			err := Explain(&strings.Builder{}, c.path, ExplainOptions{})
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("got %v, want a NotFoundError", err)
			}
			if nf.Suggestion != c.suggestion || nf.Planned != c.planned {
				t.Errorf("got suggestion %q planned %v (%v), want %q %v", nf.Suggestion, nf.Planned, err, c.suggestion, c.planned)
			}
		})
	}
}

// TestExplainEveryField: every kind, field and sub-key explains, so new
// rows and keys are covered without edits here.
func TestExplainEveryField(t *testing.T) {
	n := 0
	for _, k := range spec.KindSpecs() {
		paths := []string{k.Kind}
		for _, key := range k.Keys() {
			if slices.Contains(k.Unsupported, key) {
				continue
			}
			paths = append(paths, k.Kind+"."+key)
			if p, ok := k.Param(key); ok {
				for _, sub := range slices.Sorted(maps.Keys(p.SubKeys())) {
					paths = append(paths, k.Kind+"."+key+"."+sub)
				}
			}
		}
		for _, p := range paths {
			if err := Explain(&strings.Builder{}, p, ExplainOptions{}); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			n++
		}
	}
	if n < 300 {
		t.Errorf("explained only %d paths", n)
	}
}

// A Template is kept or rebuilt: explain never says one of its fields is
// updated in place, nor names an update call for the kind.
func TestExplainTemplateNeverUpdated(t *testing.T) {
	ks, ok := spec.SpecOf("Template")
	if !ok {
		t.Fatal("no Template kind")
	}
	if got := explainText(t, "Template", nil); strings.Contains(got, "UPDATE:      PUT") {
		t.Errorf("the kind names an update call:\n%s", got)
	}
	for _, key := range ks.Keys() {
		if got := explainText(t, "Template."+key, nil); strings.Contains(got, "Updated in place") || strings.Contains(got, "On a running") {
			t.Errorf("Template.%s says it is updated in place:\n%s", key, got)
		}
	}
}

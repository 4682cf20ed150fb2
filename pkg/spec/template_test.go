package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTemplateLoad(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: Template
name: golden
spec:
  baseImage: ubuntu-24.04
  cores: 4
  ip: 10.0.5.50
---
kind: QemuVM
name: app
spec:
  fromTemplate: golden
`}, nil)
	var tpl, vm *Resource
	for _, r := range set.Resources {
		switch r.Kind {
		case KindTemplate:
			tpl = r
		case KindQemuVM:
			vm = r
		}
	}
	if tpl.Params.Get("template") != "1" || tpl.Params.Get("name") != "golden" || tpl.Params.Get("machine") != "q35" || tpl.Params.Get("ipconfig0") != "ip=10.0.5.50/24,gw=10.0.5.1" {
		t.Errorf("template params %v", tpl.Params)
	}
	var deps []string
	for _, d := range vm.DependsOn {
		deps = append(deps, d.String())
	}
	if !slices.Contains(deps, "Template/golden") {
		t.Errorf("QemuVM/app depends on %v, want Template/golden (fromTemplate)", deps)
	}
	if got := CloneSource(vm); got != "Template/golden" {
		t.Errorf("CloneSource = %q", got)
	}
	if vm.Params.Get("machine") != "q35" {
		t.Errorf("a fromTemplate clone gets machine q35, got %v", vm.Params)
	}
}

func TestTemplateDiagnostics(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"baseImage is required", "kind: Template\nname: t\nspec:\n  cores: 2\n",
			[]string{`a.yaml:1: Template/t: spec.baseImage is required: the PVE template to bake it from (its VMID, or a part of its name that only one template has)`}},
		{"keys a template does not take", "kind: Template\nname: t\nspec:\n  baseImage: x\n  running: true\n  image: y\n",
			[]string{`a.yaml:5: unknown field "running" in Template spec`, `a.yaml:6: unknown field "image" in Template spec`}},
		{"template is fixed", "kind: Template\nname: t\nspec:\n  baseImage: x\n  template: false\n",
			[]string{`a.yaml:5: spec.template must be "1" for a Template, got "0"`}},
		{"fromTemplate with image", "kind: Template\nname: t\nspec: {baseImage: x}\n---\nkind: QemuVM\nname: v\nspec:\n  image: x\n  fromTemplate: t\n",
			[]string{`a.yaml:9: QemuVM/v: spec.image and spec.fromTemplate both say what the VM is cloned from: write one of them`}},
		{"fromTemplate naming an absent Template", "kind: Template\nname: t\nstate: absent\nspec: {baseImage: x}\n---\nkind: QemuVM\nname: v\nspec:\n  fromTemplate: t\n",
			[]string{`a.yaml:9: QemuVM/v: fromTemplate: Template/t has state: absent`}},
		{"baseImage on a VM", "kind: QemuVM\nname: v\nspec:\n  baseImage: x\n",
			[]string{`a.yaml:4: unknown field "baseImage" in QemuVM spec`}},
		{"a Template and a VM of one name", "kind: Template\nname: t\nspec: {baseImage: x}\n---\nkind: QemuVM\nname: t\n",
			[]string{`VM name "t"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := loadFiles(t, map[string]string{"a.yaml": tt.yaml}, nil)
			if strings.Contains(tt.want[0], ".yaml:") {
				for i := range got {
					if j := strings.Index(got[i], " (supported"); j > 0 {
						got[i] = got[i][:j]
					}
					if j := strings.Index(got[i], " — did you mean"); j > 0 {
						got[i] = got[i][:j]
					}
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("diagnostics (-want +got):\n%s", diff)
				}
				return
			}
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tt.want[0]) {
				t.Errorf("got %v, want one naming %s", got, tt.want[0])
			}
		})
	}
}

package spec

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestProvisionKeys(t *testing.T) {
	doc := func(spec string) string {
		return "kind: QemuVM\nname: vm\nspec:\n" + spec
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string // diagnostics; nil: loads
	}{
		{"ok", map[string]string{"a.yaml": doc("  provision: [pb/common.yaml, site.pp]\n  forceConfigCheck: true\n  provisionTimeout: 30s\n  sshPort: 2222\n"),
			"pb/common.yaml": "- hosts: all\n", "site.pp": "notice('x')\n"}, nil},
		{"one string", map[string]string{"a.yaml": doc("  provision: pb/common.yaml\n"), "pb/common.yaml": "- hosts: all\n"}, nil},
		{"missing file", map[string]string{"a.yaml": doc("  cores: 1\n  provision:\n    - nope.yaml\n")},
			[]string{"a.yaml:6: QemuVM/vm: spec.provision: file nope.yaml not found"}},
		{"bad extension", map[string]string{"a.yaml": doc("  provision: [run.sh]\n"), "run.sh": "true\n"},
			[]string{"a.yaml:4: QemuVM/vm: spec.provision: provision file run.sh: unknown extension"}},
		{"listed twice", map[string]string{"a.yaml": doc("  provision: [a.yml, a.yml]\n"), "a.yml": "\n"},
			[]string{"a.yaml:4: QemuVM/vm: spec.provision lists a.yml twice"}},
		{"bad timeout", map[string]string{"a.yaml": doc("  provisionTimeout: soon\n")},
			[]string{`a.yaml:4: QemuVM/vm: spec.provisionTimeout must be a positive duration like 90s, 10m or 1h, got "soon"`}},
		{"stopped", map[string]string{"a.yaml": doc("  running: false\n  provision: a.yml\n"), "a.yml": "\n"},
			[]string{"a.yaml:4: QemuVM/vm: spec.running is false but spec.provision needs the VM running"}},
		{"template", map[string]string{"a.yaml": doc("  template: true\n  provision: a.yml\n"), "a.yml": "\n"},
			[]string{"a.yaml:5: QemuVM/vm: spec.provision: a template never runs"}},
		{"container has none", map[string]string{"a.yaml": "kind: LxcContainer\nname: ct\nspec:\n  provision: a.yml\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n", "a.yml": "\n"},
			[]string{`a.yaml:4: unknown field "provision" in LxcContainer spec`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, diags := loadFiles(t, tt.files, nil, "a.yaml")
			if len(diags) != len(tt.want) {
				t.Fatalf("diagnostics %q, want %q", diags, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(diags[i], w) {
					t.Errorf("diagnostic %q, want prefix %q", diags[i], w)
				}
			}
			if tt.want != nil {
				return
			}
			p := Provisioning(set.Resources[0])
			if p == nil || len(p.ProvisionPaths) != len(p.Provision) {
				t.Fatalf("provisioning keys %+v", p)
			}
			for i, path := range p.ProvisionPaths {
				if !filepath.IsAbs(path) || !strings.HasSuffix(path, filepath.FromSlash(p.Provision[i])) {
					t.Errorf("path %s of %s", path, p.Provision[i])
				}
			}
		})
	}
}

func TestProvisionKeysAreOwnKeys(t *testing.T) {
	k := kindOf(KindQemuVM)
	for _, key := range ProvisionKeyNames {
		if _, ok := k.ownType(key); !ok {
			t.Errorf("QemuVM does not take %s", key)
		}
	}
	if _, ok := k.ownType("provisionPaths"); ok {
		t.Error("provisionPaths is Load's, not a spec key")
	}
	if slices.Contains(k.Unsupported, "provision") {
		t.Error("provision still marked unsupported")
	}
}

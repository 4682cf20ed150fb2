package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const apidoc = "../../testdata/pve-api/apidoc-9.1.json"

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute("test", args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// The acceptance: `pvectl explain QemuVM.net0.tag` prints type,
// range and description.
func TestExplainCommand(t *testing.T) {
	t.Setenv("PVECTL_APIDOC", apidoc)
	code, out, errs := run(t, "explain", "QemuVM.net0.tag")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	containsAll(t, "output", out, "TYPE:        integer", "RANGE:       1 … 4094", "VLAN tag to apply to packets on this interface.")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"explain", "QemuVM.memroy"}, 3, `QemuVM has no field "memroy" — did you mean "memory"?`},
		{[]string{"explain", "Template.baseImage"}, 0, "The PVE template this Template is baked from"},
		{[]string{"explain"}, 0, "QemuVM           POST /nodes/{node}/qemu"}, // issue 23: the kinds, not an error
		{[]string{"explain", "QemuVM", "LxcContainer"}, 3, "accepts at most 1 arg"},
		{[]string{"explain", "QemuVM.cores", "--apidoc", "/nonexistent/apidoc.js"}, 3, "read PVE's API documentation"},
		{[]string{"explain", "QemuVM.cores", "--apidoc", ""}, 0, "not built into pvectl"},
	} {
		code, out, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", c.args, code, c.code, c.want, out, errs)
		}
	}
}

func TestSchemaCommand(t *testing.T) {
	t.Setenv("PVECTL_APIDOC", "")
	code, out, errs := run(t, "schema")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	committed, err := os.ReadFile("../../docs/pvectl.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(committed) {
		t.Error("pvectl schema differs from docs/pvectl.schema.json: run `make generate`")
	}
	code, out, _ = run(t, "schema", "--apidoc", apidoc)
	if code != 0 || !strings.Contains(out, "VLAN tag to apply to packets on this interface.") || strings.Contains(out, `"$id"`) {
		t.Errorf("schema --apidoc: exit %d, PVE's descriptions and no $id wanted", code)
	}
}

func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	specs := filepath.Join(dir, "specs.yaml")
	os.WriteFile(specs, []byte("kind: Pool\nname: lab\n---\nkind: QemuVM\nname: web\nspec:\n  memroy: 1\n---\nkind: QemuVM\nname: db\n"), 0o644)
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("profiles:\n  lab: {url: https://pve.lab.example.com:8006}\n  prod: {url: https://pve.example.com:8006}\n"), 0o644)
	t.Setenv("PVECTL_CONFIG", "")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"targets of plan", []string{"plan", "-f", specs, "--target", ""}, []string{"Pool/lab", "QemuVM/db", "QemuVM/web"}},
		{"targets by prefix", []string{"destroy", "-f", dir, "--target", "QemuVM/"}, []string{"QemuVM/db", "QemuVM/web"}},
		{"targets without specs", []string{"apply", "--target", ""}, nil},
		{"profiles", []string{"plan", "--config", cfg, "--profile", ""}, []string{"lab", "prod"}},
		{"explain kinds", []string{"explain", "Qemu"}, []string{"QemuVM."}},
		{"import kinds", []string{"import", "L"}, []string{"LinuxBridge/", "LxcContainer/"}},
		{"import: no config drive", []string{"import", "Con"}, nil},
		{"explain fields", []string{"explain", "QemuVM.runn"}, []string{"QemuVM.running"}},
		{"explain sub-keys", []string{"explain", "QemuVM.net0.t"}, []string{"QemuVM.net0.tag", "QemuVM.net0.trunks"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, append([]string{"__complete"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasPrefix(l, ":") {
					got = append(got, l)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if code, out, _ := run(t, "completion", shell); code != 0 || !strings.Contains(out, "pvectl") {
			t.Errorf("completion %s: exit %d", shell, code)
		}
	}
}

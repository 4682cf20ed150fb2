package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// An update of ip and vlan (issue 23 item 6): the plan text, a saved
// plan's show and its Markdown name the keys the user wrote; --json keeps
// PVE's paths (and the contract's fields only: parsePlan refuses others).
// A VM written with PVE's own keys is shown with them.
func TestE2EUpdateNamesConvenienceKeys(t *testing.T) {
	env := startSim(t)
	const conv = "kind: QemuVM\nname: web\nspec:\n  vmid: 170\n  memory: 512\n  running: false\n  ip: 10.0.0.5/24\n  bridge: vmbr0\n  vlan: 30\n"
	const raw = "---\nkind: QemuVM\nname: db\nspec:\n  vmid: 171\n  memory: 512\n  running: false\n  ipconfig0: ip=10.0.0.7/24,gw=10.0.0.1\n  net0: virtio,bridge=vmbr0,tag=30\n"
	env.mustRun(0, "apply", "-f", writeSpec(t, "a.yaml", conv+raw), "--auto-approve")

	edit := strings.NewReplacer("10.0.0.5/24", "10.0.0.6/24", "vlan: 30", "vlan: 40", "10.0.0.7/24", "10.0.0.8/24", "tag=30", "tag=40")
	f := writeSpec(t, "b.yaml", edit.Replace(conv+raw))
	planFile := filepath.Join(t.TempDir(), "plan.out")
	text := env.mustRun(0, "plan", "-f", f, "--out", planFile, "--no-color").stdout
	show := env.mustRun(0, "show", planFile).stdout
	md := env.mustRun(0, "show", planFile, "--markdown").stdout
	for name, tc := range map[string]struct {
		out, sym string
	}{"plan": {text, "~"}, "show": {show, "~"}, "markdown": {md, "!"}} {
		containsAll(t, name, tc.out,
			tc.sym+` ip: "10.0.0.5/24" → "10.0.0.6/24"`, tc.sym+" vlan: 30 → 40",
			tc.sym+` ipconfig0.ip: "10.0.0.7/24" → "10.0.0.8/24"`, tc.sym+" net0.tag: 30 → 40",
		)
		if n := strings.Count(tc.out, "ipconfig0") + strings.Count(tc.out, "net0"); n != 2 {
			t.Errorf("%s names PVE's keys %d times, want 2 (db's only):\n%s", name, n, tc.out)
		}
	}

	p := parsePlan(t, env.mustRun(0, "plan", "-f", f, "--json").stdout)
	want := map[string]string{"QemuVM/web": "ipconfig0.ip net0.tag", "QemuVM/db": "ipconfig0.ip net0.tag"}
	for _, c := range p.Changes {
		var paths []string
		for _, d := range c.Diff {
			paths = append(paths, d.Path)
		}
		if got := strings.Join(paths, " "); c.Action != "update" || got != want[c.Address] {
			t.Errorf("--json %s: %s %q, want an update of %q", c.Address, c.Action, got, want[c.Address])
		}
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
)

func writeSpec(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The seeded vmbr0 written as a read-only LinuxBridge and a VM on it: apply
// creates only the VM; destroy removes the VM and leaves vmbr0; the same
// document naming a missing bridge fails the plan.
func TestE2EManagedFalse(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	const doc = "kind: LinuxBridge\nname: vmbr0\nmanaged: false\nspec:\n  node: pve\n---\n" +
		"kind: QemuVM\nname: web\nspec:\n  vmid: 160\n  memory: 512\n  net0: virtio,bridge=vmbr0\n"
	f := writeSpec(t, "ro.yaml", doc)
	r := env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if !strings.Contains(r.stdout, "1 changed") {
		t.Errorf("apply: want only the VM changed, got:\n%s", r.stdout)
	}
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
	env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	if _, err := env.client.QemuConfig(ctx, "pve", 160); !pve.IsNotFound(err) {
		t.Errorf("VM 160 after destroy: %v, want gone", err)
	}
	assertIface(t, env, "vmbr0", true)

	missing := writeSpec(t, "missing.yaml", strings.ReplaceAll(doc, "vmbr0", "vmbr9"))
	r = env.mustRun(1, "plan", "-f", missing)
	if !strings.Contains(r.stderr, "LinuxBridge/vmbr9 does not exist, and it is managed: false") {
		t.Errorf("plan with a missing read-only bridge: got\n%s", r.stderr)
	}
}

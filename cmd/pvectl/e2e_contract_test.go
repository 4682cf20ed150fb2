package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

func writeSpec(t *testing.T, name, body string) string {
	t.Helper()
	return writeTemp(t, name, body, 0o644)
}

// writeTemp writes body to a file name with mode perm in a new temporary
// directory.
func writeTemp(t *testing.T, name, body string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// A QemuVM and an LxcContainer with one vmid: exit 3 naming both lines,
// before any API call.
func TestE2ESharedVMIDRefused(t *testing.T) {
	env := startSim(t)
	f := writeSpec(t, "guests.yaml", "kind: QemuVM\nname: vm\nspec:\n  vmid: 150\n---\nkind: LxcContainer\nname: ct\nspec:\n  vmid: 150\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n")
	for _, cmd := range []string{"validate", "plan"} {
		r := env.mustRun(3, cmd, "-f", f)
		if !strings.Contains(r.stderr, "guests.yaml:9: LxcContainer/ct has the same vmid 150 as QemuVM/vm (at "+f+":4)") {
			t.Errorf("%s: want both lines named, got:\n%s", cmd, r.stderr)
		}
	}
	if n := env.requests.Total(); n != 0 {
		t.Errorf("%d API requests for an invalid spec, want 0", n)
	}
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
	if !strings.Contains(r.stdout, "Apply complete: 1 created.") {
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

// An LXC container through the CLI, schema-checked: create, clean plan,
// destroy.
func TestE2ELxcContainer(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	f := writeSpec(t, "ct.yaml", "kind: LxcContainer\nname: dns01\nspec:\n  vmid: 200\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n"+
		"  rootfs: local-lvm:8\n  memory: 512\n  net0: name=eth0,bridge=vmbr0,ip=dhcp\n  unprivileged: true\n  running: true\n")
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	st, err := env.client.GuestStatus(ctx, pve.LXC, "pve", 200)
	if err != nil || st.Status != "running" {
		t.Fatalf("CT 200 after apply: %+v, %v want running", st, err)
	}
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
	env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	if _, err := env.client.GuestConfig(ctx, pve.LXC, "pve", 200); !pve.IsNotFound(err) {
		t.Errorf("CT 200 after destroy: %v, want gone", err)
	}
}

// TestE2EExamplesDir is `make demo`'s job as a test: every spec in
// examples/ validates, applies, and plans clean afterwards, on the demo's
// two nodes (07-cluster-ops.yaml replicates to pve2) with the demo's
// LDAP bind password in the environment.
func TestE2EExamplesDir(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond}, nil)
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples")
	vars := []string{"PROXMOX_URL=" + env.url, "PROXMOX_TOKEN_ID=" + e2eTokenID, "PROXMOX_TOKEN_SECRET=" + e2eTokenSecret, "LDAP_BIND_PW=demo-bind-password"}
	env.mustRun(0, "validate", "-f", dir)
	env.runEnv(0, vars, "apply", "-f", dir, "--auto-approve")
	env.runEnv(0, vars, "plan", "-f", dir, "--detailed-exitcode")
}

// TestE2EExplainFromCluster: with only a connection configured, explain
// takes PVE's descriptions from the documentation the node serves beside
// its API (the simulator serves the copy it is given, as a node serves
// /usr/share/pve-docs).
func TestE2EExplainFromCluster(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{APIDocFile: apidoc}, nil)
	r := env.mustRun(0, "explain", "QemuVM.net0.tag")
	if !strings.Contains(r.stdout, "VLAN tag to apply to packets on this interface.") {
		t.Errorf("explain with a connection: no PVE description in\n%s", r.stdout)
	}
	bare := startSim(t) // serves no documentation: explain still works
	r = bare.mustRun(0, "explain", "QemuVM.net0.tag")
	if strings.Contains(r.stdout, "VLAN tag to apply") || !strings.Contains(r.stdout, "1 … 4094") {
		t.Errorf("explain without served documentation:\n%s", r.stdout)
	}
}

// TestE2EEveryKind is issue 8's acceptance over the design's example 04,
// unchanged: every kind applies, the second plan is clean, destroy removes
// them all. The cluster first gets the PCI mapping gpu0 the VM names (an
// operator's setup, outside the specs).
func TestE2EEveryKind(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{DataDir: t.TempDir()}, nil)
	env.addGPUMapping()
	f := example(t, "04-every-kind.yaml", nil)
	secrets := filepath.Join(filepath.Dir(f), "secrets")
	env.mustRun(0, "validate", "-f", f)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
	if fi, err := os.Stat(filepath.Join(secrets, "ci-deploy.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the token's secretFile: %v %v, want mode 0600", fi, err)
	}
	r := env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	if strings.Contains(r.stdout, "kept") {
		t.Errorf("destroy kept something:\n%s", r.stdout)
	}
	r = env.mustRun(2, "plan", "-f", f, "--detailed-exitcode", "--json")
	p := parsePlan(t, r.stdout)
	for _, c := range p.Changes {
		if c.Action != "create" && c.Action != "noop" && c.Action != "apply" {
			t.Errorf("after destroy: %s %s, want everything to be created again", c.Action, c.Address)
		}
	}
}

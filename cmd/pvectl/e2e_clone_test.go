package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
)

// stagingStack is the design's example 02 without its provision lines,
// with the bridge its VLAN needs (vmbr1) and the node's network commit.
func stagingStack(t *testing.T) string {
	t.Helper()
	return example(t, "02-staging-stack.yaml", func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "provision:") || strings.Contains(l, "- playbooks/") {
				continue
			}
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n") + "\n---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_vlan_aware: true\n---\nkind: NetworkApply\nname: pve\n"
	})
}

// qemuGuests lists node pve's QEMU guests, templates included, from the
// node's own list (current, unlike /cluster/resources' names).
func (e *simEnv) qemuGuests() []pve.ClusterResource {
	e.t.Helper()
	rows, err := e.client.NodeGuests(context.Background(), pve.QEMU, "pve")
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// qemuByName finds the QEMU guest on node pve named name that is a
// template or not, as template says.
func (e *simEnv) qemuByName(name string, template bool) (pve.ClusterResource, bool) {
	e.t.Helper()
	for _, r := range e.qemuGuests() {
		if r.Name == name && r.Template == template {
			return r, true
		}
	}
	return pve.ClusterResource{}, false
}

// vmByName finds a VM (not a template) on node pve by name.
func (e *simEnv) vmByName(name string) (pve.ClusterResource, bool) {
	e.t.Helper()
	return e.qemuByName(name, false)
}

func (e *simEnv) vmConfig(name string) *pve.Config {
	e.t.Helper()
	row, ok := e.vmByName(name)
	if !ok {
		e.t.Fatalf("no VM %s", name)
	}
	cfg, err := e.client.QemuConfig(context.Background(), row.Node, row.VMID)
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

// Issue 7's acceptance for clones and the reference provider's VM
// conveniences: the staging stack applies (clones of the seeded template,
// by name and by vmid), the second plan is clean, PVE holds the addresses,
// VLAN, keys and machine the conveniences stand for; drift shows exactly
// what changed in a managed key; destroy keeps the protected VM.
func TestE2EStagingStackClones(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	f := stagingStack(t)

	r := env.mustRun(0, "apply", "-f", f, "--auto-approve")
	containsAll(t, "apply output", r.stdout, "full clone of template 9000 (ubuntu-24.04-cloud) on node pve", "Apply complete: 3 created, 1 network commit.")
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")

	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMu2dTvNNTWYm9t4yw0mvQSzLvd9EcVBNi3AZdCpq7Bu ops@example.com"
	db, app := env.vmConfig("ix-sto1-db01"), env.vmConfig("ix-sto1-app01")
	if got := db.Get("ipconfig0"); got != "ip=10.8.10.50/24,gw=10.8.10.1" {
		t.Errorf("ix-sto1-db01 ipconfig0 = %q, want ip=10.8.10.50/24,gw=10.8.10.1", got)
	}
	for _, want := range []string{"bridge=vmbr1", "tag=2010", "virtio="} {
		if !strings.Contains(db.Get("net0"), want) {
			t.Errorf("ix-sto1-db01 net0 = %q, want %s in it", db.Get("net0"), want)
		}
	}
	if keys, err := url.PathUnescape(db.Get("sshkeys")); err != nil || keys != key {
		t.Errorf("ix-sto1-db01 sshkeys = %q (%q, %v), want the Defaults key %q", db.Get("sshkeys"), keys, err, key)
	}
	if db.Get("machine") != "q35" {
		t.Errorf("ix-sto1-db01 machine = %q, want q35 (the default for clones)", db.Get("machine"))
	}
	if got := app.Get("ipconfig0"); got != "ip=10.8.10.51/24,gw=10.8.10.254" {
		t.Errorf("ix-sto1-app01 ipconfig0 = %q, want ip=10.8.10.51/24,gw=10.8.10.254", got)
	}
	if app.Get("machine") != "pc" {
		t.Errorf("ix-sto1-app01 machine = %q, want pc (i440fx)", app.Get("machine"))
	}
	for _, name := range []string{"ix-sto1-db01", "ix-sto1-app01"} {
		if row, _ := env.vmByName(name); row.Status != "running" {
			t.Errorf("%s is %s, want running (a clone is started)", name, row.Status)
		}
	}

	// A key the spec does not name changes: no drift. Memory changes:
	// exactly that drift.
	row, _ := env.vmByName("ix-sto1-db01")
	if err := env.client.UpdateQemu(ctx, "pve", row.VMID, url.Values{"onboot": {"1"}, "description": {"by hand"}}); err != nil {
		t.Fatal(err)
	}
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
	if err := env.client.UpdateQemu(ctx, "pve", row.VMID, url.Values{"memory": {"2048"}}); err != nil {
		t.Fatal(err)
	}
	p := parsePlan(t, env.mustRun(0, "plan", "-f", f, "--json").stdout)
	for _, c := range p.Changes {
		switch {
		case c.Address == "QemuVM/ix-sto1-db01":
			if c.Action != "update" || len(c.Diff) != 1 || c.Diff[0].Path != "memory" || c.Diff[0].Before != "2048" || c.Diff[0].After != "4096" {
				t.Errorf("ix-sto1-db01: %s %+v, want an update of exactly memory 2048 → 4096", c.Action, c.Diff)
			}
		case c.Action != "noop":
			t.Errorf("%s: %s, want noop", c.Address, c.Action)
		}
	}

	// A cloud-init change is an update, and the drive is made anew.
	f2 := filepath.Join(t.TempDir(), "stack.yaml")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f2, []byte(strings.Replace(string(b), "ip: 10.8.10.50", "ip: 10.8.10.60", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = env.mustRun(0, "apply", "-f", f2, "--auto-approve")
	if !strings.Contains(r.stdout, "regenerating the cloud-init drive of vm") || !strings.Contains(r.stdout, "Apply complete: 1 updated.") {
		t.Errorf("cloud-init change:\n%s", r.stdout)
	}
	if got := env.vmConfig("ix-sto1-db01").Get("ipconfig0"); got != "ip=10.8.10.60/24,gw=10.8.10.1" {
		t.Errorf("ipconfig0 after the change: %q", got)
	}
	env.mustRun(0, "plan", "-f", f2, "--detailed-exitcode")

	r = env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	if !strings.Contains(r.stdout, "QemuVM/ix-sto1-db01 (protected)") {
		t.Errorf("destroy does not say it kept the protected VM:\n%s", r.stdout)
	}
	if _, ok := env.vmByName("ix-sto1-app01"); ok {
		t.Error("ix-sto1-app01 exists after destroy")
	}
	if _, ok := env.vmByName("ix-sto1-db01"); !ok {
		t.Error("ix-sto1-db01 (protected) is gone after destroy")
	}
}

// Two applies at once, each of VMs without vmid (issue 10, 1c): their
// workers pick distinct vmids within each apply, and an id the other
// apply took first is given up for the next free one — no failures, every
// VM once.
func TestE2EParallelAppliesTakeDistinctVMIDs(t *testing.T) {
	env := startSim(t)
	var files [2]string
	for i := range files {
		var b strings.Builder
		for j := 1; j <= 8; j++ {
			fmt.Fprintf(&b, "---\nkind: QemuVM\nname: run%d-vm-%d\nspec:\n  memory: 512\n", i, j)
		}
		files[i] = filepath.Join(t.TempDir(), "vms.yaml")
		if err := os.WriteFile(files[i], []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var res [2]result
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Without the run lock, as two clients that do not know of each
			// other (another tool, or --lock=false).
			res[i] = env.run("apply", "-f", files[i], "--auto-approve", "--parallelism", "8", "--lock=false")
		}()
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Errorf("apply %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	env.wantVMs(16)
	for _, f := range files {
		env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
	}
}

// A golden template made from the seeded one, a VM cloned from it that
// replaces an older VM: every call under the schema checker, and both
// plans clean afterwards.
func TestE2ETemplateAndReplace(t *testing.T) {
	env := startSim(t)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.yaml")
	second := filepath.Join(dir, "second.yaml")
	if err := os.WriteFile(first, []byte("kind: QemuVM\nname: golden\nspec:\n  image: ubuntu-24.04\n  template: true\n  cores: 4\n"+
		"---\nkind: QemuVM\nname: app-v1\nspec:\n  memory: 512\n  running: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, []byte("kind: QemuVM\nname: app-v2\nspec:\n  image: golden\n  full: false\n  ip: 10.0.0.7\n  replace: app-v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env.mustRun(0, "apply", "-f", first, "--auto-approve")
	env.mustRun(0, "plan", "-f", first, "--detailed-exitcode")
	r := env.mustRun(0, "apply", "-f", second, "--auto-approve")
	if !strings.Contains(r.stdout, "(linked clone)") || !strings.Contains(r.stdout, "(app-v1) on node pve, which this VM replaces") {
		t.Errorf("apply:\n%s", r.stdout)
	}
	if _, ok := env.vmByName("app-v1"); ok {
		t.Error("app-v1 exists after app-v2 replaced it")
	}
	if row, ok := env.vmByName("app-v2"); !ok || row.Status != "running" {
		t.Errorf("app-v2: %+v %v, want running", row, ok)
	}
	env.mustRun(0, "plan", "-f", second, "--detailed-exitcode")
}

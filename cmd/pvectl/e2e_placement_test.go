package main

// Issue 7's acceptance for disks, placement, power, UEFI/PCI and
// containers: the built binary against the simulator, every request and
// answer checked against PVE 9.1's schema.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// changeOf is the plan's change of addr, failing the test without one.
func changeOf(t *testing.T, p jsonPlan, addr string) (action string, paths []string, reasons []string) {
	t.Helper()
	for _, c := range p.Changes {
		if c.Address == addr {
			for _, d := range c.Diff {
				paths = append(paths, d.Path)
			}
			return c.Action, paths, c.Reasons
		}
	}
	t.Fatalf("the plan has no change of %s: %+v", addr, p)
	return "", nil, nil
}

// Example 01 with scsi0 grown to 40 plans a resize, not a replace, and
// applies it; shrunk to 16 the plan fails saying PVE cannot shrink;
// running: false stops the VM; each second plan is clean.
func TestE2EDiskGrowShrinkAndPower(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	env.mustRun(0, "apply", "-f", example(t, "01-bridge-and-vm.yaml", nil), "--auto-approve")

	grown := example(t, "01-bridge-and-vm.yaml", func(s string) string { return strings.Replace(s, "scsi0: local-lvm:32", "scsi0: local-lvm:40", 1) })
	p := parsePlan(t, env.mustRun(0, "plan", "-f", grown, "--json").stdout)
	action, paths, _ := changeOf(t, p, "QemuVM/app-vm-1")
	if action != "update" || strings.Join(paths, ",") != "scsi0.size" || p.Summary["replace"] != 0 {
		t.Fatalf("scsi0 grown to 40: got %s %v (summary %v), want an update of scsi0.size", action, paths, p.Summary)
	}
	env.mustRun(0, "apply", "-f", grown, "--auto-approve")
	cfg, err := env.client.QemuConfig(ctx, "pve", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Get("scsi0"), "local-lvm:vm-100-disk-0,") || !strings.Contains(cfg.Get("scsi0"), "size=40G") {
		t.Errorf("scsi0 after the resize: %q, want the same volume at 40G", cfg.Get("scsi0"))
	}
	env.mustRun(0, "plan", "-f", grown, "--detailed-exitcode")

	shrunk := example(t, "01-bridge-and-vm.yaml", func(s string) string { return strings.Replace(s, "scsi0: local-lvm:32", "scsi0: local-lvm:16", 1) })
	r := env.mustRun(1, "plan", "-f", shrunk)
	if !strings.Contains(r.stderr, "QemuVM/app-vm-1: scsi0: PVE cannot shrink a disk (40G → 16G)") {
		t.Errorf("plan of a shrunk disk: stderr\n%s", r.stderr)
	}

	stopped := example(t, "01-bridge-and-vm.yaml", func(s string) string { return strings.Replace(s, "running: true", "running: false", 1) })
	stopped = rewrite(t, stopped, "scsi0: local-lvm:32", "scsi0: local-lvm:40")
	env.mustRun(0, "apply", "-f", stopped, "--auto-approve")
	if st, err := env.client.QemuStatus(ctx, "pve", 100); err != nil || st.Status != "stopped" {
		t.Errorf("VM 100 after running: false: %+v %v, want stopped", st, err)
	}
	env.mustRun(0, "plan", "-f", stopped, "--detailed-exitcode")
}

// rewrite replaces old by new in the spec file at path and returns it.
func rewrite(t *testing.T, path, old, new string) string {
	t.Helper()
	return writeSpec(t, "edited.yaml", strings.Replace(string(readFile(t, path)), old, new, 1))
}

// A change a running VM cannot take at once is shown as pending until
// reboot in plan and apply; with rebootOnPending the VM is rebooted and
// nothing stays pending.
func TestE2EPendingUntilReboot(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	env.mustRun(0, "apply", "-f", example(t, "01-bridge-and-vm.yaml", nil), "--auto-approve")

	more := example(t, "01-bridge-and-vm.yaml", func(s string) string { return strings.Replace(s, "cores: 2", "cores: 4", 1) })
	if r := env.mustRun(0, "plan", "-f", more); !strings.Contains(r.stdout, "# pending until reboot: cores (the running vm cannot take them at once)") {
		t.Errorf("plan does not say cores is pending until reboot:\n%s", r.stdout)
	}
	if r := env.mustRun(0, "apply", "-f", more, "--auto-approve"); !strings.Contains(r.stdout, "vm 100: pending until reboot: cores") {
		t.Errorf("apply does not say cores is pending until reboot:\n%s", r.stdout)
	}
	if keys, err := env.client.QemuPendingKeys(ctx, "pve", 100); err != nil || strings.Join(keys, ",") != "cores" {
		t.Fatalf("pending after apply: %v %v, want cores", keys, err)
	}
	env.mustRun(0, "plan", "-f", more, "--detailed-exitcode")

	reboot := rewrite(t, more, "running: true", "running: true\n  rebootOnPending: true")
	r := env.mustRun(0, "plan", "-f", reboot, "--json")
	if action, _, reasons := changeOf(t, parsePlan(t, r.stdout), "QemuVM/app-vm-1"); action != "update" ||
		!strings.Contains(strings.Join(reasons, "\n"), "pending until reboot since an earlier change: cores; rebootOnPending: vm 100 will be rebooted") {
		t.Errorf("plan with rebootOnPending: %s %q", action, reasons)
	}
	if r := env.mustRun(0, "apply", "-f", reboot, "--auto-approve"); !strings.Contains(r.stdout, "rebooting vm 100") {
		t.Errorf("apply with rebootOnPending did not reboot:\n%s", r.stdout)
	}
	if keys, err := env.client.QemuPendingKeys(ctx, "pve", 100); err != nil || len(keys) != 0 {
		t.Errorf("pending after the reboot: %v %v", keys, err)
	}
	if st, err := env.client.QemuStatus(ctx, "pve", 100); err != nil || st.Status != "running" {
		t.Errorf("VM 100 after the reboot: %+v %v", st, err)
	}
	env.mustRun(0, "plan", "-f", reboot, "--detailed-exitcode")
}

// everyKindCompute is example 04's UEFI + PCI VM and container without
// their pool and config drive (and so without the other kinds).
func everyKindCompute(s string) string {
	var keep []string
	for _, doc := range strings.Split(s, "\n---\n") {
		if !strings.Contains(doc, "kind: LxcContainer") && !strings.Contains(doc, "kind: QemuVM") {
			continue
		}
		var lines []string
		for _, l := range strings.Split(doc, "\n") {
			switch t := strings.TrimSpace(l); {
			case strings.HasPrefix(t, "pool:"), strings.HasPrefix(t, "configDrive:"), strings.HasPrefix(t, "connection:"):
				continue
			}
			lines = append(lines, l)
		}
		keep = append(keep, strings.Join(lines, "\n"))
	}
	return strings.Join(keep, "\n---\n") + "\n"
}

// The UEFI + PCI VM and the container of example 04 apply and plan clean;
// the VM starts once the cluster has the resource mapping it names.
func TestE2EEveryKindComputeUEFIAndPCI(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	f := example(t, "04-every-kind.yaml", everyKindCompute)
	if s := string(readFile(t, f)); !strings.Contains(s, "hostpci0: mapping=gpu0,pcie=1") || !strings.Contains(s, "kind: LxcContainer") || strings.Contains(s, "pool:") {
		t.Fatalf("the extracted spec is not what the test means:\n%s", s)
	}
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")

	cfg, err := env.client.QemuConfig(ctx, "pve", 300)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("bios") != "ovmf" || !strings.HasPrefix(cfg.Get("efidisk0"), "local-lvm:vm-300-disk-") || !strings.Contains(cfg.Get("efidisk0"), "pre-enrolled-keys=1") ||
		cfg.Get("hostpci0") != "mapping=gpu0,pcie=1" || cfg.Get("machine") != "q35" {
		t.Errorf("VM 300: bios %q efidisk0 %q hostpci0 %q machine %q", cfg.Get("bios"), cfg.Get("efidisk0"), cfg.Get("hostpci0"), cfg.Get("machine"))
	}
	if st, err := env.client.GuestStatus(ctx, pve.LXC, "pve", 200); err != nil || st.Status != "running" {
		t.Errorf("CT 200: %+v %v, want running", st, err)
	}

	// Started without a mapping gpu0, the VM fails as PVE's does; with one
	// (PVE's API makes it), it runs.
	running := rewrite(t, f, "hostpci0: mapping=gpu0,pcie=1", "hostpci0: mapping=gpu0,pcie=1\n  running: true")
	r := env.mustRun(1, "apply", "-f", running, "--auto-approve")
	if !strings.Contains(r.stdout+r.stderr, "PCI device mapping not found for 'gpu0'") {
		t.Errorf("start without the mapping:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	env.addGPUMapping()
	env.mustRun(0, "apply", "-f", running, "--auto-approve")
	if st, err := env.client.QemuStatus(ctx, "pve", 300); err != nil || st.Status != "running" {
		t.Errorf("VM 300 with its mapping: %+v %v, want running", st, err)
	}
	env.mustRun(0, "plan", "-f", running, "--detailed-exitcode")
}

// On two nodes, a running VM whose node changes migrates: same vmid,
// still running, its disks on the target; the next plan is clean.
func TestE2EMigrateRunningVM(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond}, nil)
	ctx := context.Background()
	const doc = "kind: QemuVM\nname: mover\nspec:\n  node: pve\n  vmid: 100\n  memory: 2048\n  scsi0: local-lvm:8\n" +
		"  efidisk0: local-lvm:1,efitype=4m\n  bios: ovmf\n  net0: virtio,bridge=vmbr0\n  running: true\n"
	f := writeSpec(t, "vm.yaml", doc)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	before, err := env.client.QemuConfig(ctx, "pve", 100)
	if err != nil {
		t.Fatal(err)
	}

	moved := writeSpec(t, "moved.yaml", strings.Replace(doc, "node: pve", "node: pve2", 1))
	p := parsePlan(t, env.mustRun(0, "plan", "-f", moved, "--json").stdout)
	action, paths, reasons := changeOf(t, p, "QemuVM/mover")
	if action != "update" || strings.Join(paths, ",") != "node" || !strings.Contains(strings.Join(reasons, "\n"), "migrates vm 100 from pve to pve2 (online") {
		t.Fatalf("plan of the node change: %s %v %q, want an online migration", action, paths, reasons)
	}
	r := env.mustRun(0, "apply", "-f", moved, "--auto-approve")
	if !strings.Contains(r.stdout, "migrating vm 100 from pve to pve2 (online, with local disks") {
		t.Errorf("apply output:\n%s", r.stdout)
	}
	if _, err := env.client.QemuConfig(ctx, "pve", 100); !pveNotFound(err) {
		t.Errorf("VM 100 on pve after the migration: %v, want gone", err)
	}
	after, err := env.client.QemuConfig(ctx, "pve2", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scsi0", "efidisk0", "net0"} {
		if before.Get(k) != after.Get(k) {
			t.Errorf("%s: %q before, %q after", k, before.Get(k), after.Get(k))
		}
	}
	if st, err := env.client.QemuStatus(ctx, "pve2", 100); err != nil || st.Status != "running" {
		t.Errorf("VM 100 on pve2: %+v %v, want running", st, err)
	}
	for node, want := range map[string]int{"pve": 0, "pve2": 2} {
		vols, err := env.client.StorageContent(ctx, node, "local-lvm", "images")
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, v := range vols {
			if v.VMID == 100 {
				got++
			}
		}
		if got != want {
			t.Errorf("local-lvm of %s lists %d volumes of VM 100, want %d", node, got, want)
		}
	}
	env.mustRun(0, "plan", "-f", moved, "--detailed-exitcode")
}

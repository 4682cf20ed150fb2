package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 23 (3), docs/ci.md's recipe: a PVEAuditor token plans a change —
// exit 2, the plan shown, the missing privileges grouped into the grants
// that fix them — and apply with that token refuses before any write,
// from the specs and from the saved plan; the deploy token applies the
// saved plan.
func TestE2EReviewPlanWithAuditor(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	tok := e.privsepToken(t, "ci@pve", "plan", grant{"/", "PVEAuditor"})
	auditor := append([]string{"PROXMOX_URL=" + e.url}, tok.env()...)
	f := example(t, "01-bridge-and-vm.yaml", nil)
	planFile := filepath.Join(t.TempDir(), "plan.out")

	r := e.runEnv(2, auditor, "plan", "-f", f, "--detailed-exitcode", "--out", planFile)
	if !strings.Contains(r.stdout, "+ QemuVM/app-vm-1") || !strings.Contains(r.stdout, "Plan: 2 to create") {
		t.Errorf("the review plan is not shown:\n%s", r.stdout)
	}
	containsAll(t, "plan stderr", r.stderr,
		"Warning: the token may not make 3 of these changes",
		"grant PVEVMAdmin on /vms to ci@pve!plan — needed by 1 change (QemuVM/app-vm-1)",
		"pveum acl modify /vms --roles PVEVMAdmin --tokens 'ci@pve!plan' --users ci@pve",
		"on /nodes to ci@pve!plan",
	)
	if strings.Count(r.stderr, "grant ") > 5 {
		t.Errorf("the warnings are not grouped into few grants:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, tok.Value) {
		t.Error("pvectl printed the token's secret")
	}

	// strict keeps the refusal.
	e.runEnv(1, auditor, "plan", "-f", f, "--privileges=strict")
	e.runEnv(3, auditor, "plan", "-f", f, "--privileges=maybe")

	// apply with the auditor token: refused before any write, both ways.
	// (The run lock, a pool it may not make, refuses first; without it,
	// the plan's own needs do.)
	r = e.runEnv(1, auditor, "apply", planFile)
	if !strings.Contains(r.stderr, "needed to take pvectl's run lock") {
		t.Errorf("apply of the saved plan with the auditor token:\n%s", r.stderr)
	}
	r = e.runEnv(1, auditor, "apply", planFile, "--lock=false")
	if !strings.Contains(r.stderr, "lacks privileges the plan's changes need; nothing was changed") ||
		!strings.Contains(r.stderr, "QemuVM/app-vm-1: the API token ci@pve!plan lacks VM.Allocate on /vms/100") {
		t.Errorf("apply of the saved plan with the auditor token:\n%s", r.stderr)
	}
	e.runEnv(1, auditor, "apply", "-f", f, "--auto-approve", "--lock=false")
	if _, err := e.client.QemuConfig(ctx, "pve", 100); err == nil {
		t.Fatal("an apply with the auditor token created the VM")
	}

	// The deploy token (the simulator's admin) applies the reviewed plan.
	e.runEnv(0, []string{"PROXMOX_TOKEN_SECRET=" + e2eTokenSecret, "PROXMOX_TOKEN_ID=" + e2eTokenID}, "apply", planFile)
	e.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// Issue 23 (9): on a terminal, plan says what it reads before the plan
// appears; through a pipe it does not.
func TestE2EPlanSaysItReads(t *testing.T) {
	e := startSim(t)
	typer, term := openPTY(t)
	var screen syncBuffer
	go func() { _, _ = io.Copy(&screen, typer) }()
	f := example(t, "01-bridge-and-vm.yaml", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pvectlBin, "plan", "-f", f, "--no-color")
	cmd.Env = append(e.environ(), "HOME="+t.TempDir())
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = term, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("plan on a terminal: %v\n%s", err, stderr.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(screen.String(), "Plan: ") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := screen.String()
	if i := strings.Index(got, "Reading the live state of 3 resources through 1 connection"); i < 0 || i > strings.Index(got, "Plan: ") {
		t.Errorf("plan on a terminal does not say what it reads first:\n%s", got)
	}
	r := e.run("plan", "-f", f)
	if strings.Contains(r.stdout, "Reading the live state") {
		t.Errorf("plan through a pipe says it reads:\n%s", r.stdout)
	}
}

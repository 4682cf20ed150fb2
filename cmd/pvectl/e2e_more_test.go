package main

import (
	"bufio"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// plan --out + apply FILE applies exactly that plan; a plan whose live
// config digest moved since is refused.
func TestE2ESavedPlan(t *testing.T) {
	env := startSim(t)
	ctx := context.Background()
	f := example(t, "01-bridge-and-vm.yaml", nil)
	planFile := filepath.Join(t.TempDir(), "plan.out")
	env.mustRun(0, "plan", "-f", f, "--out", planFile)
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), e2eTokenSecret) {
		t.Error("the plan file holds the token secret")
	}
	env.mustRun(0, "apply", planFile)
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")

	// A plan made, then the VM changed behind pvectl's back: refused.
	f2 := example(t, "01-bridge-and-vm.yaml", func(s string) string { return strings.Replace(s, "cores: 2", "cores: 3", 1) })
	stale := filepath.Join(t.TempDir(), "stale.out")
	env.mustRun(0, "plan", "-f", f2, "--out", stale)
	if err := env.client.UpdateQemu(ctx, "pve", 100, url.Values{"memory": {"3072"}}); err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(1, "apply", stale)
	if !strings.Contains(r.stderr, "QemuVM/app-vm-1") {
		t.Errorf("refusal does not name the changed resource:\n%s", r.stderr)
	}
	cfg, err := env.client.QemuConfig(ctx, "pve", 100)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("cores") != "2" {
		t.Errorf("a refused plan changed cores to %q", cfg.Get("cores"))
	}
}

// --debug traces HTTP on stderr with the secret redacted; apply without a
// terminal needs --auto-approve.
func TestE2EDebugRedactsAndApplyNeedsApproval(t *testing.T) {
	env := startSim(t)
	f := example(t, "01-bridge-and-vm.yaml", nil)
	r := env.mustRun(0, "plan", "-f", f, "--debug")
	if !strings.Contains(r.stderr, "/cluster/resources") || !strings.Contains(r.stderr, "REDACTED") {
		t.Errorf("--debug trace lacks the request or the redaction mark:\n%s", r.stderr)
	}
	r = env.mustRun(3, "apply", "-f", f)
	if !strings.Contains(r.stderr, "--auto-approve") {
		t.Errorf("apply without a terminal should ask for --auto-approve:\n%s", r.stderr)
	}
	if _, err := env.client.QemuConfig(context.Background(), "pve", 100); !pveNotFound(err) {
		t.Errorf("apply without approval created VM 100 (err %v)", err)
	}
}

// destroy keeps protected resources, with a notice.
func TestE2EDestroyKeepsProtected(t *testing.T) {
	env := startSim(t)
	f := example(t, "01-bridge-and-vm.yaml", func(s string) string {
		return strings.Replace(s, "name: app-vm-1\n", "name: app-vm-1\nprotected: true\n", 1)
	})
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	r := env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	containsAll(t, "destroy output", r.stdout, "QemuVM/app-vm-1 is protected and will be kept", "LinuxBridge/vmbr1 will be kept")
	if _, err := env.client.QemuConfig(context.Background(), "pve", 100); err != nil {
		t.Errorf("protected VM 100 was removed: %v", err)
	}
}

// A failing change skips only its dependents; the summary says what was and
// was not done; after the cause is fixed a rerun converges. The failure is
// one no plan can foresee: the VM's bridge is only staged on the node (a
// hand edit not committed), so PVE creates the VM and cannot start it.
func TestE2EFailureSkipsDependentsAndRerunConverges(t *testing.T) {
	env := startSim(t)
	stageBridge(t, env, "vmbr9")
	dir := t.TempDir()
	spec := func(bridge string) string {
		return `kind: Pool
name: ok-pool
spec:
  comment: independent
---
kind: QemuVM
name: broken
spec:
  vmid: 150
  memory: 512
  net0: virtio,bridge=` + bridge + `
  running: true
---
kind: QemuVM
name: after-broken
dependsOn: [QemuVM/broken]
spec:
  vmid: 151
  memory: 512
`
	}
	f := filepath.Join(dir, "s.yaml")
	os.WriteFile(f, []byte(spec("vmbr9")), 0o644)
	r := env.mustRun(1, "apply", "-f", f, "--auto-approve")
	containsAll(t, "summary", r.stdout, "QemuVM/broken", "QemuVM/after-broken", "Pool/ok-pool")
	if _, err := env.client.QemuConfig(context.Background(), "pve", 151); !pveNotFound(err) {
		t.Errorf("the dependent of a failed change was applied (err %v)", err)
	}
	pools, err := env.client.Pools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !hasPool(pools, "ok-pool") {
		t.Errorf("the independent pool was not created: %+v", pools)
	}
	os.WriteFile(f, []byte(spec("vmbr0")), 0o644)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// stageBridge stages a bridge on node pve without committing it, as a
// hand edit in the web UI does: it is in the node's interfaces.new, not
// up, so a VM on it is created but does not start.
func stageBridge(t *testing.T, env *simEnv, name string) {
	t.Helper()
	if err := env.client.CreateIface(context.Background(), "pve", url.Values{"iface": {name}, "type": {"bridge"}, "autostart": {"1"}}); err != nil {
		t.Fatal(err)
	}
}

// The demo's directory of examples applies and converges.
func TestE2EExamplesDirectory(t *testing.T) {
	env := startSim(t)
	dir := examplesDir(t, nil, "01-bridge-and-vm.yaml", "02-pool-and-worker.yaml")
	env.mustRun(0, "validate", "-f", dir)
	env.mustRun(2, "plan", "-f", dir, "--detailed-exitcode")
	env.mustRun(0, "apply", "-f", dir, "--auto-approve", "--parallelism", "2")
	env.mustRun(0, "plan", "-f", dir, "--detailed-exitcode")
	env.mustRun(0, "destroy", "-f", dir, "--auto-approve")
	r := env.mustRun(0, "plan", "-f", dir, "--json")
	p := parsePlan(t, r.stdout)
	if p.Summary["create"] != 4 {
		t.Errorf("after destroy the plan creates %d resources, want 4 (summary %v)", p.Summary["create"], p.Summary)
	}
}

// simProcess runs `pvectl sim` on a free loopback port and returns its URL
// and the lines it printed before it said where it listens.
func simProcess(t *testing.T, args ...string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	args = append([]string{"sim", "--listen", "127.0.0.1:0", "--token", e2eTokenID + "=" + e2eTokenSecret}, args...)
	cmd := exec.CommandContext(ctx, pvectlBin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	re := regexp.MustCompile(`listening on (https?://127\.0\.0\.1:\d+)`)
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, e2eTokenSecret) {
			t.Errorf("sim printed the token secret: %s", line)
		}
		lines = append(lines, line)
		if m := re.FindStringSubmatch(line); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], lines
		}
	}
	t.Fatalf("sim did not say where it listens:\n%s", strings.Join(lines, "\n"))
	return "", nil
}

// `pvectl sim` serves the API a client can use.
func TestE2ESimCommand(t *testing.T) {
	u, _ := simProcess(t)
	env := &simEnv{t: t, url: u}
	r := env.mustRun(0, "plan", "-f", example(t, "01-bridge-and-vm.yaml", nil), "--json")
	p := parsePlan(t, r.stdout)
	if p.Summary["create"] != 2 {
		t.Errorf("plan against a fresh sim: summary %v, want 2 creates (bridge, VM)", p.Summary)
	}
}

// TLS is verified: an unknown certificate fails with its fingerprint and how
// to pin it; pinned, the same plan works.
func TestE2ETLSFingerprintPinning(t *testing.T) {
	u, lines := simProcess(t, "--tls")
	var fp string
	for _, l := range lines {
		if _, after, ok := strings.Cut(l, "fingerprint: "); ok {
			fp = strings.TrimSpace(after)
		}
	}
	if fp == "" {
		t.Fatalf("sim --tls printed no fingerprint:\n%s", strings.Join(lines, "\n"))
	}
	f := example(t, "01-bridge-and-vm.yaml", nil)
	env := &simEnv{t: t, url: u}
	r := env.mustRun(1, "plan", "-f", f)
	if !strings.Contains(r.stderr, fp) || !strings.Contains(r.stderr, "PROXMOX_TLS_FINGERPRINT") {
		t.Errorf("untrusted certificate error lacks the fingerprint or the hint:\n%s", r.stderr)
	}
	env.extraEnv = []string{"PROXMOX_TLS_FINGERPRINT=" + strings.ToLower(strings.ReplaceAll(fp, ":", ""))}
	env.mustRun(0, "plan", "-f", f)
	env.extraEnv = []string{"PROXMOX_TLS_FINGERPRINT=" + strings.Repeat("AB:", 31) + "AB"}
	r = env.mustRun(1, "plan", "-f", f)
	if !strings.Contains(r.stderr, fp) {
		t.Errorf("pin mismatch error lacks the presented fingerprint:\n%s", r.stderr)
	}
}

// Without connection settings the error says what to set, before any call.
func TestE2EMissingConnectionSettings(t *testing.T) {
	env := &simEnv{t: t, url: ""}
	r := env.mustRun(3, "plan", "-f", example(t, "01-bridge-and-vm.yaml", nil))
	if !strings.Contains(r.stderr, "PROXMOX_URL") {
		t.Errorf("error does not say to set PROXMOX_URL:\n%s", r.stderr)
	}
}

// A destroy that removes some resources and keeps protected ones says both.
func TestE2EDestroyMixedKept(t *testing.T) {
	env := startSim(t)
	dir := examplesDir(t, func(s string) string {
		return strings.Replace(s, "name: app-vm-1\n", "name: app-vm-1\nprotected: true\n", 1)
	}, "01-bridge-and-vm.yaml", "02-pool-and-worker.yaml")
	env.mustRun(0, "apply", "-f", dir, "--auto-approve")
	r := env.mustRun(0, "destroy", "-f", dir, "--auto-approve")
	containsAll(t, "destroy output", r.stdout,
		"QemuVM/app-vm-1: kept (protected)",
		"LinuxBridge/vmbr1: kept (protected QemuVM/app-vm-1 needs it)",
		"Destroy complete: 2 destroyed, 2 kept (protected).",
	)
}

package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// runningVMs writes n QEMU VMs found by name (no vmid), started after create.
func runningVMs(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "---\nkind: QemuVM\nname: vm-%02d\nspec:\n  memory: 512\n  cores: 1\n  running: true\n", i)
	}
	return writeSpec(t, "vms.yaml", b.String())
}

// vmNames counts the non-template VMs by name on node pve, from the node's
// own list (current, unlike /cluster/resources).
func (e *simEnv) vmNames() map[string]int {
	e.t.Helper()
	out := map[string]int{}
	for _, r := range e.qemuGuests() {
		if !r.Template {
			out[r.Name]++
		}
	}
	return out
}

func (e *simEnv) wantVMs(n int) {
	e.t.Helper()
	got := e.vmNames()
	for name, k := range got {
		if k != 1 {
			e.t.Errorf("VM %s exists %d times", name, k)
		}
	}
	if len(got) != n {
		e.t.Errorf("got %d VMs %v, want exactly %d", len(got), got, n)
	}
}

// With lock contention, PVE's tasks fail on the guest lock (and creates
// answer the lock timeout): pvectl retries them, says so, and 16 VMs
// applied in parallel converge to exactly 16 running VMs in one apply.
// The workers' vmids come from one allocator, so they never collide with
// each other. Only a change whose every lock retry hit the lock (6 tries
// at 30 % contention: rare, not impossible) may fail that apply; running
// apply again is how it converges then, as after any failure.
func TestE2ELockContentionConverges(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{LockContention: 0.3, LockWait: 20 * time.Millisecond}, nil)
	f := runningVMs(t, 16)
	var out strings.Builder
	converged := false
	for run := 1; run <= 3 && !converged; run++ {
		r := env.run("apply", "-f", f, "--auto-approve", "--parallelism", "16")
		out.WriteString(r.stdout)
		converged = r.code == 0
		if r.code != 0 && r.code != 1 {
			t.Fatalf("apply %d: exit %d\n%s\n%s", run, r.code, r.stdout, r.stderr)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.Contains(l, "failed after") && !strings.Contains(l, "gave up after") {
				t.Errorf("apply %d: a failure other than exhausted lock retries:\n%s", run, l)
			}
		}
	}
	if !converged {
		t.Fatalf("apply did not converge in 3 runs:\n%s", out.String())
	}
	// Both kinds of retry are shown: a create answered with the lock
	// timeout, and a start whose task failed on the lock.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^QemuVM/vm-\d\d: locked in PVE \(unable to create VM \d+ - can't lock file '/var/lock/qemu-server/lock-\d+\.conf' - got timeout\): retrying POST /nodes/pve/qemu$`),
		regexp.MustCompile(`(?m)^QemuVM/vm-\d\d: locked in PVE \(can't lock file '/var/lock/qemu-server/lock-\d+\.conf' - got timeout\): retrying POST /nodes/pve/qemu/\d+/status/start$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("apply output lacks a line like %s (the retries shown):\n%s", want, out.String())
		}
	}
	env.wantVMs(16)
	for _, r := range env.qemuGuests() {
		if !r.Template && r.Status != "running" {
			t.Errorf("VM %s is %s, want running", r.Name, r.Status)
		}
	}
	// Contention does not touch what the plan reads.
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// /cluster/resources answers a new guest's name and status from pvestatd's
// data, up to 10 s old (the simulator's default, as PVE's): a plan right
// after the apply must still find every VM by name and see it running,
// twice in a row, and a second apply creates nothing.
func TestE2EApplyThenPlanIsClean(t *testing.T) {
	start := time.Now()
	env := startSimOpts(t, pvesim.Options{}, nil)
	f := runningVMs(t, 4)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	// The lag is there: the new VMs have no status data yet.
	if time.Since(start) < pvesim.DefaultStatusInterval-time.Second {
		rows, err := env.client.ClusterResources(context.Background(), "vm")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.VMID != 9000 && (r.Name != "" || r.Status != "unknown") {
				t.Fatalf("got /cluster/resources row %+v right after apply, want status unknown without name", r)
			}
		}
	}
	for i := 1; i <= 2; i++ {
		r := env.run("plan", "-f", f, "--detailed-exitcode")
		if r.code != 0 {
			t.Fatalf("plan %d right after apply: exit %d, want 0 (no changes)\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	env.wantVMs(4)
}

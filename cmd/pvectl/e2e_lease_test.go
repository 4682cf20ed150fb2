package main

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/runlock"
)

// runLockID reads the ID of the run lock PVE holds now ("" when none).
func (e *simEnv) runLockID() string {
	e.t.Helper()
	p, err := e.client.Pool(context.Background(), runlock.Pool)
	if err != nil {
		return ""
	}
	if m := regexp.MustCompile(`; id=([0-9a-f]+)`).FindStringSubmatch(p.Comment); m != nil {
		return m[1]
	}
	return ""
}

// Issue 17 acceptance: force-unlock while a run is alive, then a second
// run of the same spec: the first run stops before its next write, naming
// the lost lease; the second waits for it and makes the rest; no object
// is made twice, and the next plan is clean.
func TestE2EForceUnlockWhileRunningNeverTwoWriters(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{TaskDuration: 3 * time.Second}, nil)
	names := []string{"lease-1", "lease-2", "lease-3"}
	f := writeSpec(t, "three.yaml", vmsSpec(names, nil))
	first := env.start(nil, "apply", "-f", f, "--auto-approve", "--parallelism", "1")
	first.waitFor("the first create to start", func(out, _ string) bool { return strings.Contains(out, "creating vm ") })
	id := env.runLockID()
	if id == "" {
		t.Fatal("no run lock while the first run creates")
	}
	r := env.mustRun(0, "force-unlock", id)
	if !strings.Contains(r.stdout, "Revoked the run lock "+id) || !strings.Contains(r.stdout, "stops before its next write") {
		t.Errorf("force-unlock of a live lease: stdout %q", r.stdout)
	}
	second := env.start(nil, "apply", "-f", f, "--auto-approve")
	a := first.wait()
	b := second.wait()
	if a.code != 1 || !strings.Contains(a.stdout+a.stderr, "lost the run lock "+id) || !strings.Contains(a.stdout+a.stderr, "force-unlock revoked it; stopping before the next write") {
		t.Errorf("first run: exit %d, want 1 naming the lost lease\nstdout:\n%s\nstderr:\n%s", a.code, a.stdout, a.stderr)
	}
	if b.code != 0 {
		t.Errorf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", b.code, b.stdout, b.stderr)
	}
	if got := env.guestNames(); !slices.Equal(got, names) {
		t.Errorf("VMs: got %v, want each of %v once", got, names)
	}
	env.noRunLock()
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// Issue 17 acceptance: one spec with two Connection documents that reach
// one simulator through 127.0.0.1 and localhost: the apply takes one lock,
// never waits for itself, and makes each object once.
func TestE2ELockOneClusterTwoURLs(t *testing.T) {
	env := startSim(t)
	other := strings.Replace(env.url, "127.0.0.1", "localhost", 1)
	if other == env.url {
		t.Fatalf("simulator URL %s is not on 127.0.0.1", env.url)
	}
	f := writeSpec(t, "two.yaml", `kind: Connection
name: by-ip
spec:
  url: `+env.url+`
  tokenId: `+e2eTokenID+`
  tokenSecret: ${PROXMOX_TOKEN_SECRET}
---
kind: Connection
name: by-name
spec:
  url: `+other+`
  tokenId: `+e2eTokenID+`
  tokenSecret: ${PROXMOX_TOKEN_SECRET}
---
kind: Pool
name: via-ip
connection: by-ip
---
kind: Pool
name: via-name
connection: by-name
`)
	env.requests.Reset()
	r := env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if strings.Contains(r.stdout, "Waiting") {
		t.Errorf("the run waited:\n%s", r.stdout)
	}
	if n := env.requests.Reset()["DELETE /pools"]; n != 1 {
		t.Errorf("released %d locks, want 1", n)
	}
	pools, err := env.client.Pools(context.Background())
	if err != nil || !hasPool(pools, "via-ip") || !hasPool(pools, "via-name") {
		t.Errorf("pools %v (%v), want via-ip and via-name", pools, err)
	}
	env.noRunLock()
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

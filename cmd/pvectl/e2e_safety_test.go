package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/runlock"
)

func tenNames(prefix string) []string {
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("%s-%d", prefix, i))
	}
	return names
}

// noRunLock fails the test if a run left its lock behind.
func (e *simEnv) noRunLock() {
	e.t.Helper()
	pools, err := e.client.Pools(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	if hasPool(pools, runlock.Pool) {
		e.t.Errorf("the run lock %s is still there", runlock.Pool)
	}
}

// Issue 10 acceptance: two applies of one spec of 10 VMs without vmid,
// started together: exactly 10 VMs; the second refuses naming the lock's
// holder, or, with --lock-timeout, waits for it and then has nothing to do.
func TestE2ETwoAppliesAtOnce(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			// Tasks long enough that the first run still holds the lock
			// when the second asks for it.
			env := startSimOpts(t, pvesim.Options{TaskDuration: time.Second}, nil)
			names := tenNames("twin")
			f := writeSpec(t, "ten.yaml", vmsSpec(names, nil))
			args := []string{"apply", "-f", f, "--auto-approve"}
			if wait {
				args = append(args, "--lock-timeout", "2m")
			}
			runs := []*bgRun{env.start(nil, args...), env.start(nil, args...)}
			var done, refused []result
			for _, run := range runs {
				switch r := run.wait(); r.code {
				case 0:
					done = append(done, r)
				default:
					refused = append(refused, r)
				}
			}
			if got := env.guestNames(); !slices.Equal(got, names) {
				t.Errorf("VMs after two applies: got %v, want exactly %v", got, names)
			}
			env.noRunLock()
			if wait {
				if len(done) != 2 {
					t.Fatalf("with --lock-timeout: %d runs succeeded, want 2: %+v", len(done), refused)
				}
				waited := 0
				for _, r := range done {
					if strings.Contains(r.stdout, "Waiting up to 2m0s for the run lock: another pvectl run holds the lock") {
						waited++
						if !strings.Contains(r.stdout, "No changes.") {
							t.Errorf("the run that waited planned changes:\n%s", r.stdout)
						}
					}
				}
				if waited != 1 {
					t.Errorf("%d runs said they waited for the lock, want 1:\n%s\n%s", waited, done[0].stdout, done[1].stdout)
				}
				return
			}
			if len(done) != 1 || len(refused) != 1 {
				t.Fatalf("without --lock-timeout: %d succeeded and %d failed, want one each", len(done), len(refused))
			}
			r := refused[0]
			if r.code != 1 || !regexp.MustCompile(`Error: another pvectl run holds the lock on \S+: apply by \S+ on \S+ \(pid \d+, token `+regexp.QuoteMeta(e2eTokenID)+`\)`).MatchString(r.stderr) ||
				!strings.Contains(r.stderr, "pvectl force-unlock ") {
				t.Errorf("the second run: exit %d, want 1 naming the holder\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout, "will be created") {
				t.Errorf("the refused run planned:\n%s", r.stdout)
			}
		})
	}
}

// Issue 10 acceptance: a rerun while the creates of an abandoned run still
// run in PVE makes no second VM: the guests being created (by name: not
// named yet; by vmid: locked) are waited for, then found. With no time to
// wait, the plan refuses them, naming their vmids.
func TestE2ERerunWhileCreating(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{TaskDuration: 6 * time.Second}, nil)
	f := writeSpec(t, "two.yaml", `kind: QemuVM
name: rr-byname
spec:
  memory: 512
---
kind: QemuVM
name: rr-pinned
spec:
  vmid: 700
  memory: 512
`)
	run := env.start(nil, "apply", "-f", f, "--auto-approve")
	run.waitFor("both creates to start", func(out, _ string) bool {
		return strings.Count(out, "creating vm ") == 2
	})
	run.signal(os.Interrupt)
	run.waitFor("the interrupt notice", func(out, _ string) bool { return strings.Contains(out, "Interrupt received") })
	run.signal(syscall.SIGTERM)
	if r := run.wait(); r.code != 1 || !strings.Contains(r.stdout, "Interrupt received again: stopped waiting") {
		t.Fatalf("abandoned run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	env.noRunLock()

	r := env.mustRun(1, "plan", "-f", f, "--busy-timeout", "0")
	containsAll(t, "plan --busy-timeout 0: stderr", r.stderr,
		"QemuVM/rr-byname: no VM is named rr-byname, but PVE is still creating or cloning VMs ",
		"QemuVM/rr-pinned: vm 700 is locked (create): a PVE task is working on it",
		"qm unlock 700",
	)
	r = env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if !strings.Contains(r.stdout, "Waiting up to 5m0s for PVE tasks that hold ") || !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("rerun: want it to wait, then find both\n%s", r.stdout)
	}
	if got := env.guestNames(); !slices.Equal(got, []string{"rr-byname", "rr-pinned"}) {
		t.Errorf("VMs after the rerun: got %v, want one of each", got)
	}
}

// Issue 10 acceptance: `pool: nopool` and a node move onto a node that
// lacks the VM's bridge fail the plan, naming the resource and the key;
// apply changes nothing.
func TestE2EPrerequisitesFailThePlan(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{Nodes: []string{"pve", "pve2"}}, nil)
	const doc = `kind: LinuxBridge
name: vmbr7
spec:
  node: pve
---
kind: NetworkApply
name: pve
---
kind: QemuVM
name: mover
spec:
  node: pve
  vmid: 150
  memory: 512
  net0: virtio,bridge=vmbr7
`
	f := writeSpec(t, "move.yaml", doc)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	os.WriteFile(f, []byte(strings.Replace(doc, "  node: pve\n  vmid", "  node: pve2\n  pool: nopool\n  vmid", 1)), 0o644)
	want := []string{
		"QemuVM/mover: pool: pool nopool does not exist (in PVE or in these specs)",
		"QemuVM/mover: net0: bridge vmbr7 does not exist on node pve2 (in PVE or in these specs)",
	}
	for _, cmd := range [][]string{{"plan", "-f", f}, {"apply", "-f", f, "--auto-approve"}} {
		env.requests.Reset()
		r := env.mustRun(1, cmd...)
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd[0], w, r.stderr)
			}
		}
		for call := range env.requests.Reset() {
			if !strings.HasPrefix(call, "GET ") && call != "POST /pools" && call != "DELETE /pools" {
				t.Errorf("%s sent %s", cmd[0], call)
			}
		}
	}
	rows, err := env.client.NodeGuests(context.Background(), pve.QEMU, "pve")
	if err != nil || len(rows) == 0 || !slices.ContainsFunc(rows, func(r pve.ClusterResource) bool { return r.VMID == 150 }) {
		t.Errorf("vm 150 on pve after the refused plan: rows %v (%v)", rows, err)
	}
}

// A run killed outright leaves its lock; the next run names it stale (its
// process is gone from this host), and force-unlock with its ID removes
// it — and nothing else.
func TestE2EForceUnlock(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{TaskDuration: 3 * time.Second}, nil)
	f := writeSpec(t, "one.yaml", vmsSpec([]string{"fu"}, nil))
	run := env.start(nil, "apply", "-f", f, "--auto-approve")
	run.waitFor("the create to start", func(out, _ string) bool { return strings.Contains(out, "creating vm ") })
	run.signal(syscall.SIGKILL)
	run.wait()

	r := env.mustRun(1, "apply", "-f", f, "--auto-approve")
	m := regexp.MustCompile(`that process is gone, so the lock is stale\n  Remove it with: pvectl force-unlock ([0-9a-f]+)\n`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("apply after a killed run: stderr does not name the stale lock:\n%s", r.stderr)
	}
	r = env.mustRun(1, "force-unlock", "0000000000000000")
	if !strings.Contains(r.stderr, "has the ID "+m[1]+", not 0000000000000000") {
		t.Errorf("force-unlock of another ID: stderr %q", r.stderr)
	}
	r = env.mustRun(0, "force-unlock", m[1])
	if !strings.Contains(r.stdout, "Removed the run lock "+m[1]) {
		t.Errorf("force-unlock: stdout %q", r.stdout)
	}
	env.noRunLock()
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if got := env.guestNames(); !slices.Equal(got, []string{"fu"}) {
		t.Errorf("VMs: got %v, want one", got)
	}
}

// The run lock under faults: a create of the lock pool that PVE carried
// out but whose answer was lost is recognised as this run's (by its ID),
// and a delete that a proxy failed is sent again; the run goes on and
// leaves no lock behind.
func TestE2ERunLockUnderFaults(t *testing.T) {
	p := &faultProxy{}
	env := startSimOpts(t, pvesim.Options{TaskDuration: 10 * time.Millisecond}, p.wrap)
	p.add(func(w http.ResponseWriter, r *http.Request, sim http.Handler) bool {
		if r.URL.Path != "/api2/json/pools" {
			return false
		}
		switch {
		case r.Method == http.MethodPost && p.count("POST /pools") == 1:
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			resetConn(w, rec)
			return true
		case r.Method == http.MethodDelete && p.count("DELETE /pools") == 1:
			proxy596(w, nil)
			return true
		}
		return false
	})
	f := writeSpec(t, "one.yaml", vmsSpec([]string{"lf"}, nil))
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	env.noRunLock()
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

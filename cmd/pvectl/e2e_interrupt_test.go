package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// guestNames lists the names of node pve's QEMU VMs, from the node's list:
// /cluster/resources knows a new VM's name only once pvestatd ran.
func (e *simEnv) guestNames() []string {
	e.t.Helper()
	var names []string
	for _, r := range e.qemuGuests() {
		if !r.Template {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Issue 10 acceptance: SIGINT during an apply of two creates with 5 s
// tasks: nothing new starts, both creates are waited for and reported
// created, exit 1, and the next plan is clean.
func TestE2EInterruptWaitsForRunningTasks(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{TaskDuration: 5 * time.Second}, nil)
	f := writeSpec(t, "two.yaml", vmsSpec([]string{"int-a", "int-b"}, nil))
	run := env.start(nil, "apply", "-f", f, "--auto-approve")
	run.waitFor("both creates to start", func(out, _ string) bool {
		return strings.Contains(out, "QemuVM/int-a: Creating...") && strings.Contains(out, "QemuVM/int-b: Creating...")
	})
	run.signal(os.Interrupt)
	r := run.waitExit(1)
	containsAll(t, "stdout", r.stdout,
		"\nInterrupt received: waiting for 2 running PVE tasks to finish (interrupt again to stop waiting)\n",
		"QemuVM/int-a: Create complete after",
		"QemuVM/int-b: Create complete after",
		"Apply interrupted: 2 created.",
	)
	if strings.Contains(r.stdout, "failed") {
		t.Errorf("an interrupt made something fail:\n%s", r.stdout)
	}
	if got := env.guestNames(); !slices.Equal(got, []string{"int-a", "int-b"}) {
		t.Errorf("VMs after the interrupt: got %v, want int-a and int-b", got)
	}
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// SIGTERM counts as an interrupt; a second one stops waiting and names
// each running task by UPID and node. What never started is "not started
// (interrupted)", what was cut short is of unknown outcome; both are
// summarised in JSON too.
func TestE2ESecondInterruptStopsWaiting(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{TaskDuration: 20 * time.Second}, nil) // still running at the second interrupt
	f := writeSpec(t, "three.yaml", vmsSpec([]string{"ab-a", "ab-b", "ab-c"}, map[string]string{"ab-c": "ab-a"}))
	run := env.start(nil, "apply", "-f", f, "--auto-approve", "--json")
	run.waitFor("both tasks to run", func(out, _ string) bool {
		return strings.Count(out, `"progress":"task_started"`) == 2
	})
	run.signal(syscall.SIGTERM)
	run.waitFor("the interrupt notice", func(_, errs string) bool { return strings.Contains(errs, "Interrupt received") })
	run.signal(os.Interrupt)
	r := run.waitExit(1)
	if !strings.Contains(r.stderr, "Interrupt received: waiting for 2 running PVE tasks to finish (interrupt again to stop waiting)") {
		t.Errorf("stderr lacks the first notice:\n%s", r.stderr)
	}
	for _, vm := range []string{"ab-a", "ab-b"} {
		re := regexp.MustCompile(`\n  UPID:pve:[0-9A-F:]+:qmcreate:\d+:[^ ]+ \(node pve, QemuVM/` + vm + `\)\n`)
		if !re.MatchString(r.stderr) {
			t.Errorf("stderr does not name %s's running task by UPID and node:\n%s", vm, r.stderr)
		}
	}
	sum := lastJSONLine(t, r.stdout)
	if sum["type"] != "summary" || sum["outcome"] != "interrupted" {
		t.Fatalf("last line: got %v, want an interrupted summary", sum)
	}
	if got := addresses(sum["unknown"]); !slices.Equal(got, []string{"QemuVM/ab-a", "QemuVM/ab-b"}) {
		t.Errorf("unknown: got %v", got)
	}
	notStarted, _ := sum["not_started"].([]any)
	if len(notStarted) != 1 || notStarted[0].(map[string]any)["address"] != "QemuVM/ab-c" ||
		notStarted[0].(map[string]any)["reason"] != "not started (interrupted)" {
		t.Errorf("not_started: got %v, want QemuVM/ab-c (not started (interrupted))", sum["not_started"])
	}
	if failed, _ := sum["failed"].([]any); len(failed) != 0 {
		t.Errorf("failed: got %v, want none", failed)
	}
}

// An interrupt while planning (here: a server that never answers) ends
// the command at once with one clean line and exit 130.
func TestE2EInterruptDuringPlan(t *testing.T) {
	f := writeSpec(t, "one.yaml", vmsSpec([]string{"p"}, nil))
	for _, cmd := range [][]string{{"plan", "-f", f}, {"apply", "-f", f, "--auto-approve"}} {
		// A server per command: a plan opens several connections at once
		// (its first reads go out together), and one left over from the
		// last command must not count as this one's.
		url, accepted := neverAnswers(t)
		env := &simEnv{t: t, url: url}
		run := env.start(nil, cmd...)
		select { // it is reading live state
		case <-accepted:
		case <-time.After(time.Minute):
			t.Fatalf("%v never connected", cmd)
		}
		run.signal(os.Interrupt)
		r := run.wait()
		if r.code != 130 || r.stderr != "Interrupted: nothing was changed.\n" {
			t.Errorf("%v: exit %d stderr %q, want 130 and one clean line", cmd, r.code, r.stderr)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/pve"
)

// TestOutputShownOnce: a one-time secret appears exactly once, in the
// marked block after the summary; a JSON line names it without its value
// and the block goes to the error stream instead.
func TestOutputShownOnce(t *testing.T) {
	const secret = "5f0c1e2d-secret-value"
	c := &planner.Change{Address: "APIToken/ci", Action: planner.Create}
	p := &planner.Plan{Changes: []*planner.Change{c}}
	res := &planner.Result{Done: []string{c.Address}}

	var out bytes.Buffer
	v := newProgressView(&out, false, false)
	v.Output(c, "value", secret, true)
	v.Output(c, "full-tokenid", "ci@pve!deploy", false)
	v.summary(p, res, "apply")
	if n := strings.Count(out.String(), secret); n != 1 {
		t.Errorf("human output shows the secret %d times, want once:\n%s", n, out.String())
	}
	if i, j := strings.Index(out.String(), "Apply complete"), strings.Index(out.String(), secret); j < i {
		t.Errorf("the secret comes before the summary:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "APIToken/ci: full-tokenid = ci@pve!deploy") {
		t.Errorf("a non-secret output is shown where it happens:\n%s", out.String())
	}

	var lines, errs bytes.Buffer
	v = newProgressView(&lines, true, false)
	v.secrets = &errs
	v.Output(c, "value", secret, true)
	v.summary(p, res, "apply")
	if strings.Contains(lines.String(), secret) {
		t.Errorf("JSON lines hold the secret:\n%s", lines.String())
	}
	if !strings.Contains(lines.String(), `"type":"output"`) || !strings.Contains(lines.String(), `"sensitive":true`) {
		t.Errorf("JSON lines lack the output event:\n%s", lines.String())
	}
	if n := strings.Count(errs.String(), secret); n != 1 {
		t.Errorf("error stream shows the secret %d times, want once:\n%s", n, errs.String())
	}
}

const viewUPID = "UPID:pve:000A1B2C:0012D687:6745F0A1:qmclone:9000:root@pam!ci:"

// A running change says every interval that it still runs and which task
// it waits for; a lock retry is shown once per request; humans see tasks
// by their short name.
func TestProgressLines(t *testing.T) {
	var out syncBuffer
	v := newProgressView(&out, false, false)
	v.every = 5 * time.Millisecond
	c := &planner.Change{Address: "QemuVM/app-vm-1", Action: planner.Create}
	u, _ := pve.ParseUPID(viewUPID)
	v.PreApply(c)
	v.Task(c, pve.TaskEvent{Phase: pve.TaskWaiting, UPID: u})
	for i := 0; i < 2000 && !strings.Contains(out.String(), "[10ms elapsed, task qmclone]"); i++ {
		time.Sleep(time.Millisecond)
	}
	lock := pve.TaskEvent{Phase: pve.TaskLockRetry, Request: "POST /nodes/pve/qemu/9000/clone", Attempt: 1,
		Err: &pve.APIError{Status: 500, Message: "can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout"}}
	v.Task(c, lock)
	lock.Attempt = 2
	v.Task(c, lock)
	v.Message(c, "task "+viewUPID+" finished with warnings: w")
	v.Task(c, pve.TaskEvent{Phase: pve.TaskDone, UPID: u, Status: &pve.TaskStatus{ExitStatus: "OK"}})
	v.PostApply(c, nil)
	got := out.String()
	containsAll(t, "output", got,
		"QemuVM/app-vm-1: Still creating… [5ms elapsed, task qmclone]\n",
		"QemuVM/app-vm-1: Still creating… [10ms elapsed, task qmclone]\n",
		"QemuVM/app-vm-1: task qmclone 9000 on pve finished with warnings: w\n",
		"QemuVM/app-vm-1: Create complete after",
	)
	if n := strings.Count(got, "can't lock file"); n != 1 {
		t.Errorf("lock retry shown %d times, want once:\n%s", n, got)
	}
	if strings.Contains(got, "UPID:") {
		t.Errorf("human output shows a full UPID:\n%s", got)
	}
	// After PostApply nothing more is said about the change.
	time.Sleep(20 * time.Millisecond)
	if after := out.String(); after != got {
		t.Errorf("lines after the change ended:\n%s", strings.TrimPrefix(after, got))
	}
}

// waitFor polls out until it holds want (bounded), and reports whether it
// did.
func waitFor(out *syncBuffer, want string) bool {
	for i := 0; i < 2000; i++ {
		if strings.Contains(out.String(), want) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// A change that reports a phase says what it does in its still-running
// lines ("Still provisioning… [20s elapsed, app.yaml]"), then its action
// again once the phase ends; its JSON lines carry the phase and match the
// documented schema.
func TestProgressPhaseLines(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var out syncBuffer
		v := newProgressView(&out, asJSON, false)
		v.every = 5 * time.Millisecond
		c := &planner.Change{Address: "QemuVM/app", Action: planner.Create}
		v.PreApply(c)
		v.Phase(c, planner.Phase{Name: "provisioning", Detail: "reaching the guest"})
		want := []string{"QemuVM/app: Still provisioning… [", " elapsed, reaching the guest]"}
		if asJSON {
			want = []string{`"message":"still provisioning"`, `"phase":{"detail":"reaching the guest","name":"provisioning"}`}
		}
		if !waitFor(&out, want[1]) {
			t.Fatalf("json=%v: no still-running line with the phase:\n%s", asJSON, out.String())
		}
		v.Phase(c, planner.Phase{Name: "provisioning", Detail: "app.yaml"})
		detail := " elapsed, app.yaml]"
		if asJSON {
			detail = `"detail":"app.yaml"`
		}
		if !waitFor(&out, detail) {
			t.Fatalf("json=%v: no still-running line naming the file:\n%s", asJSON, out.String())
		}
		v.Phase(c, planner.Phase{})
		mark := len(out.String())
		back := "QemuVM/app: Still creating… ["
		if asJSON {
			back = `"message":"still creating"`
		}
		for i := 0; i < 2000 && !strings.Contains(out.String()[mark:], back); i++ {
			time.Sleep(time.Millisecond)
		}
		v.PostApply(c, nil)
		got := out.String()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("json=%v: output lacks %q:\n%s", asJSON, w, got)
			}
		}
		if !strings.Contains(got[mark:], back) {
			t.Errorf("json=%v: after the phase ended, no %q:\n%s", asJSON, back, got[mark:])
		}
		if asJSON {
			validateLines(t, eventSchema(t), got)
		}
	}
}

// A task that failed on its guest lock and is started again is shown like
// a request's lock retry, with PVE's message and not the task's log; its
// JSON line names the task.
func TestTaskLockRetryLine(t *testing.T) {
	const lock = "can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout"
	u, _ := pve.ParseUPID(viewUPID)
	ev := pve.TaskEvent{Phase: pve.TaskLockRetry, UPID: u, Request: "POST /nodes/pve/qemu/9000/status/start", Attempt: 1,
		Err: &pve.TaskError{UPID: viewUPID, ExitStatus: lock, LogTail: []string{"trying to acquire lock...", "TASK ERROR: " + lock}}}
	c := &planner.Change{Address: "QemuVM/app-vm-1", Action: planner.Update}

	var out bytes.Buffer
	newProgressView(&out, false, false).Task(c, ev)
	if want := "QemuVM/app-vm-1: locked in PVE (" + lock + "): retrying POST /nodes/pve/qemu/9000/status/start\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	newProgressView(&out, true, false).Task(c, ev)
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if task, _ := line["task"].(map[string]any); line["progress"] != "lock_retry" || task["upid"] != viewUPID {
		t.Errorf("got JSON line %v, want a lock_retry naming the task", line)
	}
}

// Summaries count what was done by action.
func TestSummaryCounts(t *testing.T) {
	p := &planner.Plan{Changes: []*planner.Change{
		{Address: "Pool/a", Action: planner.Create}, {Address: "Pool/b", Action: planner.Create},
		{Address: "QemuVM/c", Action: planner.Update}, {Address: "NetworkApply/pve", Action: planner.ApplyNet},
		{Address: "QemuVM/d", Action: planner.Create}, {Address: "QemuVM/e", Action: planner.Create},
	}}
	res := &planner.Result{Done: []string{"Pool/a", "Pool/b", "QemuVM/c", "NetworkApply/pve"}}
	var out bytes.Buffer
	newProgressView(&out, false, false).summary(p, res, "apply")
	if want := "Apply complete: 2 created, 1 updated, 1 network commit.\n"; !strings.Contains(out.String(), want) {
		t.Errorf("got:\n%s\nwant %q", out.String(), want)
	}
	res.Failed = map[string]error{"QemuVM/d": errors.New("task qmcreate 100 on pve failed: boom\n  task log (last lines):\n    boom")}
	res.Skipped = map[string]string{"QemuVM/e": "dependency QemuVM/d failed"}
	out.Reset()
	newProgressView(&out, false, false).summary(p, res, "apply")
	containsAll(t, "output", out.String(),
		"Apply incomplete: 2 created, 1 updated, 1 network commit; 1 failed, 1 not started.\n",
		"  failed:\n    QemuVM/d: task qmcreate 100 on pve failed: boom\n      task log (last lines):\n        boom\n",
		"  not started:\n    QemuVM/e (dependency QemuVM/d failed)\n",
	)
}

// A failure with a task log tail prints without trailing blanks (lipgloss
// would pad the block to its widest line).
func TestFailureLinesNotPadded(t *testing.T) {
	var out bytes.Buffer
	v := newProgressView(&out, false, false)
	c := &planner.Change{Address: "QemuVM/x", Action: planner.Create}
	v.PreApply(c)
	v.PostApply(c, &pve.TaskError{UPID: viewUPID, ExitStatus: "unable to create VM", LogTail: []string{"a much longer line of the task log than the others", "b"}})
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("trailing blanks: %q", l)
		}
	}
	if !strings.Contains(out.String(), "task qmclone 9000 on pve failed: unable to create VM\n  task log (last lines):\n    a much longer") {
		t.Errorf("got:\n%s", out.String())
	}
}

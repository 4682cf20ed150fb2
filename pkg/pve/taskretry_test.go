package pve

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const taskLockMsg = "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"

// lockedTaskPVE serves path: each call starts a new task (UPIDs differ by
// pid) whose status is stopped with exits[i] (the last repeats).
func lockedTaskPVE(t *testing.T, method, path string, exits []string) *fakePVE {
	t.Helper()
	f := newFakePVE(t, false)
	var n atomic.Int32
	f.handle(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1))
		upid := fmt.Sprintf("UPID:pve:%08X:0012D687:6745F0A1:qmstart:100:root@pam!ci:", i)
		exit := exits[min(i, len(exits))-1]
		f.handle("GET /nodes/pve/tasks/"+upid+"/status", data(map[string]any{
			"upid": upid, "node": "pve", "status": "stopped", "exitstatus": exit, "type": "qmstart", "id": "100", "user": "root@pam", "tokenid": "ci",
		}))
		f.handle("GET /nodes/pve/tasks/"+upid+"/log", data([]map[string]any{{"n": 1, "t": "TASK ERROR: " + exit}}))
		data(upid)(w, r)
	})
	return f
}

// retryLog keeps the TaskLockRetry events of a ctx.
type retryLog struct {
	mu  sync.Mutex
	got []TaskEvent
}

func (l *retryLog) ctx() context.Context {
	return WithTaskObserver(context.Background(), func(ev TaskEvent) {
		if ev.Phase != TaskLockRetry {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, ev)
	})
}

func TestRunIdempotentTask(t *testing.T) {
	const path = "/nodes/pve/qemu/100/status/start"
	tests := []struct {
		name     string
		exits    []string
		wantSent int
		errHas   string
	}{
		{name: "first try", exits: []string{"OK"}, wantSent: 1},
		{name: "after two lock failures", exits: []string{taskLockMsg, taskLockMsg, "OK"}, wantSent: 3},
		{name: "gives up after 6 tries", exits: []string{taskLockMsg}, wantSent: 6, errHas: "gave up after 6 attempts"},
		// A lock failure wrapped in another message came after the task
		// did something: not retried.
		{name: "wrapped lock failure", exits: []string{"clone failed: " + taskLockMsg}, wantSent: 1, errHas: "clone failed"},
		{name: "other failure", exits: []string{"VM 100 already running"}, wantSent: 1, errHas: "already running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := lockedTaskPVE(t, "POST", path, tc.exits)
			c := f.client(t)
			var log retryLog
			err := c.RunIdempotentTask(log.ctx(), "POST", path, nil)
			if got := f.count("POST", path); got != tc.wantSent {
				t.Errorf("got %d requests, want %d", got, tc.wantSent)
			}
			if tc.errHas == "" && err != nil || tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)) {
				t.Fatalf("got error %v, want %q", err, tc.errHas)
			}
			var attempts []int
			for _, ev := range log.got {
				attempts = append(attempts, ev.Attempt)
				if ev.Request != "POST "+path || !IsTaskLockTimeout(ev.Err) || ev.UPID.Type != "qmstart" {
					t.Errorf("got retry %+v, want the failed task and its error", ev)
				}
			}
			want := []int(nil)
			for i := 1; i < tc.wantSent; i++ {
				want = append(want, i)
			}
			if diff := cmp.Diff(want, attempts); diff != "" {
				t.Errorf("retries reported (-want +got)\n%s", diff)
			}
		})
	}
}

// The synchronous lock-timeout retry is reported alike, without a task.
func TestStartTaskReportsRetries(t *testing.T) {
	f := newFakePVE(t, false)
	var n atomic.Int32
	f.handle("PUT /nodes/pve/qemu/100/config", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			lockTimeout(w, r)
			return
		}
		data(nil)(w, r)
	})
	var log retryLog
	if err := f.client(t).RunTask(log.ctx(), "PUT", "/nodes/pve/qemu/100/config", nil); err != nil {
		t.Fatal(err)
	}
	if len(log.got) != 1 || !log.got[0].UPID.IsZero() || log.got[0].Attempt != 1 || !IsLockTimeout(log.got[0].Err) {
		t.Errorf("got retries %+v, want one for the request", log.got)
	}
}

// Which typed calls repeat a task that failed on its lock.
func TestTypedCallsRetryPolicy(t *testing.T) {
	tests := []struct {
		name, method, path string
		call               func(*Client, context.Context) error
		retried            bool
	}{
		{"vm config", "POST", "/nodes/pve/qemu/100/config", func(c *Client, ctx context.Context) error {
			return c.UpdateGuest(ctx, QEMU, "pve", 100, nil)
		}, true},
		{"start", "POST", "/nodes/pve/qemu/100/status/start", func(c *Client, ctx context.Context) error {
			return c.GuestPower(ctx, QEMU, "pve", 100, "start", nil)
		}, true},
		{"reboot", "POST", "/nodes/pve/qemu/100/status/reboot", func(c *Client, ctx context.Context) error {
			return c.GuestPower(ctx, QEMU, "pve", 100, "reboot", nil)
		}, true},
		{"reset", "POST", "/nodes/pve/qemu/100/status/reset", func(c *Client, ctx context.Context) error {
			return c.GuestPower(ctx, QEMU, "pve", 100, "reset", nil)
		}, false},
		{"delete", "DELETE", "/nodes/pve/qemu/100", func(c *Client, ctx context.Context) error {
			return c.DeleteGuest(ctx, QEMU, "pve", 100)
		}, true},
		{"resize absolute", "PUT", "/nodes/pve/qemu/100/resize", func(c *Client, ctx context.Context) error {
			return c.ResizeGuest(ctx, QEMU, "pve", 100, "scsi0", "40G")
		}, true},
		{"resize relative", "PUT", "/nodes/pve/qemu/100/resize", func(c *Client, ctx context.Context) error {
			return c.ResizeGuest(ctx, QEMU, "pve", 100, "scsi0", "+8G")
		}, false},
		{"clone", "POST", "/nodes/pve/qemu/100/clone", func(c *Client, ctx context.Context) error {
			return c.CloneGuest(ctx, QEMU, "pve", 100, nil)
		}, true},
		{"template", "POST", "/nodes/pve/qemu/100/template", func(c *Client, ctx context.Context) error {
			return c.TemplateGuest(ctx, QEMU, "pve", 100)
		}, true},
		{"network apply", "PUT", "/nodes/pve/network", func(c *Client, ctx context.Context) error {
			return c.ApplyNetwork(ctx, "pve")
		}, true},
		{"create", "POST", "/nodes/pve/qemu", func(c *Client, ctx context.Context) error {
			return c.CreateGuest(ctx, QEMU, "pve", nil)
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := lockedTaskPVE(t, tc.method, tc.path, []string{taskLockMsg, "OK"})
			err := tc.call(f.client(t), context.Background())
			want := 1
			if tc.retried {
				want = 2
			}
			if got := f.count(tc.method, tc.path); got != want || tc.retried != (err == nil) {
				t.Errorf("got %d requests and error %v, want %d requests (retried: %v)", got, err, want, tc.retried)
			}
		})
	}
}

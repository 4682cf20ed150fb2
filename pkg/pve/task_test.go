package pve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testUPID = "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam!ci:"

// taskStatusPath is where the client must poll testUPID, decoded.
const taskStatusPath = "/nodes/pve/tasks/" + testUPID + "/status"

func TestStartTaskLockRetry(t *testing.T) {
	tests := []struct {
		name      string
		failures  int // lock timeouts before the task starts
		wantSent  int
		wantLock  bool
		wantAfter string
	}{
		{name: "first try", failures: 0, wantSent: 1},
		{name: "after two lock timeouts", failures: 2, wantSent: 3},
		{name: "on the last try", failures: 5, wantSent: 6},
		{name: "gives up after 6 tries", failures: 100, wantSent: 6, wantLock: true, wantAfter: "gave up after 6 attempts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePVE(t, false)
			var n atomic.Int32
			f.handle("POST /nodes/pve/qemu/100/clone", func(w http.ResponseWriter, r *http.Request) {
				if int(n.Add(1)) <= tc.failures {
					lockTimeout(w, r)
					return
				}
				data(testUPID)(w, r)
			})
			c := f.client(t)
			upid, err := c.StartTask(context.Background(), "POST", "/nodes/pve/qemu/100/clone", url.Values{"newid": {"101"}})
			if got := f.count("POST", "/nodes/pve/qemu/100/clone"); got != tc.wantSent {
				t.Errorf("got %d requests, want %d", got, tc.wantSent)
			}
			if tc.wantLock {
				if !IsLockTimeout(err) || !strings.Contains(err.Error(), tc.wantAfter) {
					t.Fatalf("got %v, want a lock timeout saying %q", err, tc.wantAfter)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if upid.Raw != testUPID || upid.Type != "qmcreate" {
				t.Errorf("got UPID %+v, want %s", upid, testUPID)
			}
		})
	}
}

func TestStartTaskNoResend(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{name: "server error", handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 500, map[string]any{"data": nil, "message": "VM 100 already running"})
		}, want: "500 VM 100 already running"},
		{name: "connection dropped after send", handler: hangUp, want: "task may be running"},
		{name: "proxy lost its backend", handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 596, map[string]any{"data": nil, "message": "Connection timed out"})
		}, want: "596 Connection timed out (the request may have reached PVE and its task may be running"},
		{name: "2xx without a task id", handler: data(map[string]any{"x": 1}), want: "want a task id"},
		{name: "2xx with a malformed task id", handler: data("UPID:broken"), want: "invalid task id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePVE(t, false)
			f.handle("POST /nodes/pve/qemu/100/status/start", tc.handler)
			c := f.client(t)
			_, err := c.StartTask(context.Background(), "POST", "/nodes/pve/qemu/100/status/start", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if got := f.count("POST", "/nodes/pve/qemu/100/status/start"); got != 1 {
				t.Errorf("got %d requests, want exactly 1", got)
			}
		})
	}
}

func TestStartTaskUnreachableSaysNotSent(t *testing.T) {
	f := newFakePVE(t, false)
	c := f.client(t)
	f.srv.Close() // nothing listens any more: the request cannot have been sent
	_, err := c.StartTask(context.Background(), "POST", "/nodes/pve/qemu", nil)
	if err == nil || strings.Contains(err.Error(), "may be running") {
		t.Errorf("got %v, want a connection error that does not claim a task may run", err)
	}
}

// taskServer serves testUPID from POST /nodes/pve/qemu and then the given
// status answers in order (the last one repeats).
func taskServer(t *testing.T, statuses []http.HandlerFunc, log []string) *fakePVE {
	t.Helper()
	f := newFakePVE(t, false)
	f.handle("POST /nodes/pve/qemu", data(testUPID))
	var n atomic.Int32
	f.handle("GET "+taskStatusPath, func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(statuses)-1)
		statuses[i](w, r)
	})
	f.handle("GET /nodes/pve/tasks/"+testUPID+"/log", func(w http.ResponseWriter, r *http.Request) {
		lines := make([]map[string]any, 0, len(log))
		for i, l := range log {
			lines = append(lines, map[string]any{"n": i + 1, "t": l})
		}
		writeJSON(w, 200, map[string]any{"data": lines, "total": len(log)})
	})
	return f
}

func status(s, exit string) http.HandlerFunc {
	m := map[string]any{"upid": testUPID, "node": "pve", "status": s, "type": "qmcreate", "id": "100", "user": "root@pam!ci"}
	if exit != "" {
		m["exitstatus"] = exit
	}
	return data(m)
}

func badRequest(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 400, map[string]any{"data": nil, "message": "unable to open file - No such file or directory"})
}

func TestRunTask(t *testing.T) {
	longLog := make([]string, 30)
	for i := range longLog {
		longLog[i] = fmt.Sprintf("line %d", i+1)
	}
	tests := []struct {
		name       string
		statuses   []http.HandlerFunc
		log        []string
		wantErr    *TaskError
		wantOther  string
		wantPolls  int
		wantStatus bool
	}{
		{name: "ok", statuses: []http.HandlerFunc{status("running", ""), status("running", ""), status("stopped", "OK")}, wantPolls: 3},
		{name: "warnings are success", statuses: []http.HandlerFunc{status("stopped", "WARNINGS: 2")}, wantPolls: 1},
		{name: "400 right after start then ok", statuses: []http.HandlerFunc{badRequest, badRequest, status("stopped", "OK")}, wantPolls: 3},
		{name: "transient 5xx then ok", statuses: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 596, map[string]any{"data": nil, "message": "Broken pipe"})
		}, status("stopped", "OK")}, wantPolls: 2},
		{
			name:     "failure with log tail",
			statuses: []http.HandlerFunc{status("running", ""), status("stopped", "unable to create VM 100 - no space left")},
			log:      longLog,
			wantErr: &TaskError{UPID: testUPID, ExitStatus: "unable to create VM 100 - no space left",
				LogTail: longLog[10:]},
			wantPolls: 2,
		},
		{
			name:      "WARNINGS without count is failure",
			statuses:  []http.HandlerFunc{status("stopped", "WARNINGS")},
			log:       []string{"TASK ERROR: odd"},
			wantErr:   &TaskError{UPID: testUPID, ExitStatus: "WARNINGS", LogTail: []string{"TASK ERROR: odd"}},
			wantPolls: 1,
		},
		{name: "permission error is not retried", statuses: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 403, map[string]any{"data": nil, "message": "Permission check failed"})
		}}, wantOther: "403 Permission check failed", wantPolls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := taskServer(t, tc.statuses, tc.log)
			c := f.client(t)
			err := c.CreateQemu(context.Background(), "pve", url.Values{"vmid": {"100"}})
			switch {
			case tc.wantErr != nil:
				var te *TaskError
				if !errors.As(err, &te) {
					t.Fatalf("got %v, want a *TaskError", err)
				}
				if diff := cmp.Diff(tc.wantErr, te); diff != "" {
					t.Errorf("TaskError (-want +got):\n%s", diff)
				}
				if !strings.Contains(err.Error(), "task qmcreate 100 on pve failed: "+tc.wantErr.ExitStatus) {
					t.Errorf("got message %q, want it to name the task and exit status", err)
				}
			case tc.wantOther != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantOther) {
					t.Errorf("got %v, want an error containing %q", err, tc.wantOther)
				}
			case err != nil:
				t.Fatalf("got error %v, want none", err)
			}
			if got := f.count("GET", taskStatusPath); got != tc.wantPolls {
				t.Errorf("got %d status polls, want %d", got, tc.wantPolls)
			}
			if got := f.count("POST", "/nodes/pve/qemu"); got != 1 {
				t.Errorf("got %d create requests, want 1", got)
			}
		})
	}
}

func TestWaitTaskEscapesUPID(t *testing.T) {
	f := taskServer(t, []http.HandlerFunc{status("stopped", "OK")}, nil)
	c := f.client(t)
	upid, _ := ParseUPID(testUPID)
	st, err := c.WaitTask(context.Background(), upid)
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitStatus != "OK" || st.UPID != testUPID {
		t.Errorf("got %+v, want exit OK for %s", st, testUPID)
	}
	reqs := f.requests()
	if want := "/api2/json/nodes/pve/tasks/" + url.PathEscape(testUPID) + "/status"; reqs[0].RawPath != want {
		t.Errorf("got raw path %q, want %q", reqs[0].RawPath, want)
	}
}

func TestWaitTaskPersistent400Fails(t *testing.T) {
	f := taskServer(t, []http.HandlerFunc{badRequest}, nil)
	c := f.client(t)
	c.cfg.taskStartGrace = 0 // the grace window has passed
	upid, _ := ParseUPID(testUPID)
	_, err := c.WaitTask(context.Background(), upid)
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("got %v, want the 400", err)
	}
}

func TestWaitTaskTimeout(t *testing.T) {
	f := taskServer(t, []http.HandlerFunc{status("running", "")}, nil)
	c := f.client(t, WithTaskTimeout(time.Millisecond))
	upid, _ := ParseUPID(testUPID)
	_, err := c.WaitTask(context.Background(), upid)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "may still be running") {
		t.Errorf("got %v, want a deadline error saying the task may still be running", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c = f.client(t)
	if _, err := c.WaitTask(ctx, upid); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if _, err := c.WaitTask(context.Background(), UPID{}); err == nil {
		t.Error("got no error for an empty UPID, want one")
	}
}

func TestRunTaskNullAnswer(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("POST /nodes/pve/lxc/200/template", data(nil))
	c := f.client(t)
	if err := c.RunTask(context.Background(), "POST", "/nodes/pve/lxc/200/template", nil); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	if got := len(f.requests()); got != 1 {
		t.Errorf("got %d requests, want 1 (no polling without a task)", got)
	}
}

func TestBackoff(t *testing.T) {
	c := &Client{cfg: defaultConfig()}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 25 * time.Millisecond, 50 * time.Millisecond},
		{2, 50 * time.Millisecond, 100 * time.Millisecond},
		{3, 100 * time.Millisecond, 200 * time.Millisecond},
		{5, 400 * time.Millisecond, 800 * time.Millisecond},
		{6, 800 * time.Millisecond, 1600 * time.Millisecond},
		{40, 2500 * time.Millisecond, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.attempt), func(t *testing.T) {
			for range 50 {
				if got := c.backoff(tc.attempt); got < tc.min || got > tc.max {
					t.Fatalf("got %s, want within [%s, %s]", got, tc.min, tc.max)
				}
			}
		})
	}
}

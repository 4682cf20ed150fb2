package pve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pagedLog serves log as PVE does: start/limit pick the page, total is the
// whole log's length.
func pagedLog(log []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start, _ := strconv.Atoi(r.URL.Query().Get("start"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		lines := []map[string]any{}
		for i := start; i < len(log) && i < start+limit; i++ {
			lines = append(lines, map[string]any{"n": i + 1, "t": log[i]})
		}
		writeJSON(w, 200, map[string]any{"data": lines, "total": len(log)})
	}
}

func TestWaitTaskReportsWarnings(t *testing.T) {
	long := make([]string, 0, 1203)
	for i := range 1200 {
		long = append(long, fmt.Sprintf("progress %d", i))
	}
	long = append(long, "WARN: late warning", "TASK WARNINGS: 1")
	tests := []struct {
		name     string
		exit     string
		log      []string
		noLog    bool
		observe  bool
		wantCall bool
		want     []string
	}{
		{name: "warnings reach the observer", exit: "WARNINGS: 2", observe: true, wantCall: true,
			log:  []string{"creating disk", "WARN: storage almost full", "WARN: token " + testSecret + " leaked", "TASK WARNINGS: 2"},
			want: []string{"storage almost full", "token REDACTED leaked"}},
		{name: "warnings after the first log page", exit: "WARNINGS: 1", observe: true, wantCall: true, log: long,
			want: []string{"late warning"}},
		{name: "unreadable log still reports", exit: "WARNINGS: 1", observe: true, noLog: true, wantCall: true},
		{name: "ok is not reported", exit: "OK", observe: true, log: []string{"TASK OK"}},
		{name: "failure is not reported", exit: "unable to create VM", observe: true, log: []string{"WARN: x", "TASK ERROR: unable"}},
		{name: "no observer", exit: "WARNINGS: 1", log: []string{"WARN: x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := taskServer(t, []http.HandlerFunc{status("stopped", tc.exit)}, nil)
			if tc.noLog {
				f.handle("GET /nodes/pve/tasks/"+testUPID+"/log", badRequest)
			} else {
				f.handle("GET /nodes/pve/tasks/"+testUPID+"/log", pagedLog(tc.log))
			}
			ctx := context.Background()
			var calls int
			var got []string
			var gotStatus TaskStatus
			if tc.observe {
				ctx = WithTaskObserver(ctx, func(ev TaskEvent) {
					if !ev.Warned() {
						return
					}
					calls++
					gotStatus, got = *ev.Status, ev.Warnings
				})
			}
			_ = f.client(t).CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}})
			if tc.wantCall != (calls == 1) || calls > 1 {
				t.Fatalf("got %d observer calls, want called=%v", calls, tc.wantCall)
			}
			if !tc.wantCall {
				return
			}
			if gotStatus.UPID != testUPID || gotStatus.ExitStatus != tc.exit {
				t.Errorf("got status %+v, want upid %s exit %q", gotStatus, testUPID, tc.exit)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings: got %q want %q (-want +got):\n%s", got, tc.want, diff)
			}
		})
	}
}

// The observer hears each wait begin and end, with the outcome, and each
// lock retry of a task-starting request; exit statuses are scrubbed.
func TestTaskObserverEvents(t *testing.T) {
	leak := "unable to create VM: token " + testSecret + " rejected"
	tests := []struct {
		name     string
		statuses []http.HandlerFunc
		locks    int // lock timeouts before the task starts
		want     []string
		wantErr  bool
	}{
		{name: "ok", statuses: []http.HandlerFunc{status("running", ""), status("stopped", "OK")},
			want: []string{"waiting qmcreate", "done OK err=false"}},
		{name: "failed, secret scrubbed", statuses: []http.HandlerFunc{status("stopped", leak)}, wantErr: true,
			want: []string{"waiting qmcreate", "done unable to create VM: token REDACTED rejected err=true"}},
		{name: "lock retries", locks: 2, statuses: []http.HandlerFunc{status("stopped", "OK")},
			want: []string{"lock POST /nodes/pve/qemu attempt 1", "lock POST /nodes/pve/qemu attempt 2", "waiting qmcreate", "done OK err=false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := taskServer(t, tc.statuses, []string{"TASK ERROR"})
			n := 0
			var mu sync.Mutex
			f.handle("POST /nodes/pve/qemu", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				locked := n <= tc.locks
				mu.Unlock()
				if locked {
					lockTimeout(w, r)
					return
				}
				data(testUPID)(w, r)
			})
			var got []string
			ctx := WithTaskObserver(context.Background(), func(ev TaskEvent) {
				switch ev.Phase {
				case TaskWaiting:
					got = append(got, "waiting "+ev.UPID.Type)
				case TaskDone:
					exit := "<none>"
					if ev.Status != nil {
						exit = ev.Status.ExitStatus
					}
					got = append(got, fmt.Sprintf("done %s err=%v", exit, ev.Err != nil))
				case TaskLockRetry:
					if !IsLockTimeout(ev.Err) {
						t.Errorf("lock retry event carries %v, want the lock timeout", ev.Err)
					}
					got = append(got, fmt.Sprintf("lock %s attempt %d", ev.Request, ev.Attempt))
				}
			})
			err := f.client(t).CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("got err %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				var te *TaskError
				if !errors.As(err, &te) || strings.Contains(err.Error(), testSecret) {
					t.Errorf("got %v, want a TaskError without the secret", err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// A wait cut short by ctx still reports its end, without a status: the
// task may be running.
func TestTaskObserverAbortedWait(t *testing.T) {
	f := taskServer(t, []http.HandlerFunc{status("running", "")}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var done *TaskEvent
	ctx = WithTaskObserver(ctx, func(ev TaskEvent) {
		switch ev.Phase {
		case TaskWaiting:
			cancel()
		case TaskDone:
			done = &ev
		}
	})
	err := f.client(t).CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}})
	if err == nil || !strings.Contains(err.Error(), "may still be running") {
		t.Errorf("got %v, want a wait that says the task may still run", err)
	}
	if done == nil || done.Status != nil || done.Err == nil || done.UPID.Raw != testUPID {
		t.Errorf("got done event %+v, want one without status, with the error", done)
	}
}

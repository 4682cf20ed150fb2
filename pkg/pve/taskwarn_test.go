package pve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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
				ctx = WithTaskObserver(ctx, func(st TaskStatus, warnings []string) {
					calls++
					gotStatus, got = st, warnings
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

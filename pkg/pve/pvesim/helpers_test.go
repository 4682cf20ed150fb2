package pvesim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

const (
	testToken  = "root@pam!pvectl"
	testSecret = "0b7e5a4c-0000-4000-8000-000000000001"
)

var upidRe = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):$`)

// env is a simulator (simtest) and the test that drives it over HTTP.
type env struct {
	t *testing.T
	*simtest.Sim
}

// envelope is a decoded PVE answer.
type envelope struct {
	Status  int
	Data    json.RawMessage   `json:"data"`
	Message string            `json:"message"`
	Errors  map[string]string `json:"errors"`
	Total   *int              `json:"total"`
	Changes *string           `json:"changes"`
	Empty   bool              `json:"-"` // the answer had no body
}

func newEnv(t *testing.T, opts pvesim.Options) *env {
	t.Helper()
	return startEnv(t, simtest.Options{Sim: opts})
}

// startEnv starts a simulator with this package's token, tasks of 20ms
// (simtest's default) and seed 42 unless so says otherwise.
func startEnv(t *testing.T, so simtest.Options) *env {
	t.Helper()
	if so.Sim.TokenID == "" {
		so.Sim.TokenID = testToken
	}
	if so.Sim.TokenSecret == "" {
		so.Sim.TokenSecret = testSecret
	}
	if so.Sim.Seed == 0 {
		so.Sim.Seed = 42
	}
	return &env{t: t, Sim: simtest.Start(t, so)}
}

func (e *env) raw(method, path string, params url.Values, auth string) envelope {
	e.t.Helper()
	u := e.URL + "/api2/json" + path
	var body *strings.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		if len(params) > 0 {
			u += "?" + params.Encode()
		}
		body = strings.NewReader("")
	} else {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := e.HTTP.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	var env envelope
	if len(b) == 0 {
		// PVE's 401s have no body: the reason is in the status line.
		env.Message = strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
	} else if err := json.Unmarshal(b, &env); err != nil {
		e.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
	} else if resp.StatusCode >= 400 {
		// PVE's reason phrase is the message's first line, and the
		// body's message the whole text of the die, newline included.
		first, _, _ := strings.Cut(env.Message, "\n")
		if reason := strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" "); reason != first || !strings.HasSuffix(env.Message, "\n") {
			e.t.Errorf("%s %s: status line %q with message %q, want the message's first line as the reason and a message ending in a newline", method, path, resp.Status, env.Message)
		}
		env.Message = strings.TrimSuffix(env.Message, "\n")
	}
	env.Status = resp.StatusCode
	env.Empty = len(b) == 0
	return env
}

func (e *env) call(method, path string, kv ...string) envelope {
	e.t.Helper()
	params := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		params.Add(kv[i], kv[i+1])
	}
	return e.raw(method, path, params, "PVEAPIToken="+testToken+"="+testSecret)
}

// ok calls and requires a 200, decoding data into out when non-nil.
func (e *env) ok(out any, method, path string, kv ...string) envelope {
	e.t.Helper()
	r := e.call(method, path, kv...)
	if r.Status != http.StatusOK {
		e.t.Fatalf("%s %s: got status %d (%s %v), want 200", method, path, r.Status, r.Message, r.Errors)
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			e.t.Fatalf("%s %s: decode data %s: %v", method, path, r.Data, err)
		}
	}
	return r
}

// task starts a task and returns its UPID.
func (e *env) task(method, path string, kv ...string) string {
	e.t.Helper()
	var upid string
	e.ok(&upid, method, path, kv...)
	if !upidRe.MatchString(upid) {
		e.t.Fatalf("%s %s: got UPID %q, want PVE's format", method, path, upid)
	}
	return upid
}

type taskStatus struct {
	UPID       string `json:"upid"`
	Node       string `json:"node"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	User       string `json:"user"`
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
	PID        int64  `json:"pid"`
	PStart     int64  `json:"pstart"`
	StartTime  int64  `json:"starttime"`
}

// wait polls the task status until it stops (bounded).
func (e *env) wait(upid string) taskStatus {
	e.t.Helper()
	node := strings.Split(upid, ":")[1]
	for range 2000 {
		r := e.call("GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/status")
		// Like PVE, a task that just started has no status yet: retry.
		if r.Status == http.StatusBadRequest && r.Errors["upid"] == "no such task" {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if r.Status != http.StatusOK {
			e.t.Fatalf("task %s status: got %d (%s %v), want 200", upid, r.Status, r.Message, r.Errors)
		}
		var st taskStatus
		if err := json.Unmarshal(r.Data, &st); err != nil {
			e.t.Fatalf("task %s status: decode %s: %v", upid, r.Data, err)
		}
		if st.Status == "stopped" {
			return st
		}
		time.Sleep(2 * time.Millisecond)
	}
	e.t.Fatalf("task %s did not stop", upid)
	return taskStatus{}
}

// run starts a task, waits and requires exit status OK.
func (e *env) run(method, path string, kv ...string) {
	e.t.Helper()
	if st := e.wait(e.task(method, path, kv...)); st.ExitStatus != "OK" {
		e.t.Fatalf("%s %s: got exit status %q, want OK", method, path, st.ExitStatus)
	}
}

// object reads GET path's object.
func (e *env) object(path string, kv ...string) map[string]any {
	e.t.Helper()
	var out map[string]any
	e.ok(&out, "GET", path, kv...)
	return out
}

func (e *env) config(vmid string, kv ...string) map[string]any {
	e.t.Helper()
	return e.object("/nodes/pve/qemu/"+vmid+"/config", kv...)
}

// rows reads GET path's list.
func (e *env) rows(path string, kv ...string) []map[string]any {
	e.t.Helper()
	var rows []map[string]any
	e.ok(&rows, "GET", path, kv...)
	return rows
}

// rowsBy reads GET path's list as its rows by their field key.
func (e *env) rowsBy(key, path string, kv ...string) map[string]map[string]any {
	e.t.Helper()
	out := map[string]map[string]any{}
	for _, r := range e.rows(path, kv...) {
		out[r[key].(string)] = r
	}
	return out
}

// refusal is a call that must fail: its status and message.
type refusal struct {
	name, method, path string
	kv                 []string
	status             int
	msg                string
}

// refuses runs each refusal as a subtest: the call must answer exactly
// its status and message.
func (e *env) refuses(t *testing.T, tests []refusal) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, tc.kv...)
			if r.Status != tc.status || r.Message != tc.msg {
				t.Errorf("got %d %q %v, want %d %q", r.Status, r.Message, r.Errors, tc.status, tc.msg)
			}
		})
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// resource waits until the /cluster/resources row id satisfies ok: its
// status data is pvestatd's, refreshed every StatusInterval (bounded).
func (e *env) resource(id string, ok func(map[string]any) bool) map[string]any {
	e.t.Helper()
	var last map[string]any
	for range 1000 {
		rows := e.rows("/cluster/resources", "type", "vm")
		last = nil
		for _, r := range rows {
			if r["id"] == id {
				last = r
			}
		}
		if last != nil && ok(last) {
			return last
		}
		time.Sleep(2 * time.Millisecond)
	}
	e.t.Fatalf("/cluster/resources row %s: got %v, never as wanted", id, last)
	return nil
}

// startCase is a VM created with kv and started: its start task's exit
// status.
type startCase struct {
	name, vmid string
	kv         []string
	exit       string
}

// checkStarts creates and starts each case's VM, a subtest each.
func (e *env) checkStarts(t *testing.T, cases []startCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.run("POST", "/nodes/pve/qemu", append([]string{"vmid", tc.vmid}, tc.kv...)...)
			if st := e.wait(e.task("POST", "/nodes/pve/qemu/"+tc.vmid+"/status/start")); st.ExitStatus != tc.exit {
				t.Errorf("start: got %q want %q", st.ExitStatus, tc.exit)
			}
		})
	}
}

// agentIfaces is the answer of GET …/agent/network-get-interfaces.
type agentIfaces struct {
	Result []struct {
		Name string `json:"name"`
		IPs  []struct {
			IP string `json:"ip-address"`
		} `json:"ip-addresses"`
	} `json:"result"`
}

package pve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewClientURL(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "https host port", in: "https://pve.example:8006", want: "https://pve.example:8006/api2/json"},
		{name: "trailing slash", in: "https://pve.example:8006/", want: "https://pve.example:8006/api2/json"},
		{name: "with api root", in: "https://pve.example:8006/api2/json", want: "https://pve.example:8006/api2/json"},
		{name: "with api root and slash", in: "https://pve.example:8006/api2/json/", want: "https://pve.example:8006/api2/json"},
		{name: "proxy prefix", in: "https://gw.example/pve/", want: "https://gw.example/pve/api2/json"},
		{name: "http loopback v4", in: "http://127.0.0.1:8006", want: "http://127.0.0.1:8006/api2/json"},
		{name: "http loopback 127/8", in: "http://127.1.2.3:8006", want: "http://127.1.2.3:8006/api2/json"},
		{name: "http loopback v6", in: "http://[::1]:8006", want: "http://[::1]:8006/api2/json"},
		{name: "http localhost", in: "http://LocalHost:8006", want: "http://LocalHost:8006/api2/json"},
		{name: "http remote refused", in: "http://pve.example:8006", wantErr: "plain http is only allowed for loopback hosts"},
		{name: "http private ip refused", in: "http://192.168.1.10:8006", wantErr: "plain http is only allowed for loopback hosts"},
		{name: "empty", in: "", wantErr: "empty URL"},
		{name: "no scheme", in: "pve.example:8006", wantErr: "has no scheme: write https://pve.example:8006"},
		{name: "ftp", in: "ftp://pve.example", wantErr: "scheme must be https"},
		{name: "credentials", in: "https://root:pw@pve.example:8006", wantErr: "must not carry credentials"},
		{name: "query", in: "https://pve.example:8006/?x=1", wantErr: "must not have a query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if got := c.BaseURL(); got != tc.want {
				t.Errorf("got base %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewClientOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantErr string
	}{
		{name: "token", opts: []Option{WithToken("root@pam!ci", "s3cr3t")}},
		{name: "token pve realm", opts: []Option{WithToken("deploy@pve!pvectl-1", "s3cr3t")}},
		{name: "token email user", opts: []Option{WithToken("john@example.com@authentik!ci", "s3cr3t")}},
		{name: "token one-letter name", opts: []Option{WithToken("root@pam!x", "s3cr3t")}, wantErr: "want user@realm!tokenname"},
		{name: "token with space", opts: []Option{WithToken("ro ot@pam!ci", "s3cr3t")}, wantErr: "want user@realm!tokenname"},
		{name: "no auth", opts: []Option{WithToken("", "")}},
		{name: "token without bang", opts: []Option{WithToken("root@pam", "s3cr3t")}, wantErr: "want user@realm!tokenname"},
		{name: "token without realm", opts: []Option{WithToken("root!ci", "s3cr3t")}, wantErr: "want user@realm!tokenname"},
		{name: "token name starts with digit", opts: []Option{WithToken("root@pam!1ci", "s3cr3t")}, wantErr: "want user@realm!tokenname"},
		{name: "empty secret", opts: []Option{WithToken("root@pam!ci", "")}, wantErr: "empty secret"},
		{name: "secret without id", opts: []Option{WithToken("", "s3cr3t")}, wantErr: "want user@realm!tokenname"},
		{name: "fingerprint bad length", opts: []Option{WithFingerprint("AB:CD")}, wantErr: "64 hex digits"},
		{name: "fingerprint not hex", opts: []Option{WithFingerprint(strings.Repeat("zz", 32))}, wantErr: "not hexadecimal"},
		{name: "missing CA file", opts: []Option{WithCAFile("/nonexistent/ca.pem")}, wantErr: "CA file"},
		{name: "bad polling", opts: []Option{WithTaskPolling(0, 0)}, wantErr: "task polling"},
		{name: "bad retry", opts: []Option{WithRetry(0, 0, 0)}, wantErr: "retry"},
		{name: "negative task timeout", opts: []Option{WithTaskTimeout(-1)}, wantErr: "task timeout"},
		{name: "user agent with a line break", opts: []Option{WithUserAgent("ci\r\nX-Evil: 1")}, wantErr: "line break"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient("https://pve.example:8006", tc.opts...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q leaks the secret", err)
			}
		})
	}
}

func TestAuthAndEncoding(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /cluster/resources", data([]any{}))
	f.handle("POST /nodes/pve/qemu/100/config", data(nil))
	c := f.client(t)
	ctx := context.Background()
	if _, err := c.ClusterResources(ctx, "vm"); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "post", "/nodes/pve/qemu/100/config", url.Values{"memory": {"2048"}, "name": {"a b"}}, nil); err != nil {
		t.Fatal(err)
	}
	got := f.requests()
	want := []seen{
		{Method: "GET", Path: "/cluster/resources", RawPath: "/api2/json/cluster/resources", Query: "type=vm",
			Auth: "PVEAPIToken=root@pam!ci=" + testSecret, UserAgent: "pvectl"},
		{Method: "POST", Path: "/nodes/pve/qemu/100/config", RawPath: "/api2/json/nodes/pve/qemu/100/config",
			Body: "memory=2048&name=a+b", Auth: "PVEAPIToken=root@pam!ci=" + testSecret,
			ContentType: "application/x-www-form-urlencoded", UserAgent: "pvectl"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestEnvelope(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /nodes/pve/network", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"data": []any{
				map[string]any{"iface": "vmbr0", "type": "bridge", "autostart": 1, "active": true, "priority": 3, "families": []string{"inet"}},
			},
			"changes": "--- /etc/network/interfaces\n+++ /etc/network/interfaces.new\n",
		})
	})
	f.handle("GET /nodes/pve2/network", data([]any{}))
	f.handle("GET /empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	f.handle("GET /notjson", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>")) })
	c := f.client(t)
	ctx := context.Background()

	ifaces, changes, err := c.NetworkList(ctx, "pve")
	if err != nil {
		t.Fatal(err)
	}
	wantIfaces := []*Config{ConfigOf(map[string]string{"iface": "vmbr0", "type": "bridge", "autostart": "1", "active": "1", "priority": "3", "families": `["inet"]`})}
	if diff := cmp.Diff(wantIfaces, ifaces); diff != "" {
		t.Errorf("ifaces (-want +got):\n%s", diff)
	}
	if want := "--- /etc/network/interfaces\n+++ /etc/network/interfaces.new\n"; changes != want {
		t.Errorf("got changes %q, want %q", changes, want)
	}
	if _, changes, err := c.NetworkList(ctx, "pve2"); err != nil || changes != "" {
		t.Errorf("got changes %q, %v; want empty, nil", changes, err)
	}

	resp, err := c.DoRaw(ctx, "GET", "/empty", nil)
	if err != nil || resp.Status != 200 || resp.Data != nil {
		t.Errorf("empty body: got %+v, %v; want status 200, no data", resp, err)
	}
	if _, err := c.DoRaw(ctx, "GET", "/notjson", nil); err == nil || !strings.Contains(err.Error(), "not a JSON envelope") {
		t.Errorf("got %v, want a not-a-JSON-envelope error", err)
	}
}

func TestAPIError(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("POST /nodes/pve/qemu", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 400, map[string]any{"data": nil, "message": "Parameter verification failed.\n",
			"errors": map[string]any{"name": "invalid format - value does not look like a valid DNS name\n", "memory": "value must have a minimum value of 16\n"}})
	})
	f.handle("GET /nodes/pve/qemu/999/config", func(w http.ResponseWriter, r *http.Request) {
		rawStatus(w, 500, "Configuration file 'nodes/pve/qemu-server/999.conf' does not exist", `{"data":null}`)
	})
	f.handle("GET /nodes/pve/qemu/100/config", func(w http.ResponseWriter, r *http.Request) {
		rawStatus(w, 596, "Connection timed out", "")
	})
	c := f.client(t)
	ctx := context.Background()

	err := c.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "memory": {"1"}})
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got %T %v, want *APIError", err, err)
	}
	want := &APIError{Method: "POST", Path: "/nodes/pve/qemu", Status: 400, Message: "Parameter verification failed.",
		Errors: map[string]string{"memory": "value must have a minimum value of 16", "name": "invalid format - value does not look like a valid DNS name"}}
	if diff := cmp.Diff(want, ae); diff != "" {
		t.Errorf("APIError (-want +got):\n%s", diff)
	}
	wantMsg := "POST /nodes/pve/qemu: 400 Parameter verification failed: memory: value must have a minimum value of 16; name: invalid format - value does not look like a valid DNS name"
	if got := err.Error(); got != wantMsg {
		t.Errorf("got %q\nwant %q", got, wantMsg)
	}
	if f.count("POST", "/nodes/pve/qemu") != 1 {
		t.Errorf("a 400 was re-sent: got %d requests, want 1", f.count("POST", "/nodes/pve/qemu"))
	}

	_, err = c.QemuConfig(ctx, "pve", 999)
	if !IsNotFound(err) {
		t.Errorf("got %v, want IsNotFound", err)
	}
	if want := "GET /nodes/pve/qemu/999/config: 500 Configuration file 'nodes/pve/qemu-server/999.conf' does not exist"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, err = c.QemuConfig(ctx, "pve", 100)
	if want := "GET /nodes/pve/qemu/100/config: 596 Connection timed out"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestErrorPredicates(t *testing.T) {
	lock := "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"
	tests := []struct {
		name           string
		err            error
		lock, notFound bool
	}{
		{name: "nil", err: nil},
		{name: "plain", err: errors.New("can't lock file '/x' - got timeout")},
		{name: "lock 500", err: &APIError{Status: 500, Message: lock}, lock: true},
		{name: "lock wrapped", err: errors.Join(errors.New("clone"), &APIError{Status: 500, Message: lock}), lock: true},
		{name: "lock but 400", err: &APIError{Status: 400, Message: lock}},
		{name: "404", err: &APIError{Status: 404, Message: "Not Found"}, notFound: true},
		{name: "500 does not exist", err: &APIError{Status: 500, Message: "Configuration file 'nodes/pve/qemu-server/1.conf' does not exist"}, notFound: true},
		{name: "400 no such", err: &APIError{Status: 400, Message: "no such interface 'vmbr9'"}, notFound: true},
		{name: "500 not found", err: &APIError{Status: 500, Message: "pool 'x' not found"}, notFound: true},
		{name: "500 no config on node", err: &APIError{Status: 500, Message: "unable to find configuration file for VM 100 on node 'pve'"}, notFound: true},
		{name: "task lock failure", err: &TaskError{ExitStatus: lock}},
		{name: "500 other", err: &APIError{Status: 500, Message: "internal error"}},
		{name: "403 does not exist", err: &APIError{Status: 403, Message: "Permission check failed (user does not exist)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsLockTimeout(tc.err); got != tc.lock {
				t.Errorf("IsLockTimeout: got %v, want %v", got, tc.lock)
			}
			if got := IsNotFound(tc.err); got != tc.notFound {
				t.Errorf("IsNotFound: got %v, want %v", got, tc.notFound)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, method, path, want string }{
		{name: "method", method: "PATCH", path: "/version", want: "unsupported method"},
		{name: "relative", method: "GET", path: "version", want: "invalid API path"},
		{name: "empty segment", method: "GET", path: "/nodes//qemu", want: "invalid API path"},
		{name: "query in path", method: "GET", path: "/pools?poolid=x", want: "invalid API path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.DoRaw(context.Background(), tc.method, tc.path, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := c.QemuPower(context.Background(), "pve", 100, "explode", nil); err == nil || !strings.Contains(err.Error(), "unknown power action") {
		t.Errorf("got %v, want unknown power action", err)
	}
}

func TestDoDecodesData(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /version", data(map[string]any{"version": "9.1.1", "release": "9.1", "repoid": "abc"}))
	c := f.client(t)
	var raw json.RawMessage
	if err := c.Do(context.Background(), "GET", "/version", nil, &raw); err != nil {
		t.Fatal(err)
	}
	if want := `{"release":"9.1","repoid":"abc","version":"9.1.1"}`; string(raw) != want {
		t.Errorf("got %s, want %s", raw, want)
	}
}

// A GET that fails in transit or with a passing 500 is asked again;
// writes, and 500s that say the object does not exist, are sent exactly once.
func TestReadRetries(t *testing.T) {
	failing := func(status, okAfter int, msg string) http.HandlerFunc {
		var n int
		var mu sync.Mutex
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			k := n
			mu.Unlock()
			if okAfter > 0 && k > okAfter {
				writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"version": "9.1.4"}})
				return
			}
			if status == 0 {
				hangUp(w, r)
				return
			}
			writeJSON(w, status, map[string]any{"data": nil, "message": msg})
		}
	}
	tests := []struct {
		name      string
		method    string
		status    int // 0 = hang up
		okAfter   int // answer 200 after this many failures (0 = never)
		wantCalls int
		wantErr   bool
	}{
		{"GET 596 then ok", "GET", 596, 2, 3, false},
		{"GET hang-up then ok", "GET", 0, 1, 2, false},
		{"GET 596 gives up", "GET", 596, 0, readTries, true},
		{"GET 500 then ok", "GET", 500, 1, 2, false},
		{"GET 500 gives up", "GET", 500, 0, readTries, true},
		{"GET 500 does not exist is an answer", "GET", 500, 0, 1, true},
		{"POST 596 once", "POST", 596, 0, 1, true},
		{"POST 500 once", "POST", 500, 0, 1, true},
		{"PUT hang-up once", "PUT", 0, 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakePVE(t, false)
			msg := "proxy error"
			if strings.Contains(tt.name, "does not exist") {
				msg = "Configuration file 'nodes/pve/qemu-server/100.conf' does not exist"
			}
			f.handle(tt.method+" /version", failing(tt.status, tt.okAfter, msg))
			err := f.client(t).Do(t.Context(), tt.method, "/version", nil, nil)
			if (err != nil) != tt.wantErr {
				t.Errorf("got error %v, want error %v", err, tt.wantErr)
			}
			if got := f.count(tt.method, "/version"); got != tt.wantCalls {
				t.Errorf("got %d requests, want %d", got, tt.wantCalls)
			}
		})
	}
}

// A server that accepts and never answers (or stops half-way through the
// body) fails the request within its deadline, naming it; it is not asked
// again, so the deadline is the whole wait.
func TestRequestDeadline(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"no headers", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			"GET /cluster/resources: no answer within 50ms"},
		{"body stalls", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(200)
			fmt.Fprint(w, `{"data":[`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "GET /cluster/resources: the answer did not finish within 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakePVE(t, false)
			f.handle("GET /cluster/resources", tt.handler)
			_, err := f.client(t, WithRequestTimeout(50*time.Millisecond)).ClusterResources(t.Context(), "")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !IsTimeout(err) {
				t.Fatalf("got %v, want a timeout saying %q", err, tt.want)
			}
			if got := f.count("GET", "/cluster/resources"); got != 1 {
				t.Errorf("got %d requests, want 1 (a request that timed out is not sent again)", got)
			}
		})
	}
}

// Every request says who sends it: "pvectl", or what WithUserAgent set.
func TestUserAgent(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want string
	}{{want: "pvectl"}, {opts: []Option{WithUserAgent("ci-deploy/1.0")}, want: "ci-deploy/1.0"}} {
		f := newFakePVE(t, false)
		f.handle("GET /version", data(map[string]any{"version": "9.1"}))
		if err := f.client(t, tc.opts...).Do(context.Background(), http.MethodGet, "/version", nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.requests()[0].UserAgent; got != tc.want {
			t.Errorf("User-Agent %q, want %q", got, tc.want)
		}
	}
}

func TestTimeoutOptions(t *testing.T) {
	for _, opt := range []Option{WithRequestTimeout(-1), WithUploadTimeout(-time.Second), WithTaskTimeout(-1)} {
		if _, err := NewClient("https://pve.example:8006", opt); err == nil {
			t.Error("a negative timeout was accepted")
		}
	}
	c, err := NewClient("https://pve.example:8006", WithRequestTimeout(time.Second), WithUploadTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]time.Duration{
		"/nodes/pve/storage/local/upload": time.Hour,
		"/nodes/pve/qemu":                 time.Second,
	} {
		if got := c.timeoutFor("POST", path); got != want {
			t.Errorf("timeoutFor POST %s: got %s want %s", path, got, want)
		}
	}
}

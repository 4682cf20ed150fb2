package pve

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testTokenID = "root@pam!ci"
	testSecret  = "5f2c1a9e-0b7d-4c3e-9a61-7d2f0c8e4b13"
)

// seen is one request as the fake PVE received it.
type seen struct {
	Method, Path, RawPath, Query, Body, Auth, ContentType, UserAgent string
}

// fakePVE is a real HTTP server with a route table keyed "METHOD /path"
// (path relative to /api2/json, decoded), recording every request.
type fakePVE struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []seen
	routes map[string]http.HandlerFunc
}

func newFakePVE(t *testing.T, tlsServer bool) *fakePVE {
	t.Helper()
	f := &fakePVE{t: t, routes: map[string]http.HandlerFunc{}}
	h := http.HandlerFunc(f.serve)
	f.srv = httptest.NewUnstartedServer(h)
	// Rejected handshakes are the point of some tests; keep them quiet.
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tlsServer {
		f.srv.StartTLS()
	} else {
		f.srv.Start()
	}
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePVE) handle(key string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[key] = h
}

func (f *fakePVE) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/api2/json")
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{
		Method: r.Method, Path: path, RawPath: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		Body: string(body), Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"),
		UserAgent: r.Header.Get("User-Agent"),
	})
	h := f.routes[r.Method+" "+path]
	f.mu.Unlock()
	// Handlers read the form from the recorded body.
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	if h == nil {
		writeJSON(w, http.StatusNotImplemented, map[string]any{"data": nil, "message": "no route " + r.Method + " " + path})
		return
	}
	h(w, r)
}

func (f *fakePVE) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

func (f *fakePVE) count(method, path string) int {
	n := 0
	for _, r := range f.requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// client builds a Client for the fake with tiny retry and poll durations.
func (f *fakePVE) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	all := append([]Option{
		WithToken(testTokenID, testSecret),
		WithRetry(6, time.Microsecond, 10*time.Microsecond),
		WithTaskPolling(time.Microsecond, 10*time.Microsecond),
	}, opts...)
	if f.srv.TLS != nil {
		all = append(all, WithHTTPClient(f.srv.Client()))
	}
	c, err := NewClient(f.srv.URL, all...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func data(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, map[string]any{"data": v}) }
}

// rawStatus answers with a custom reason phrase, as pveproxy does
// ("HTTP/1.1 500 can't lock file ..."); net/http cannot write one itself.
func rawStatus(w http.ResponseWriter, status int, reason, body string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, reason, len(body), body)
	_ = buf.Flush()
}

// hangUp closes the connection without answering: a transport error after
// the request was sent.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

func lockTimeout(w http.ResponseWriter, _ *http.Request) {
	rawStatus(w, 500, "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout", `{"data":null}`)
}

func formOf(t *testing.T, s seen) url.Values {
	t.Helper()
	raw := s.Body
	if s.Method == http.MethodGet || s.Method == http.MethodDelete {
		raw = s.Query
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("parse form %q: %v", raw, err)
	}
	return v
}

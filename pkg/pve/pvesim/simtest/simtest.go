package simtest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/internal/conformance"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// Test defaults for the fields of pvesim.Options left zero.
const (
	DefaultTokenID      = "root@pam!pvectl"
	DefaultTokenSecret  = "5e3d1c0a-51d7-4e57-9f7a-00000000cafe"
	DefaultTaskDuration = 20 * time.Millisecond
	DefaultSeed         = 1
	// DefaultLockWait stands for PVE's 10 s lock_config wait at the test
	// task duration: ten tasks long, as PVE waits for about ten typical
	// tasks. The status interval stays PVE's own (pvesim's default).
	DefaultLockWait = 10 * DefaultTaskDuration
	// DefaultAuthFailureDelay holds back a 401 briefly instead of PVE's 3 s.
	DefaultAuthFailureDelay = 5 * time.Millisecond
)

// Options tunes Start. The zero value is a plain-HTTP simulator with the
// defaults above.
type Options struct {
	// Sim configures the simulator; zero TokenID, TokenSecret, TaskDuration,
	// LockWait, Seed and AuthFailureDelay get the test defaults.
	Sim pvesim.Options
	// TLS serves HTTPS with a certificate from pvesim.SelfSignedCert, as
	// `pvectl sim --tls` does; Client pins its fingerprint.
	TLS bool
	// Conformance puts the official-schema checker (internal/conformance,
	// testdata/pve-api/apidoc-9.1.json) in front of the simulator: every
	// request and answer that breaks the schema fails the test at cleanup.
	Conformance bool
	// ClientOptions are applied after Client's defaults (the token, task
	// polling every 1..5ms), so they can override them.
	ClientOptions []pve.Option
	// Wrap, when set, stands between the client and the rest (a fault
	// injector: it may answer a request itself or pass it on).
	Wrap func(http.Handler) http.Handler
}

// Sim is a running simulator. It stops when the test ends.
type Sim struct {
	URL         string // https://127.0.0.1:PORT or http://…, without /api2/json
	TokenID     string
	Secret      string
	Fingerprint string // the certificate's SHA-256 ("AA:BB:…") with TLS, else ""
	Server      *pvesim.Server
	HTTP        *httptest.Server
	Client      *pve.Client
	Requests    *Counter
}

// Start runs a simulator for the test (or benchmark) tb.
func Start(tb testing.TB, opts Options) *Sim {
	tb.Helper()
	so := withTestDefaults(opts.Sim)
	var checker *conformance.Checker
	if opts.Conformance {
		c, err := loadChecker()
		if err != nil {
			tb.Fatalf("simtest: load the official schema: %v", err)
		}
		checker = c
	}
	// The certificate comes first: GET /nodes answers its fingerprint.
	var cert tls.Certificate
	if opts.TLS {
		c, fp, err := pvesim.SelfSignedCert([]string{"127.0.0.1", "localhost"})
		if err != nil {
			tb.Fatalf("simtest: certificate: %v", err)
		}
		cert, so.Fingerprint = c, fp
	}
	srv, err := pvesim.New(so)
	if err != nil {
		tb.Fatalf("simtest: pvesim.New: %v", err)
	}
	s := &Sim{TokenID: so.TokenID, Secret: so.TokenSecret, Server: srv, Requests: newCounter()}
	violations := s.startHTTP(opts, checker, cert, so.Fingerprint)
	tb.Cleanup(func() {
		s.HTTP.Close()
		if err := srv.Close(); err != nil {
			tb.Errorf("simtest: close the simulator: %v", err)
		}
		for _, v := range violations.all() {
			tb.Errorf("PVE 9.1 schema violation: %s", v)
		}
	})

	copts := []pve.Option{pve.WithToken(s.TokenID, s.Secret), pve.WithTaskPolling(time.Millisecond, 5*time.Millisecond)}
	if opts.TLS {
		copts = append(copts, pve.WithFingerprint(s.Fingerprint))
	}
	s.Client, err = pve.NewClient(s.URL, append(copts, opts.ClientOptions...)...)
	if err != nil {
		tb.Fatalf("simtest: client: %v", err)
	}
	return s
}

// withTestDefaults fills the zero fields of so that have a test default.
func withTestDefaults(so pvesim.Options) pvesim.Options {
	if so.TokenID == "" {
		so.TokenID = DefaultTokenID
	}
	if so.TokenSecret == "" {
		so.TokenSecret = DefaultTokenSecret
	}
	if so.TaskDuration == 0 {
		so.TaskDuration = DefaultTaskDuration
	}
	if so.Seed == 0 {
		so.Seed = DefaultSeed
	}
	if so.LockWait == 0 {
		so.LockWait = DefaultLockWait
	}
	if so.AuthFailureDelay == 0 {
		so.AuthFailureDelay = DefaultAuthFailureDelay
	}
	return so
}

// startHTTP serves the simulator behind the conformance checker (when
// set), the request counter and opts.Wrap, over TLS with cert when
// opts.TLS; it answers the log the checker reports to.
func (s *Sim) startHTTP(opts Options, checker *conformance.Checker, cert tls.Certificate, fingerprint string) *violationLog {
	var h http.Handler = s.Server
	violations := &violationLog{}
	if checker != nil {
		h = conformance.Middleware(checker, h, violations.add)
	}
	h = s.Requests.wrap(h)
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	s.HTTP = httptest.NewUnstartedServer(h)
	if opts.TLS {
		s.HTTP.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		s.HTTP.StartTLS()
		s.Fingerprint = fingerprint
	} else {
		s.HTTP.Start()
	}
	s.URL = s.HTTP.URL
	return violations
}

// violationLog collects what the conformance middleware reports; requests
// run concurrently.
type violationLog struct {
	mu   sync.Mutex
	list []string
}

func (l *violationLog) add(v conformance.Violation) {
	kind := "request"
	if v.Response {
		kind = "response"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, fmt.Sprintf("%s %s %s: %v", kind, v.Method, v.Path, v.Err))
}

func (l *violationLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// loadChecker reads the official apidoc once per test binary; the checker
// is read-only and shared.
var loadChecker = sync.OnceValues(func() (*conformance.Checker, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	return conformance.Load(filepath.Join(root, "testdata", "pve-api", "apidoc-9.1.json"))
})

// repoRoot walks up from this source file to the directory holding go.mod,
// so the apidoc is found whichever package's tests run.
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("simtest: cannot locate its own source file")
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", fmt.Errorf("simtest: no go.mod above %s", file)
		}
	}
}

// Counter counts the requests a simulator serves, in total and by
// "METHOD /path" (the path below /api2/json).
type Counter struct {
	mu    sync.Mutex
	total int64
	n     map[string]int
}

func newCounter() *Counter { return &Counter{n: map[string]int{}} }

func (c *Counter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.total++
		c.n[r.Method+" "+strings.TrimPrefix(r.URL.Path, conformance.APIPrefix)]++
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// Total is the number of requests since the start or the last Reset.
func (c *Counter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Reset starts counting afresh and returns the counts by "METHOD /path"
// since the start or the last Reset.
func (c *Counter) Reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n, c.total = map[string]int{}, 0
	return n
}

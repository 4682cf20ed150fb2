package pve

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Client talks to one PVE API endpoint (https://host:8006, API under /api2/json).
// Every typed call goes through Do / DoRaw, so auth, retries, redaction and
// tracing live in one place.
type Client struct {
	base *url.URL
	http *http.Client
	cfg  config

	traceMu sync.Mutex // keeps one request's trace block in one piece
	clock   clock      // PVE's clock, from its answers' Date header
	pacer   taskPacer  // learned task durations, the poll budget (taskpoll.go)
}

type config struct {
	tokenID, tokenSecret string
	insecure             bool
	caFile               string
	fingerprint          string // normalised: 64 lower-case hex digits
	debug                io.Writer
	httpClient           *http.Client
	// pollMin is the fine poll step, pollMax the longest (taskpoll.go).
	pollMin, pollMax    time.Duration
	retries             int
	retryBase, retryCap time.Duration
	userAgent           string
	taskTimeout         time.Duration
	// requestTimeout bounds the wait for a request's status line and
	// headers, and again for its body; uploadTimeout replaces it for
	// uploads. 0: only the caller's ctx bounds them.
	requestTimeout, uploadTimeout time.Duration
	// taskStartGrace is how long WaitTask tolerates 400s from the status call:
	// PVE answers 400 until the new task's status file exists.
	taskStartGrace time.Duration
}

func defaultConfig() config {
	return config{
		pollMin:        DefaultPollMin,
		pollMax:        DefaultPollMax,
		retries:        6,
		retryBase:      50 * time.Millisecond,
		retryCap:       5 * time.Second,
		userAgent:      "pvectl",
		taskTimeout:    DefaultTaskTimeout,
		requestTimeout: DefaultRequestTimeout,
		uploadTimeout:  DefaultUploadTimeout,
		taskStartGrace: 2 * time.Second,
	}
}

// Option configures a Client.
type Option func(*config) error

// tokenIDRe is PVE's pve-userid "!" pve-tokenid. The user part may itself
// contain "@" (john@example.com@pve); the realm and token name may not.
var tokenIDRe = lazyre.New(`^[^\s:/!]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$`)

// NewClient validates baseURL ("https://pve:8006" or "http://127.0.0.1:8006";
// plain http only for loopback hosts) and the options.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.tokenID == "" && cfg.tokenSecret != "" {
		return nil, errors.New("a token secret was given without a token id")
	}
	hc := cfg.httpClient
	if hc == nil {
		tlsCfg, err := tlsConfig(&cfg)
		if err != nil {
			return nil, err
		}
		hc = &http.Client{Transport: newTransport(tlsCfg)}
	}
	return &Client{base: base, http: hc, cfg: cfg}, nil
}

// parseBaseURL returns the API root <scheme>://<host>[/prefix]/api2/json.
func parseBaseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("empty URL (set PROXMOX_URL, e.g. https://pve.example:8006)")
	}
	if !strings.Contains(raw, "://") {
		return nil, fmt.Errorf("URL %q has no scheme: write https://%s", raw, raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("URL %q: scheme must be https (or http for loopback), e.g. https://pve.example:8006", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("URL %q has no host (want e.g. https://pve.example:8006)", raw)
	}
	if u.User != nil {
		return nil, errors.New("the URL must not carry credentials; use an API token")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("URL %q must not have a query or fragment", u.Redacted())
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("plain http is only allowed for loopback hosts, not %q: use https://%s", u.Hostname(), u.Host)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/api2/json")
	p = strings.TrimRight(p, "/")
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p + "/api2/json"}, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newTransport(tlsCfg *tls.Config) *http.Transport {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   32, // reads go 16 at a time (planner.DefaultReadConcurrency), polls besides
		// pveproxy closes idle keep-alive connections after about 5s; reusing
		// one at that moment fails the request, so give them up earlier.
		IdleConnTimeout: 4 * time.Second,
		TLSClientConfig: tlsCfg,
	}
	return t
}

// WithToken sets API token auth; tokenID is "user@realm!name".
func WithToken(tokenID, secret string) Option {
	return func(c *config) error {
		tokenID = strings.TrimSpace(tokenID)
		if tokenID == "" && secret == "" {
			return nil // no auth: only useful against a simulator
		}
		if !tokenIDRe.MatchString(tokenID) {
			return fmt.Errorf("invalid API token id %q: want user@realm!tokenname (e.g. root@pam!pvectl)", tokenID)
		}
		if secret == "" {
			return fmt.Errorf("API token %s has an empty secret (set PROXMOX_TOKEN_SECRET)", tokenID)
		}
		if strings.ContainsAny(secret, "\r\n") {
			return fmt.Errorf("API token %s: the secret contains a line break", tokenID)
		}
		c.tokenID, c.tokenSecret = tokenID, secret
		return nil
	}
}

// WithInsecure disables TLS verification (PROXMOX_INSECURE). A pinned
// fingerprint is still enforced.
func WithInsecure(insecure bool) Option {
	return func(c *config) error { c.insecure = insecure; return nil }
}

// WithCAFile trusts the PEM CA bundle at path (PROXMOX_CA_FILE), in addition
// to the system roots.
func WithCAFile(path string) Option {
	return func(c *config) error { c.caFile = strings.TrimSpace(path); return nil }
}

// WithFingerprint pins the server certificate's SHA-256 fingerprint
// (hex, with or without colons; PROXMOX_TLS_FINGERPRINT). The connection
// then succeeds exactly when the leaf certificate matches, whatever its CA.
func WithFingerprint(sha256 string) Option {
	return func(c *config) error {
		if strings.TrimSpace(sha256) == "" {
			c.fingerprint = ""
			return nil
		}
		fp, err := normalizeFingerprint(sha256)
		if err != nil {
			return err
		}
		c.fingerprint = fp
		return nil
	}
}

// WithDebug writes an HTTP trace (secrets redacted) to w.
func WithDebug(w io.Writer) Option {
	return func(c *config) error { c.debug = w; return nil }
}

// WithHTTPClient replaces the transport (tests). The TLS options have no
// effect then: hc's transport decides.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error { c.httpClient = hc; return nil }
}

// WithTaskPolling sets the task poll steps (default DefaultPollMin ..
// DefaultPollMax): min is the fine step, max the longest; each task's
// poll budget is a burst of 20 polls, then one per 10 min steps
// (taskpoll.go).
func WithTaskPolling(min, max time.Duration) Option {
	return func(c *config) error {
		if min <= 0 || max < min {
			return fmt.Errorf("task polling: want 0 < min <= max, got %s .. %s", min, max)
		}
		c.pollMin, c.pollMax = min, max
		return nil
	}
}

// WithRetry sets how often and how long task-starting requests that hit a
// lock timeout are retried (default 6 tries, 50ms base, 5s cap, jittered).
// tries counts every attempt, the first included.
func WithRetry(tries int, base, cap time.Duration) Option {
	return func(c *config) error {
		if tries < 1 || base < 0 || cap < base {
			return fmt.Errorf("retry: want tries >= 1 and 0 <= base <= cap, got %d, %s, %s", tries, base, cap)
		}
		c.retries, c.retryBase, c.retryCap = tries, base, cap
		return nil
	}
}

// WithTaskTimeout bounds each WaitTask (default 30m; 0 means only the
// caller's context bounds it).
func WithTaskTimeout(d time.Duration) Option {
	return timeoutOption("task timeout", d, func(c *config) *time.Duration { return &c.taskTimeout })
}

// Request deadlines. PVE answers API calls within seconds (long work runs
// as a task); a minute covers a busy cluster's synchronous config updates
// and large /cluster/resources answers. An upload carries a whole ISO.
const (
	DefaultRequestTimeout = 60 * time.Second
	DefaultUploadTimeout  = 30 * time.Minute
	DefaultTaskTimeout    = 30 * time.Minute
)

// WithRequestTimeout bounds each request: the status line and headers must
// come within d, and the body within d after them (default 60s; 0 means
// only the caller's context bounds them). A request that hits it fails
// with a *DeadlineError naming the request and is not sent again.
func WithRequestTimeout(d time.Duration) Option {
	return timeoutOption("request timeout", d, func(c *config) *time.Duration { return &c.requestTimeout })
}

// WithUploadTimeout is WithRequestTimeout for uploads (POST …/upload;
// default 30m).
func WithUploadTimeout(d time.Duration) Option {
	return timeoutOption("upload timeout", d, func(c *config) *time.Duration { return &c.uploadTimeout })
}

// timeoutOption is the Option of the With…Timeout settings: it refuses a
// negative d, naming the setting (what), and stores d in the field that
// field points to (0 leaves only the caller's context as the bound).
func timeoutOption(what string, d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%s: negative duration %s", what, d)
		}
		*field(c) = d
		return nil
	}
}

// WithUserAgent sets the User-Agent header (default "pvectl").
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		if strings.ContainsAny(ua, "\r\n") {
			return errors.New("user agent contains a line break")
		}
		c.userAgent = ua
		return nil
	}
}

// BaseURL is the API root requests are sent to (".../api2/json").
func (c *Client) BaseURL() string { return c.base.String() }

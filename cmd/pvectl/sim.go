package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// The simulator's default token; it guards nothing but a local simulator.
const (
	simDefaultTokenID     = "root@pam!pvectl"
	simDefaultTokenSecret = "simulator"
)

type simOptions struct {
	g            *globalOptions
	listen       string
	state        string
	dataDir      string
	apidoc       string
	nodes        []string
	token        string
	extraTokens  []string
	latency      time.Duration
	dhcpRange    string
	taskDuration time.Duration
	errorRate    float64
	lockRate     float64
	warnRate     float64
	lockWait     time.Duration
	statusEvery  time.Duration
	tls          bool
	verbose      bool
	offline      []string
}

func newSimCmd(g *globalOptions) *cobra.Command {
	o := &simOptions{g: g}
	c := &cobra.Command{
		Use:   "sim",
		Short: "Run the PVE API simulator (for tests, demos and dry runs)",
		Long: `sim serves a stateful, in-memory Proxmox VE API on a loopback address: the
same paths, parameter checks, tasks, locks and staged network changes as PVE
9.x. It never touches the network. Point pvectl at it with:

    export PROXMOX_URL=http://127.0.0.1:8006
    export PROXMOX_TOKEN_ID='root@pam!pvectl' PROXMOX_TOKEN_SECRET=simulator

The --token token is root@pam's (or its user's, made an Administrator on /)
without privilege separation: it may do everything an API token may. To try
what an under-privileged token sees, add one with --extra-token
'ci@pve!plan=SECRET' (privilege-separated, its user created, no ACLs) and
grant it rights through the API as the admin token, like on PVE:
PUT /access/acl path=/vms roles=PVEVMAdmin users=ci@pve, and again with
tokens=ci@pve!plan. Tokens created through the API work as well.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c.Context()) },
	}
	f := c.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8006", "address to listen on")
	f.StringVar(&o.state, "state", "", "persist the simulated cluster in FILE (loaded at start)")
	f.StringVar(&o.dataDir, "data-dir", "", "keep the bytes of uploaded and downloaded files as DIR/<storage>/<content>/<filename>")
	f.StringVar(&o.apidoc, "apidoc", "", "serve this copy of PVE's API documentation at /pve-docs/api-viewer/apidoc.js, as a node does (for explain's descriptions)")
	f.StringSliceVar(&o.nodes, "nodes", []string{"pve"}, "node names")
	f.StringVar(&o.token, "token", simDefaultTokenID+"="+simDefaultTokenSecret, "the admin API token, ID=SECRET (no privilege separation)")
	f.StringArrayVar(&o.extraTokens, "extra-token", nil, "add a privilege-separated API token without ACLs, ID=SECRET (repeatable)")
	f.DurationVar(&o.latency, "latency", 0, "delay added to every request")
	f.DurationVar(&o.taskDuration, "task-duration", 300*time.Millisecond, "how long each task runs")
	f.Float64Var(&o.errorRate, "error-rate", 0, "fraction of requests answered with a server fault (0..1)")
	f.Float64Var(&o.lockRate, "lock-contention", 0, "fraction of calls that find their guest lock busy for longer than PVE waits: their task (or the call, where PVE locks before it answers) fails with a lock timeout (0..1)")
	f.DurationVar(&o.lockWait, "lock-wait", pvesim.DefaultLockWait, "how long a guest lock is waited for (PVE's lock_config wait; a clone's 1s scales with it)")
	f.DurationVar(&o.statusEvery, "status-interval", pvesim.DefaultStatusInterval, "how often /cluster/resources' status data is refreshed (PVE's pvestatd interval)")
	f.Float64Var(&o.warnRate, "warn-rate", 0, "fraction of successful tasks that end with 'WARNINGS: 1' (0..1)")
	f.StringVar(&o.dhcpRange, "dhcp-range", pvesim.DefaultDHCPRange.String(), "where the guest agent's DHCP leases come from (IPv4 CIDR), for VMs without a static ipconfig0 address")
	f.StringArrayVar(&o.offline, "offline-node", nil, "a node that is down: calls proxied to it answer 595 No route to host, /nodes shows it offline (repeatable; not the first node, which answers)")
	f.BoolVar(&o.tls, "tls", false, "serve HTTPS with a self-signed certificate (its fingerprint is printed)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log each request on stderr: method, path (no query, no body), status, time taken")
	return c
}

func (o *simOptions) run(ctx context.Context) error {
	id, secret, extra, err := o.tokens()
	if err != nil {
		return invalid(err)
	}
	dhcp, err := o.checkFlags()
	if err != nil {
		return invalid(err)
	}
	// The certificate comes first: GET /nodes answers its fingerprint.
	var cert tls.Certificate
	fp := ""
	if o.tls {
		host, _, _ := net.SplitHostPort(o.listen)
		var err error
		if cert, fp, err = pvesim.SelfSignedCert([]string{host, "localhost"}); err != nil {
			return err
		}
	}
	sim, err := pvesim.New(pvesim.Options{
		Nodes: o.nodes, TokenID: id, TokenSecret: secret, Tokens: extra,
		Latency: o.latency, TaskDuration: o.taskDuration, DHCPRange: dhcp,
		StateFile: o.state, DataDir: o.dataDir, APIDocFile: o.apidoc,
		ErrorRate: o.errorRate, LockContention: o.lockRate, WarnRate: o.warnRate,
		LockWait: o.lockWait, StatusInterval: o.statusEvery,
		Fingerprint: fp, OfflineNodes: o.offline,
	})
	if err != nil {
		return err
	}
	defer sim.Close()

	ln, err := o.listenTCP()
	if err != nil {
		return err
	}
	scheme := "http"
	// pveproxy drops idle keep-alive connections after about 5 s: so does the simulator.
	var h http.Handler = sim
	if o.verbose {
		h = logRequests(o.g.streams.Err, sim)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second}
	w := o.g.streams.Out
	if o.tls {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
		fmt.Fprintf(w, "TLS certificate SHA-256 fingerprint: %s\n", fp)
		fmt.Fprintf(w, "  export PROXMOX_TLS_FINGERPRINT=%s\n", fp)
	}
	o.printBanner(w, scheme, ln.Addr(), id, extra)
	return serveUntilStopped(ctx, srv, ln)
}

// tokens reads --token (its ID and secret) and the --extra-token tokens.
func (o *simOptions) tokens() (string, string, []pvesim.Token, error) {
	id, secret, ok := strings.Cut(o.token, "=")
	if !ok || id == "" || secret == "" || !strings.Contains(id, "!") {
		return "", "", nil, fmt.Errorf("--token %q: want ID=SECRET with ID like user@realm!name", redactToken(o.token))
	}
	var extra []pvesim.Token
	for _, t := range o.extraTokens {
		eid, esecret, ok := strings.Cut(t, "=")
		if !ok || eid == "" || esecret == "" || !strings.Contains(eid, "!") || eid == id {
			return "", "", nil, fmt.Errorf("--extra-token %q: want ID=SECRET with ID like user@realm!name, other than --token's", redactToken(t))
		}
		extra = append(extra, pvesim.Token{ID: eid, Secret: esecret})
	}
	return id, secret, extra, nil
}

// checkFlags checks the flags other than the tokens, and returns
// --dhcp-range's prefix.
func (o *simOptions) checkFlags() (netip.Prefix, error) {
	if err := loopbackListen(o.listen); err != nil {
		return netip.Prefix{}, err
	}
	if err := checkNodeNames(o.nodes); err != nil {
		return netip.Prefix{}, err
	}
	for _, n := range o.offline {
		if !slices.Contains(o.nodes, n) || n == o.nodes[0] {
			return netip.Prefix{}, fmt.Errorf("--offline-node %q: want one of --nodes other than the first (%s), which answers the API", n, o.nodes[0])
		}
	}
	if o.latency < 0 || o.taskDuration < 0 {
		return netip.Prefix{}, errors.New("--latency and --task-duration cannot be negative")
	}
	if o.lockWait <= 0 || o.statusEvery <= 0 {
		return netip.Prefix{}, errors.New("--lock-wait and --status-interval must be positive")
	}
	for _, r := range []float64{o.errorRate, o.lockRate, o.warnRate} {
		if r < 0 || r > 1 {
			return netip.Prefix{}, errors.New("--error-rate, --lock-contention and --warn-rate take a fraction from 0 to 1")
		}
	}
	dhcp, err := netip.ParsePrefix(o.dhcpRange)
	if err != nil || !dhcp.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("--dhcp-range %q: want an IPv4 range like 127.0.100.0/24", o.dhcpRange)
	}
	return dhcp, nil
}

// listenTCP listens on --listen, saying what to do when the port is taken.
func (o *simOptions) listenTCP() (net.Listener, error) {
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("--listen %s: the port is in use (another pvectl sim, or PVE itself?)\n  Pick another port, or --listen 127.0.0.1:0 for a free one (it is printed)", o.listen)
		}
		return nil, fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	return ln, nil
}

// printBanner says where the simulator listens and how to point pvectl at
// it; the secret only when it is the well-known default.
func (o *simOptions) printBanner(w io.Writer, scheme string, addr net.Addr, id string, extra []pvesim.Token) {
	fmt.Fprintf(w, "PVE simulator listening on %s://%s (nodes %s, token %s)\n", scheme, addr, strings.Join(o.nodes, ","), id)
	shown := "<the secret given to --token>"
	if o.token == simDefaultTokenID+"="+simDefaultTokenSecret {
		shown = simDefaultTokenSecret // the well-known default guards nothing
	}
	fmt.Fprintf(w, "  export PROXMOX_URL=%s://%s PROXMOX_TOKEN_ID='%s' PROXMOX_TOKEN_SECRET=%s\n", scheme, addr, id, shown)
	for _, t := range extra {
		fmt.Fprintf(w, "  extra token %s (privilege-separated, no ACLs)\n", t.ID)
	}
	if len(o.offline) > 0 {
		fmt.Fprintf(w, "  offline nodes: %s (calls proxied to them answer 595)\n", strings.Join(o.offline, ","))
	}
	fmt.Fprintln(w, "Ctrl-C to stop.")
}

// serveUntilStopped serves srv on ln until the server fails, or ctx ends
// or SIGINT or SIGTERM comes: then it shuts srv down (waiting at most 5 s).
func serveUntilStopped(ctx context.Context, srv *http.Server, ln net.Listener) error {
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdownCtx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// loopbackListen refuses addresses other than loopback: the simulator is for
// this machine only (and pvectl speaks plain http to loopback hosts only).
func loopbackListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q: the simulator listens on loopback only (e.g. 127.0.0.1:8006, or 127.0.0.1:0 for a free port)", addr)
}

// checkNodeNames wants non-empty, distinct node names.
func checkNodeNames(nodes []string) error {
	seen := map[string]bool{}
	for _, n := range nodes {
		if n == "" {
			return errors.New("--nodes: empty node name")
		}
		if seen[n] {
			return fmt.Errorf("--nodes: %s given twice", n)
		}
		seen[n] = true
	}
	if len(nodes) == 0 {
		return errors.New("--nodes: at least one node")
	}
	return nil
}

func redactToken(s string) string {
	if id, _, ok := strings.Cut(s, "="); ok {
		return id + "=REDACTED"
	}
	return s
}

// logRequests writes one line per request to w once it is answered. Only
// the path is logged: a query string or body may carry a password.
func logRequests(w io.Writer, next http.Handler) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: rw, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s %s %d %s\n", start.UTC().Format("15:04:05.000"), r.Method, r.URL.EscapedPath(), sw.status, durfmt.Format(time.Since(start)))
	})
}

// statusWriter remembers the status a handler wrote; it passes Flush and
// Hijack on, which the simulator's answers may use.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack hands the handler a connection whose first written line — the
// status line, for answers the simulator writes itself (PVE's 401 that
// closes the connection) — sets the logged status.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return conn, rw, err
	}
	sc := &statusConn{Conn: conn, w: s}
	return sc, bufio.NewReadWriter(rw.Reader, bufio.NewWriter(sc)), nil
}

type statusConn struct {
	net.Conn
	w    *statusWriter
	seen bool
}

func (c *statusConn) Write(p []byte) (int, error) {
	if !c.seen {
		c.seen = true
		// "HTTP/1.1 401 No ticket\r\n"
		if _, rest, ok := strings.Cut(string(p[:min(len(p), 64)]), " "); ok && len(rest) >= 3 {
			if code, err := strconv.Atoi(rest[:3]); err == nil {
				c.w.status = code
			}
		}
	}
	return c.Conn.Write(p)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

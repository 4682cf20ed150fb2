package pvesim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Server is the simulator; it is an http.Handler serving /api2/json/….
type Server struct {
	opts   Options
	routes map[*schema.Method]*route // by the schema method their key names
	qemu   *guestKind
	lxc    *guestKind
	rules  map[string]*acl.Rule // every API method's permission rule, by apidoc key
	// roleTable holds the built-in roles (pve-access-control) and
	// allPrivs root@pam's privileges, every one propagated; read-only.
	roleTable map[string]map[string]bool
	allPrivs  map[string]bool

	mu      sync.Mutex // guards everything below
	st      *state
	rng     *rand.Rand
	tasks   map[string]*task
	order   []string       // task UPIDs in start order
	locks   map[int]string // vmid -> UPID of the task holding its lock
	shared  map[int]int    // vmid -> number of tasks holding a shared lock
	nextPID uint32
	closed  bool
	// reqUser is the token of the request being handled: the tasks it
	// starts run as it.
	reqUser string
	// lockFreed is closed (and replaced) whenever a task releases a lock.
	lockFreed chan struct{}
	stats     map[int]guestStat // pvestatd's last status data, by vmid
	// offline holds the nodes that are down, with when they went
	// (nodeoffline.go).
	offline map[string]time.Time
	// leases are the DHCP leases of the guest agents, by vmid (not
	// persisted: a restarted simulator hands them out anew).
	leases map[int]netip.Addr
	// macs are the MAC addresses handed out or found in use (newMAC).
	macs map[string]bool
	// taskGate, while set, holds every task started meanwhile after its
	// duration until it is closed: a test hook (export_test.go HoldTasks)
	// for tests that look at a task while it runs. Never set otherwise.
	taskGate chan struct{}
	// lockWaiters counts the calls and workers waiting for a guest lock
	// (a test hook: export_test.go LockWaiters).
	lockWaiters int

	// The state file's writer (state.go saveLoop): saveSeq numbers the
	// changes (guarded by mu), saveKick wakes the writer; savedSeq is the
	// last change written (guarded by saveMu, which serialises writes).
	saveMu    sync.Mutex
	saveSeq   uint64
	savedSeq  uint64
	savedOnce bool
	saveKick  chan struct{}

	done chan struct{}
	wg   sync.WaitGroup
}

const maxBody = 512 << 10

// New validates opts, loads or seeds the state and returns a ready server.
func New(opts Options) (*Server, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("pvesim: data dir: %w", err)
		}
	}
	s := newServer(opts)
	if err := s.loadTables(); err != nil {
		return nil, err
	}
	if err := s.initState(); err != nil {
		return nil, err
	}
	if opts.StateFile != "" {
		// Save once now: a state file that cannot be written is an error at
		// start, not a silent loss of every change later.
		s.mu.Lock()
		err := s.flushLocked()
		s.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("pvesim: state file %s: %w", opts.StateFile, err)
		}
		s.wg.Add(1)
		go s.saveLoop()
	}
	s.startStatusd()
	return s, nil
}

// newServer makes a server of normalized options, without state yet.
func newServer(opts Options) *Server {
	seed := opts.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	return &Server{
		opts:      opts,
		rng:       rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)),
		tasks:     map[string]*task{},
		locks:     map[int]string{},
		shared:    map[int]int{},
		lockFreed: make(chan struct{}),
		nextPID:   0x1000 + uint32(seed&0xffff),
		done:      make(chan struct{}),
		saveKick:  make(chan struct{}, 1),
		qemu:      qemuKind(),
		lxc:       lxcKind(),
	}
}

// loadTables builds the route table, the permission rules and the roles.
func (s *Server) loadTables() error {
	routes, err := routeTable(schema.Default(), s.surfaces()...)
	if err != nil {
		return err
	}
	s.routes = routes
	if s.rules, err = acl.Rules(); err != nil {
		return err
	}
	s.roleTable = acl.BuiltinRoles()
	s.allPrivs = map[string]bool{}
	for p := range s.roleTable[acl.Administrator] {
		s.allPrivs[p] = true
	}
	return nil
}

// initState loads the state file or seeds a state, and makes it hold the
// options' nodes and tokens and take the offline nodes down.
func (s *Server) initState() error {
	if s.opts.StateFile != "" {
		st, err := loadState(s.opts.StateFile)
		if err != nil {
			return err
		}
		s.st = st
	}
	if s.st == nil {
		s.st = s.seed()
	}
	s.st.ensureNodes(s.opts.Nodes, s)
	s.st.Access.ensureToken(Token{ID: s.opts.TokenID, Secret: s.opts.TokenSecret}, true)
	for _, tk := range s.opts.Tokens {
		s.st.Access.ensureToken(tk, false)
	}
	for _, n := range s.opts.OfflineNodes {
		if err := s.setOfflineLocked(n, true); err != nil {
			return err
		}
	}
	return nil
}

// Close stops running task goroutines (their effects are dropped, like a
// crashed node) and saves the state.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := s.serve(w, r)
	s.logf("%s %s -> %d (%s)", r.Method, r.URL.Path, status, time.Since(start).Round(time.Millisecond))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) int {
	if s.opts.Latency > 0 && !sleepCtx(r.Context(), s.opts.Latency) {
		return 0
	}
	if r.URL.Path == "/pve-docs/api-viewer/apidoc.js" && r.Method == http.MethodGet {
		return s.serveAPIDoc(w)
	}
	path, ok := apiPath(r.URL.Path)
	if !ok {
		return writeErr(w, r, fail(http.StatusNotImplemented, "Method '%s %s' not implemented", r.Method, r.URL.Path))
	}
	rawPath := routePath(path)
	authid, reason := s.authenticate(r)
	if authid == "" {
		return s.unauthorized(w, r, reason)
	}
	m, vars, rt := s.match(r.Method, rawPath)
	if rt == nil {
		return writeErr(w, r, fail(http.StatusNotImplemented, "Method '%s %s' not implemented", r.Method, path))
	}
	params, up, err := s.readParams(r)
	if err != nil {
		return writeErr(w, r, err)
	}
	q := &request{ctx: r.Context(), method: r.Method, path: path, vars: vars, params: params, user: authid, upload: up}
	defer func() {
		if q.upload != nil { // not taken over by a task
			os.Remove(q.upload.tmp)
		}
	}()
	// Repeated values of a list parameter are one list (pve-common
	// RESTHandler.pm normalize_legacy_param_formats).
	m.JoinLists(params)
	raw := make(url.Values, len(params))
	for k, v := range params {
		raw[k] = v
	}
	for k, v := range vars {
		q.params.Set(k, v)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	data, aerr := s.dispatchLocked(m, rt, q, raw)
	if aerr != nil {
		return writeErr(w, r, aerr)
	}
	if r.Method != http.MethodGet {
		s.saveLocked()
	}
	return writeData(w, data)
}

// apiPath is an /api2/json URL path's API path ("/" for the root), false
// for a path outside the API.
func apiPath(urlPath string) (string, bool) {
	const prefix = "/api2/json"
	if !strings.HasPrefix(urlPath, prefix+"/") {
		return "", false
	}
	path := strings.TrimSuffix(strings.TrimPrefix(urlPath, prefix), "/")
	if path == "" {
		path = "/"
	}
	return path, true
}

// match finds a call's schema method, path variables and route; rt is nil
// for a path PVE does not have.
func (s *Server) match(method, rawPath string) (m *schema.Method, vars map[string]string, rt *route) {
	// One match against the schema's path templates picks the handler and
	// the parameter facts; a schema path without a handler is answered like
	// a path PVE does not have.
	m, vars, _ = schema.Default().Match(method, rawPath)
	if m != nil && segments(m.Path) != segments(rawPath) {
		// One path component per variable (see routePath): the
		// schema's lenient trailing {volume} takes more.
		m = nil
	}
	return m, vars, s.routes[m]
}

// dispatchLocked checks a call as PVE does before its handler runs, then
// runs the handler.
func (s *Server) dispatchLocked(m *schema.Method, rt *route, q *request, raw url.Values) (any, *apiError) {
	if s.closed {
		return nil, fail(http.StatusServiceUnavailable, "server shutting down")
	}
	// PVE checks the method's permissions before it verifies the
	// parameters (pve-manager PVE/HTTPServer.pm rest_handler).
	if err := s.allowed(rt.key, q); err != nil {
		return nil, asAPIError(err)
	}
	// A call for a node that is down ends in pveproxy, before the node
	// that would check its parameters.
	if e := s.unreachable(m.Path, q.vars); e != nil {
		return nil, e
	}
	if errs := checkParams(m, raw, q.vars); len(errs) > 0 {
		return nil, paramErr(errs)
	}
	if !rt.noFault && s.opts.ErrorRate > 0 && s.rng.Float64() < s.opts.ErrorRate {
		if s.rng.IntN(2) == 0 {
			return nil, fail(http.StatusInternalServerError, "simulated fault: internal server error")
		}
		return nil, fail(596, "Connection timed out")
	}
	if node, ok := q.vars["node"]; ok && !s.st.hasNode(node) {
		return nil, fail(http.StatusInternalServerError,
			"hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", node, node)
	}
	s.reqUser = q.user
	data, herr := rt.h(q)
	s.reqUser = ""
	if herr != nil {
		return nil, asAPIError(herr)
	}
	return data, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// asAPIError is the answer for a handler's error: its own status, else a 500.
func asAPIError(err error) *apiError {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = fail(http.StatusInternalServerError, "%s", err.Error())
	}
	return ae
}

// readParams merges the query with a form, JSON or multipart body, as pveproxy does.
func (s *Server) readParams(r *http.Request) (url.Values, *upload, *apiError) {
	params := url.Values{}
	for k, v := range r.URL.Query() {
		params[k] = v
	}
	if r.Method == http.MethodGet || r.Body == nil {
		return params, nil, nil
	}
	ct := r.Header.Get("Content-Type")
	// pveproxy streams a body to a file only for POST …/upload, and only
	// as multipart; elsewhere multipart is not understood (pve-manager
	// PVE/HTTPServer.pm auth_handler: isUpload; pve-http-server
	// AnyEvent.pm unshift_read_header).
	upload := r.Method == http.MethodPost && uploadPath.MatchString(r.URL.Path)
	switch {
	case strings.HasPrefix(ct, "multipart/form-data") && upload:
		up, err := s.readMultipart(r, params)
		return params, up, err
	case strings.HasPrefix(ct, "multipart/form-data"):
		return nil, nil, fail(506, "upload 'Content-Type '%s' not implemented", ct)
	case upload && r.ContentLength != 0:
		return nil, nil, fail(http.StatusInternalServerError, "upload 'Content-Type '%s' not implemented", ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, nil, fail(http.StatusBadRequest, "unable to read request body: %v", err)
	}
	if len(body) > maxBody {
		return nil, nil, fail(http.StatusRequestEntityTooLarge, "request entity too large")
	}
	if len(body) == 0 {
		return params, nil, nil
	}
	if strings.HasPrefix(ct, "application/json") {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, nil, fail(http.StatusBadRequest, "unable to parse JSON body: %v", err)
		}
		for k, v := range m {
			switch x := v.(type) {
			case string:
				params.Set(k, x)
			case bool:
				params.Set(k, map[bool]string{true: "1", false: "0"}[x])
			case float64:
				params.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
			case nil:
			case []any:
				// One value per item, as repeated form values: a list
				// parameter joins them, any other refuses them.
				for _, it := range x {
					if it == nil {
						params.Add(k, "null") // as JSON writes it
						continue
					}
					params.Add(k, schema.FormValue(it))
				}
			default:
				b, _ := json.Marshal(x)
				params.Set(k, string(b))
			}
		}
		return params, nil, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, nil, fail(http.StatusBadRequest, "unable to parse form body: %v", err)
	}
	for k, v := range form {
		params[k] = v
	}
	return params, nil, nil
}

func segments(path string) int { return strings.Count(strings.Trim(path, "/"), "/") }

// checkParams checks a request's parameters, path variables included, as
// PVE's RESTHandler does before it runs a method.
func checkParams(m *schema.Method, params url.Values, vars map[string]string) map[string]string {
	all := make(url.Values, len(params)+len(vars))
	for k, v := range params {
		all[k] = v
	}
	for k, v := range vars {
		all.Set(k, v)
	}
	return m.Check(all, schema.CheckOptions{})
}

func validNodeName(n string) bool {
	if n == "" || len(n) > 63 || n[0] == '-' || n[len(n)-1] == '-' {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// serveAPIDoc answers GET /pve-docs/api-viewer/apidoc.js from
// Options.APIDocFile (pve-manager PVE/Service/pveproxy.pm: /pve-docs/ is a
// static directory, served to anyone).
func (s *Server) serveAPIDoc(w http.ResponseWriter) int {
	if s.opts.APIDocFile == "" {
		http.Error(w, "File not found", http.StatusNotFound)
		return http.StatusNotFound
	}
	b, err := os.ReadFile(s.opts.APIDocFile)
	if err != nil {
		http.Error(w, "File not found", http.StatusNotFound)
		return http.StatusNotFound
	}
	w.Header().Set("Content-Type", "application/javascript")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return http.StatusOK
}

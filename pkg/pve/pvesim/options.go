package pvesim

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Options configures a simulator.
type Options struct {
	Nodes []string // default ["pve"]
	// TokenID and TokenSecret are the admin token: a token of its user
	// without privilege separation (root@pam's by default, so it holds
	// every privilege; another user is made an Administrator on /).
	TokenID     string // default "root@pam!pvectl"
	TokenSecret string // required
	// Tokens are more API tokens to try the permission checks with: each
	// is privilege-separated, and a user the simulator creates for one
	// has no ACL (grant some with PUT /access/acl).
	Tokens []Token
	// DHCPRange is where the guest agent's DHCP leases come from (a VM
	// whose ipconfig0 has no static address): DefaultDHCPRange when
	// invalid (zero), a loopback range so that nothing a test reaches
	// leaves the machine.
	DHCPRange    netip.Prefix
	Latency      time.Duration // added to every request
	TaskDuration time.Duration // how long a task runs before it ends (default 300ms)
	StateFile    string        // loaded at New if present, saved atomically after each mutation
	DataDir      string        // where simulated uploads/downloads land; created if set
	// APIDocFile is a copy of PVE's API documentation (apidoc.js or its
	// JSON) served at /pve-docs/api-viewer/apidoc.js, as pveproxy serves
	// it from /usr/share/pve-docs without authentication. The simulator
	// carries none of its own (it is AGPL text): without a file that path
	// is a 404.
	APIDocFile string
	ErrorRate  float64 // fraction of requests answered with a 500/596 fault (not task status/log)
	// LockContention is the fraction of calls taking a guest lock that find
	// it held by someone else for longer than PVE waits: the call fails
	// with PVE's lock timeout where PVE takes the lock in the API process,
	// its task fails where the worker takes it (docs/simulator.md).
	LockContention float64
	Seed           int64 // rng seed (0 = time-based)
	Logf           func(format string, args ...any)

	// TaskStatusDelay, when positive, is a fault to inject: for that long
	// after a task starts its status call answers 400 "no such task" (and
	// its log "unable to open file"), as if the task file were not written
	// yet. PVE itself never does this on the task's node: fork_worker
	// (pve-common src/PVE/RESTEnvironment.pm) lets the worker create its
	// task log before it hands the parent the UPID the call answers, and
	// pve-manager PVE/API2/Tasks.pm read_task_status only checks that file.
	// It never outlasts the task itself. 0 or negative: no such window.
	TaskStatusDelay time.Duration
	// WarnRate is the fraction of otherwise successful tasks that end with
	// exit status "WARNINGS: 1" and a "WARN: …" log line (success, not failure).
	WarnRate float64
	// LockWait is how long lock_config waits for a busy guest lock: PVE's
	// 10 s by default. Other PVE waits scale with it (a clone's 1 s is a
	// tenth). Tests shorten it.
	LockWait time.Duration
	// StatusInterval is how often pvestatd refreshes the status data that
	// /cluster/resources answers from (name, status, template, maxmem…):
	// PVE's 10 s by default. A guest newer than the last refresh is listed
	// with status "unknown" only.
	StatusInterval time.Duration
	// Fingerprint is the SHA-256 fingerprint ("AA:BB:…") of the certificate
	// the simulator is served with, answered as every node's
	// ssl_fingerprint by GET /nodes; without TLS each node gets one of its own.
	Fingerprint string
	// AuthFailureDelay is how long a 401 is held back: 0 means PVE's 3 s,
	// negative none.
	AuthFailureDelay time.Duration
	// OfflineNodes are nodes that are down from the start (not the first:
	// it answers the API); see nodeoffline.go and SetNodeOffline.
	OfflineNodes []string
	// StatusExpiry is how long an offline node's guests keep their last
	// status data in /cluster/resources: PVE's 5 min by default.
	StatusExpiry time.Duration
}

// PVE's own timings, the defaults of Options.
const (
	DefaultLockWait       = 10 * time.Second // pve-guest-common AbstractConfig.pm lock_config
	DefaultStatusInterval = 10 * time.Second // pve-manager PVE/Service/pvestatd.pm $updatetime
)

// normalize checks the options and fills in the defaults.
func (opts *Options) normalize() error {
	if err := opts.normalizeIdentity(); err != nil {
		return err
	}
	if opts.TaskDuration <= 0 {
		opts.TaskDuration = 300 * time.Millisecond
	}
	if !opts.DHCPRange.IsValid() {
		opts.DHCPRange = DefaultDHCPRange
	}
	if !opts.DHCPRange.Addr().Is4() {
		return fmt.Errorf("pvesim: DHCP range %s: want an IPv4 range", opts.DHCPRange)
	}
	opts.DHCPRange = opts.DHCPRange.Masked()
	if opts.ErrorRate < 0 || opts.ErrorRate > 1 || opts.LockContention < 0 || opts.LockContention > 1 ||
		opts.WarnRate < 0 || opts.WarnRate > 1 {
		return errors.New("pvesim: error rate, lock contention and warn rate must be within [0,1]")
	}
	if opts.Latency < 0 || opts.LockWait < 0 || opts.StatusInterval < 0 {
		return errors.New("pvesim: latency, lock wait and status interval must not be negative")
	}
	if opts.LockWait == 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.StatusInterval == 0 {
		opts.StatusInterval = DefaultStatusInterval
	}
	if opts.StatusExpiry <= 0 {
		opts.StatusExpiry = DefaultStatusExpiry
	}
	return nil
}

// normalizeIdentity checks the node names and the tokens.
func (opts *Options) normalizeIdentity() error {
	if len(opts.Nodes) == 0 {
		opts.Nodes = []string{"pve"}
	}
	for _, n := range opts.Nodes {
		if !validNodeName(n) {
			return fmt.Errorf("pvesim: invalid node name %q", n)
		}
	}
	if opts.TokenID == "" {
		opts.TokenID = "root@pam!pvectl"
	}
	if !strings.Contains(opts.TokenID, "@") || !strings.Contains(opts.TokenID, "!") {
		return fmt.Errorf("pvesim: token id %q is not user@realm!name", opts.TokenID)
	}
	if opts.TokenSecret == "" {
		return errors.New("pvesim: a token secret is required")
	}
	for _, tk := range opts.Tokens {
		if _, _, ok := splitTokenID(tk.ID); !ok || tk.Secret == "" || tk.ID == opts.TokenID {
			return fmt.Errorf("pvesim: token %q: want a distinct user@realm!name with a secret", tk.ID)
		}
	}
	return nil
}

package pve

// This file fixes the exported surface of package pve that the other packages
// (planner, cmd, pvesim tests) are written against. The bodies are filled in
// by the client implementation; signatures change only by agreement.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Client talks to one PVE API endpoint (https://host:8006, API under /api2/json).
// Every typed call goes through Do / DoRaw, so auth, retries, redaction and
// tracing live in one place.
type Client struct {
	base *url.URL
	http *http.Client
	cfg  config
}

type config struct {
	tokenID, tokenSecret string
	insecure             bool
	caFile               string
	fingerprint          string
	debug                io.Writer
	httpClient           *http.Client
	pollMin, pollMax     time.Duration
	retries              int
	retryBase, retryCap  time.Duration
	userAgent            string
}

// Option configures a Client.
type Option func(*config) error

// NewClient validates baseURL ("https://pve:8006" or "http://127.0.0.1:8006";
// plain http only for loopback hosts) and the options.
func NewClient(baseURL string, opts ...Option) (*Client, error) { panic("TODO") }

// WithToken sets API token auth; tokenID is "user@realm!name".
func WithToken(tokenID, secret string) Option { panic("TODO") }

// WithInsecure disables TLS verification (PROXMOX_INSECURE).
func WithInsecure(insecure bool) Option { panic("TODO") }

// WithCAFile trusts the PEM CA bundle at path (PROXMOX_CA_FILE).
func WithCAFile(path string) Option { panic("TODO") }

// WithFingerprint pins the server certificate's SHA-256 fingerprint
// (hex, with or without colons; PROXMOX_TLS_FINGERPRINT).
func WithFingerprint(sha256 string) Option { panic("TODO") }

// WithDebug writes an HTTP trace (secrets redacted) to w.
func WithDebug(w io.Writer) Option { panic("TODO") }

// WithHTTPClient replaces the transport (tests).
func WithHTTPClient(hc *http.Client) Option { panic("TODO") }

// WithTaskPolling sets the task poll backoff bounds (default 100ms .. 2s).
func WithTaskPolling(min, max time.Duration) Option { panic("TODO") }

// WithRetry sets how often and how long task-starting requests that hit a
// lock timeout are retried (default 6 tries, 200ms base, 5s cap, jittered).
func WithRetry(tries int, base, cap time.Duration) Option { panic("TODO") }

// Response is the decoded PVE envelope.
type Response struct {
	Status  int
	Data    json.RawMessage
	Changes json.RawMessage // only GET /nodes/{node}/network has it
}

// Do sends one request. path is relative to /api2/json ("/nodes/pve/qemu").
// GET/DELETE carry params in the query, POST/PUT as a form body. The "data"
// member is decoded into out when out is non-nil. Errors are *APIError.
func (c *Client) Do(ctx context.Context, method, path string, params url.Values, out any) error {
	panic("TODO")
}

// DoRaw is Do returning the whole envelope.
func (c *Client) DoRaw(ctx context.Context, method, path string, params url.Values) (*Response, error) {
	panic("TODO")
}

// StartTask sends a request that starts a PVE task and returns its UPID.
// Lock-timeout 500s are retried with capped, jittered exponential backoff;
// nothing is re-sent once a task has started.
func (c *Client) StartTask(ctx context.Context, method, path string, params url.Values) (UPID, error) {
	panic("TODO")
}

// WaitTask polls the task until it stops. "OK" and "WARNINGS: n" succeed;
// anything else is a *TaskError carrying the log tail.
func (c *Client) WaitTask(ctx context.Context, upid UPID) (*TaskStatus, error) { panic("TODO") }

// RunTask is StartTask followed by WaitTask. A call that answers null instead
// of a UPID (some synchronous variants) succeeds immediately.
func (c *Client) RunTask(ctx context.Context, method, path string, params url.Values) error {
	panic("TODO")
}

// UPID is a parsed PVE task id.
type UPID struct {
	Raw       string
	Node      string
	PID       uint32
	PStart    uint64
	StartTime int64
	Type      string
	ID        string
	User      string
}

// ParseUPID parses exactly PVE's UPID format (trailing colon required).
func ParseUPID(s string) (UPID, error) { panic("TODO") }

func (u UPID) String() string { return u.Raw }

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
type TaskStatus struct {
	UPID       string `json:"upid"`
	Node       string `json:"node"`
	Status     string `json:"status"` // running | stopped
	ExitStatus string `json:"exitstatus,omitempty"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	User       string `json:"user"`
}

// APIError is a non-2xx answer from PVE.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
	Errors       map[string]string // 400: per-parameter messages
}

func (e *APIError) Error() string { panic("TODO") }

// TaskError is a task that stopped with an exit status other than OK/WARNINGS.
type TaskError struct {
	UPID       string
	ExitStatus string
	LogTail    []string
}

func (e *TaskError) Error() string { panic("TODO") }

// IsLockTimeout reports whether err is PVE's "can't lock file … got timeout" 500.
func IsLockTimeout(err error) bool { panic("TODO") }

// IsNotFound reports whether err says the object does not exist
// (HTTP 404, or 500 "... does not exist" as PVE answers for missing VMs/ifaces).
func IsNotFound(err error) bool { panic("TODO") }

// Config is a PVE object's configuration with every value rendered as PVE
// would write it in a form ("2048", "1", "virtio=BC:24:11:..,bridge=vmbr0").
// Numbers keep no decimals when integral. "digest" is kept as a key.
type Config map[string]string

// ClusterResource is one row of GET /cluster/resources.
type ClusterResource struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // qemu | lxc | node | storage | pool | sdn
	Node     string `json:"node,omitempty"`
	VMID     int    `json:"vmid,omitempty"`
	Name     string `json:"name,omitempty"`
	Status   string `json:"status,omitempty"`
	Template bool   `json:"-"` // decoded from 0/1
	Tags     string `json:"tags,omitempty"`
	Pool     string `json:"pool,omitempty"`
	Storage  string `json:"storage,omitempty"`
}

// ClusterResources lists GET /cluster/resources?type=typ (typ may be "").
func (c *Client) ClusterResources(ctx context.Context, typ string) ([]ClusterResource, error) {
	panic("TODO")
}

// NextID asks GET /cluster/nextid.
func (c *Client) NextID(ctx context.Context) (int, error) { panic("TODO") }

// Version is GET /version.
type Version struct {
	Version string `json:"version"`
	Release string `json:"release"`
	RepoID  string `json:"repoid"`
}

func (c *Client) Version(ctx context.Context) (*Version, error) { panic("TODO") }

// NodeNames lists GET /nodes.
func (c *Client) NodeNames(ctx context.Context) ([]string, error) { panic("TODO") }

// QemuStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
type QemuStatus struct {
	Status    string `json:"status"` // running | stopped
	QMPStatus string `json:"qmpstatus,omitempty"`
	Lock      string `json:"lock,omitempty"`
	Name      string `json:"name,omitempty"`
	Template  bool   `json:"-"`
}

func (c *Client) QemuConfig(ctx context.Context, node string, vmid int) (Config, error) {
	panic("TODO")
}
func (c *Client) QemuStatus(ctx context.Context, node string, vmid int) (*QemuStatus, error) {
	panic("TODO")
}

// CreateQemu POSTs /nodes/{node}/qemu (params include vmid) and waits for the task.
func (c *Client) CreateQemu(ctx context.Context, node string, params url.Values) error {
	panic("TODO")
}

// UpdateQemu POSTs /nodes/{node}/qemu/{vmid}/config (async) and waits.
func (c *Client) UpdateQemu(ctx context.Context, node string, vmid int, params url.Values) error {
	panic("TODO")
}

// QemuPower POSTs /nodes/{node}/qemu/{vmid}/status/{action} and waits.
func (c *Client) QemuPower(ctx context.Context, node string, vmid int, action string, params url.Values) error {
	panic("TODO")
}

// DeleteQemu DELETEs /nodes/{node}/qemu/{vmid} with purge=1 and
// destroy-unreferenced-disks=1 and waits.
func (c *Client) DeleteQemu(ctx context.Context, node string, vmid int) error { panic("TODO") }

// NetworkList is GET /nodes/{node}/network: the staged view of every
// interface, and the staged diff ("" when nothing is pending).
func (c *Client) NetworkList(ctx context.Context, node string) (ifaces []Config, changes string, err error) {
	panic("TODO")
}
func (c *Client) CreateIface(ctx context.Context, node string, params url.Values) error {
	panic("TODO")
}
func (c *Client) UpdateIface(ctx context.Context, node, iface string, params url.Values) error {
	panic("TODO")
}
func (c *Client) DeleteIface(ctx context.Context, node, iface string) error { panic("TODO") }

// ApplyNetwork commits staged changes (PUT /nodes/{node}/network) and waits.
func (c *Client) ApplyNetwork(ctx context.Context, node string) error { panic("TODO") }

// RevertNetwork discards staged changes (DELETE /nodes/{node}/network).
func (c *Client) RevertNetwork(ctx context.Context, node string) error { panic("TODO") }

// Pool is GET /pools?poolid=ID (members flattened).
type Pool struct {
	PoolID  string
	Comment string
	Members []ClusterResource
}

// Pools lists GET /pools (ids and comments only).
func (c *Client) Pools(ctx context.Context) ([]Pool, error) { panic("TODO") }

// Pool reads one pool with members (GET /pools?poolid=ID).
func (c *Client) Pool(ctx context.Context, id string) (*Pool, error)      { panic("TODO") }
func (c *Client) CreatePool(ctx context.Context, params url.Values) error { panic("TODO") }

// UpdatePool is PUT /pools (params include poolid).
func (c *Client) UpdatePool(ctx context.Context, params url.Values) error { panic("TODO") }

// DeletePool is DELETE /pools?poolid=ID.
func (c *Client) DeletePool(ctx context.Context, id string) error { panic("TODO") }

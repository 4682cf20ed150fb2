package spec

// This file fixes the exported surface of package spec that planner and cmd
// are written against.

import (
	"fmt"
	"io"
	"strconv"

	"github.com/pvectl/pvectl/internal/dag"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Pos is a place in a spec file.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (p Pos) String() string {
	if p.File == "" {
		return "-"
	}
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Ref names a resource: "Kind/name".
type Ref struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func (r Ref) String() string { return r.Kind + "/" + r.Name }

// ParseRef parses "Kind/name".
func ParseRef(s string) (Ref, error) { return parseRef(s) }

// State is the desired existence of a resource. It is one byte, beside
// the resource's two flags, so that a Resource stays in the 192-byte size
// class (TestResourceSizes); its text is "present" or "absent" (JSON, %s).
type State uint8

const (
	_ State = iota // unset
	Present
	Absent
)

var stateNames = [...]string{"", "present", "absent"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// ParseState is the State named s; false when s names none.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s && s != "" {
			return State(i), true
		}
	}
	return 0, false
}

// MarshalText writes the state's name: a saved plan's form is unchanged.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "present", "absent" or "" (unset).
func (s *State) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*s = 0
		return nil
	}
	st, ok := ParseState(string(b))
	if !ok {
		return fmt.Errorf("state must be present or absent, got %q", b)
	}
	*s = st
	return nil
}

// Resource is one validated, interpolated, defaulted document.
type Resource struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Connection string `json:"connection"` // "" = the environment-configured connection
	DependsOn  []Ref  `json:"dependsOn"`  // explicit dependsOn plus implicit edges found by Load
	Protected  bool   `json:"protected"`
	State      State  `json:"state"`
	// ReadOnly is `managed: false`: pvectl reads the object (it must
	// exist; others may depend on it) and never creates, changes or
	// deletes it.
	ReadOnly bool `json:"readOnly,omitempty"`
	// Rare holds what few resources have: read it through RenamedFrom,
	// SecretKeys and SecretEnv (nil reads as none). Its JSON fields are
	// the resource's own, as before it moved here.
	*Rare

	// Params are the PVE API parameters of the kind's create call, with PVE's
	// own names, in wire form: booleans "1"/"0", numbers in decimal, property
	// strings rendered "k=v,k=v" (a map in YAML is rendered in its key order;
	// a string is kept as written). Identity keys defaulted from Name are set
	// here (QemuVM "name", LinuxBridge "iface", Pool "poolid").
	Params *Params `json:"params"`
	// Remove lists PVE keys written as `key: null`: delete them (delete=k1,k2).
	Remove []string `json:"remove"`
	// Keys holds pvectl's camelCase keys (running, image, …) decoded into
	// the kind's struct (*GuestKeys for guests); nil for kinds without own
	// keys. A plan file round-trips it as that struct.
	Keys any `json:"own,omitempty"`

	Pos    Pos          `json:"pos"`    // the document's "kind:" line
	KeyPos KeyPositions `json:"keyPos"` // position of each spec key (Params, Remove and Own keys)
}

// Rare is the part of a Resource that few resources have, behind a
// pointer so that every other resource stays in the 192-byte size class
// (TestResourceSizes): 10 MB of small documents are mostly Resources.
type Rare struct {
	// RenamedFrom is the identity the object has in PVE before this
	// document renames it in place (`renamedFrom:`, like Terraform's
	// moved blocks); "" when none.
	RenamedFrom string `json:"renamedFrom,omitempty"`
	// SecretKeys are the spec keys the document declares secret
	// (`secretKeys:`, secretflow.go): treated as secret.Key names are.
	// SecretEnv names, per secret key written as exactly ${VAR}, the
	// variable: a saved plan records it (never the value).
	SecretKeys []string          `json:"secretKeys,omitempty"`
	SecretEnv  map[string]string `json:"secretEnv,omitempty"`
}

// RenamedFrom is Rare.RenamedFrom, "" when r has none.
func (r *Resource) RenamedFrom() string {
	if r.Rare == nil {
		return ""
	}
	return r.Rare.RenamedFrom
}

// SecretKeys is Rare.SecretKeys, nil when r has none.
func (r *Resource) SecretKeys() []string {
	if r.Rare == nil {
		return nil
	}
	return r.Rare.SecretKeys
}

// SecretEnv is Rare.SecretEnv, nil when r has none.
func (r *Resource) SecretEnv() map[string]string {
	if r.Rare == nil {
		return nil
	}
	return r.Rare.SecretEnv
}

// rare returns r.Rare, made if r has none, to write into.
func (r *Resource) rare() *Rare {
	if r.Rare == nil {
		r.Rare = &Rare{}
	}
	return r.Rare
}

// Address is "Kind/name".
func (r *Resource) Address() string { return r.Kind + "/" + r.Name }

// Ref returns the resource's reference.
func (r *Resource) Ref() Ref { return Ref{r.Kind, r.Name} }

// Connection is a Connection document, env-interpolated.
// Its JSON field names are the document's spec keys; the `doc` tags
// describe them in `pvectl explain` and the JSON Schema.
type Connection struct {
	Name           string   `json:"-"`
	URL            string   `json:"url" doc:"PVE's API address, https://HOST:8006 (plain http:// only for loopback hosts such as pvectl sim); a path is allowed behind a reverse proxy."`
	TokenID        string   `json:"tokenId" doc:"The API token, user@realm!tokenname (or set user and tokenName)."` // user@realm!name (or built from User + TokenName)
	User           string   `json:"user" doc:"The API token's user, user@realm: with tokenName, instead of tokenId."`
	TokenName      string   `json:"tokenName" doc:"The API token's name: with user, instead of tokenId."`
	TokenSecret    string   `json:"tokenSecret" doc:"The API token's secret. Write ${VAR} to read it from the environment (a saved plan then records only the variable's name); it is never printed."`
	Nodes          []string `json:"nodes" doc:"The nodes to place resources on; the first is the default node of resources without spec.node."`
	DNSDomain      string   `json:"dnsDomain" doc:"The DNS domain a guest without a static IP is looked up in (NAME.DOMAIN), for provisioning."`
	DNSServers     []string `json:"dnsServers" doc:"The DNS servers to look guests up with, for provisioning."`
	SSHUser        string   `json:"sshUser" doc:"The SSH user for provisioning (default root)."`
	SSHPrivateKey  string   `json:"sshPrivateKey" doc:"The SSH private key for provisioning. Write ${VAR}; it is never printed."`
	Insecure       bool     `json:"insecure" doc:"true: do not verify PVE's TLS certificate (prefer tlsFingerprint)."`
	TLSFingerprint string   `json:"tlsFingerprint" doc:"Pin PVE's certificate by its SHA-256 fingerprint (64 hex digits, colons optional)."`
	CAFile         string   `json:"caFile" doc:"A PEM file of CA certificates to trust besides the system roots."`
	Stack          string   `json:"stack" doc:"The stack this connection's objects belong to: what pvectl creates is marked with it, and plan lists (plan --prune removes) the objects of this stack that no document names. --stack and PVECTL_STACK override it; default: default."`
	Pos            Pos      `json:"-"`
	// SecretEnv names, per secret key (tokenSecret, sshPrivateKey), the
	// environment variable its value came from when it was written as
	// exactly ${VAR}: a saved plan records the name, never the value.
	SecretEnv map[string]string `json:"-"`
	// Unresolved are the problems of secret keys whose ${VAR} is unset.
	// Only connecting needs a secret: validate accepts them, plan and
	// apply report them (file:line) for the connections they use.
	Unresolved Diagnostics `json:"-"`
}

// Set is everything Load read: the managed resources (every kind but
// Connection and Defaults, with Defaults already merged in), the named
// connections, and the dependency graph.
type Set struct {
	Resources   []*Resource
	Connections map[string]*Connection
	// Graph is the dependency graph: use DepGraph, which makes it at the
	// first call.
	Graph *Graph
	// Unset are the variables a DeferUnset load left unresolved, sorted.
	Unset []string
}

// Lookup finds a resource by address.
func (s *Set) Lookup(addr string) *Resource {
	for _, r := range s.Resources {
		if r.Address() == addr {
			return r
		}
	}
	return nil
}

// Graph is the dependency DAG over resource addresses (internal/dag).
type Graph = dag.Graph

// Diagnostic is one problem with a spec.
type Diagnostic struct {
	Pos Pos
	Msg string
}

func (d Diagnostic) String() string { return d.Pos.String() + ": " + d.Msg }

// Diagnostics collects every problem found; it is the error Load returns.
type Diagnostics []Diagnostic

func (ds Diagnostics) Error() string {
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += "\n"
		}
		s += d.String()
	}
	return s
}

// LoadOptions tunes Load.
type LoadOptions struct {
	// Getenv looks up ${VAR}; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// Schema holds the PVE parameter facts; nil means schema.Default().
	Schema *schema.Table
	// Stdin is read for the path "-" (StdinPath); nil means os.Stdin.
	Stdin io.Reader
	// DeferUnset (validate) takes a ${VAR} whose variable is not set as
	// a value not known yet: its syntax and place are checked, its value
	// is not, and Set.Unset names the variable. Without it such a
	// reference is an error at its file:line (plan, apply).
	DeferUnset bool
}

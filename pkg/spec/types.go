package spec

// This file fixes the exported surface of package spec that planner and cmd
// are written against.

import (
	"fmt"

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

// State is the desired existence of a resource.
type State string

const (
	Present State = "present"
	Absent  State = "absent"
)

// Kind names.
const (
	KindConnection   = "Connection"
	KindDefaults     = "Defaults"
	KindQemuVM       = "QemuVM"
	KindPool         = "Pool"
	KindLinuxBridge  = "LinuxBridge"
	KindNetworkApply = "NetworkApply"
)

// Resource is one validated, interpolated, defaulted document.
type Resource struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Connection string `json:"connection"` // "" = the environment-configured connection
	DependsOn  []Ref  `json:"dependsOn"`  // explicit dependsOn plus implicit edges found by Load
	Protected  bool   `json:"protected"`
	State      State  `json:"state"`

	// Params are the PVE API parameters of the kind's create call, with PVE's
	// own names, in wire form: booleans "1"/"0", numbers in decimal, property
	// strings rendered "k=v,k=v" (a map in YAML is rendered in its key order;
	// a string is kept as written). Identity keys defaulted from Name are set
	// here (QemuVM "name", LinuxBridge "iface", Pool "poolid").
	Params map[string]string `json:"params"`
	// Remove lists PVE keys written as `key: null`: delete them (delete=k1,k2).
	Remove []string `json:"remove"`
	// Own holds pvectl's camelCase keys (running, image, ...) as decoded YAML
	// values: string, int, bool, float64, []any, map[string]any.
	Own map[string]any `json:"own"`

	Pos    Pos            `json:"pos"`    // the document's "kind:" line
	KeyPos map[string]Pos `json:"keyPos"` // position of each spec key (Params, Remove and Own keys)
}

// Address is "Kind/name".
func (r *Resource) Address() string { return r.Kind + "/" + r.Name }

// Ref returns the resource's reference.
func (r *Resource) Ref() Ref { return Ref{r.Kind, r.Name} }

// Connection is a Connection document, env-interpolated.
type Connection struct {
	Name           string
	URL            string
	TokenID        string // user@realm!name (or built from User + TokenName)
	User           string
	TokenName      string
	TokenSecret    string
	Nodes          []string
	DNSDomain      string
	DNSServers     []string
	SSHUser        string
	SSHPrivateKey  string
	Insecure       bool
	TLSFingerprint string
	CAFile         string
	Pos            Pos
}

// Set is everything Load read: the managed resources (every kind but
// Connection and Defaults, with Defaults already merged in), the named
// connections, and the dependency graph.
type Set struct {
	Resources   []*Resource
	Connections map[string]*Connection
	Graph       *Graph
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

// Graph is the dependency DAG over resource addresses.
type Graph struct {
	// Deps maps an address to the addresses it depends on (sorted).
	Deps map[string][]string
}

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
}

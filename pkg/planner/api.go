// Package planner compares desired resources with live PVE state, produces a
// Plan (a value that can be saved and applied later), and applies a Plan by
// walking the dependency DAG with bounded parallelism. It never prints:
// progress flows through Hooks.
package planner

// This file fixes the exported surface that cmd is written against.

import (
	"context"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Action is what a Change does.
type Action rune

const (
	NoOp      Action = '='
	Create    Action = '+'
	Update    Action = '~'
	Replace   Action = '±' // rendered "-/+"
	Delete    Action = '-'
	Provision Action = '>'
	ApplyNet  Action = '!' // NetworkApply commit; JSON "apply"
)

// FieldDiff is one changed field. Path is the PVE key ("memory"), a
// sub-key ("net1.tag") or a pvectl key ("running").
type FieldDiff struct {
	Path   string `json:"path"`
	Before any    `json:"before"`
	After  any    `json:"after"`
}

// Change is one resource's planned action.
type Change struct {
	Address string      `json:"address"`
	Action  Action      `json:"-"`
	Diff    []FieldDiff `json:"diff"`
	Reasons []string    `json:"reasons"`
	// Everything Apply needs, so that a saved plan applies without the spec.
	Resource  *spec.Resource `json:"resource,omitempty"`
	Node      string         `json:"node,omitempty"`
	VMID      int            `json:"vmid,omitempty"`
	Digest    string         `json:"digest,omitempty"` // live config digest when planned ("" if none)
	DependsOn []string       `json:"dependsOn,omitempty"`
}

// Plan is the result of planning: a value, serialisable as a plan file.
type Plan struct {
	FormatVersion string    `json:"format_version"`
	Destroy       bool      `json:"destroy,omitempty"`
	Changes       []*Change `json:"changes"`
}

// Summary counts changes per action.
type Summary struct {
	Create, Update, Replace, Delete, Provision, NoOp, Apply int
}

// Clients hands out the API client for a connection name ("" = the default).
type Clients interface {
	Client(connection string) (*pve.Client, error)
	// Connection returns the settings of a named connection ("" = the one
	// configured from PROXMOX_* variables / the profile); nil if unknown.
	Connection(name string) *spec.Connection
}

// Options tunes Plan.
type Options struct {
	Destroy bool     // plan the removal of every resource (reverse order)
	Targets []string // limit to these addresses and their dependencies (dependents for destroy)
}

// Observed is the live state read for a Set.
type Observed struct { /* filled by the implementation */
}

// Hooks receive progress from Apply. All methods may be called concurrently.
type Hooks interface {
	PreApply(c *Change)
	PostApply(c *Change, err error)
	Skipped(c *Change, reason string)
	Message(c *Change, msg string) // e.g. "waiting for task UPID:…", "protected: skipped"
}

// ApplyOptions tunes Apply.
type ApplyOptions struct {
	Parallelism int // default 4
	Hooks       Hooks
}

// Result reports what Apply did and did not do.
type Result struct {
	Done    []string          // addresses applied
	Failed  map[string]error  // address → error
	Skipped map[string]string // address → reason (dependency failed, protected…)
}

// Observe reads the live state the Set needs in few calls: /cluster/resources
// once per connection, one network list per node, one config per managed VM,
// the pool list.
func Observe(ctx context.Context, clients Clients, set *spec.Set) (*Observed, error) {
	panic("TODO")
}

// Build compares desired with observed and returns the Plan. (A function
// named Plan would collide with the type.)
func Build(ctx context.Context, set *spec.Set, obs *Observed, opts Options) (*Plan, error) {
	panic("TODO")
}

// Apply executes plan: every change after its dependencies, at most
// opts.Parallelism at once; a failure skips only its dependents.
// The error is non-nil when anything failed; Result says what was and was not done.
func Apply(ctx context.Context, clients Clients, plan *Plan, opts ApplyOptions) (*Result, error) {
	panic("TODO")
}

// Verify re-reads live state for a saved plan and refuses it (error naming
// the resource) if any recorded config digest changed since it was made.
func Verify(ctx context.Context, clients Clients, plan *Plan) error { panic("TODO") }

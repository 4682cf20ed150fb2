package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// kindOps is everything the generic engine needs from one kind. Each kind
// lives in its own file (qemu.go, bridge.go, pool.go, netapply.go); the
// engine (observe.go, build.go, apply.go, verify.go) never switches on kinds.
type kindOps interface {
	// role tells the graph code whether the kind stages network changes or
	// commits them; everything else is roleOther.
	role() kindRole
	// observe finds r's live object, reading through lc's per-connection
	// caches so that every list is fetched once.
	observe(ctx context.Context, lc *liveConn, r *spec.Resource) (*liveObj, error)
	// plan decides r's change from its live object. It may read the changes
	// planned so far (b.changes) when it is a late kind.
	plan(b *builder, r *spec.Resource, lo *liveObj) (*Change, error)
	// apply carries c out against the live API.
	apply(ctx context.Context, x *execution, c *Change) error
	// current re-reads c's object for Verify.
	current(ctx context.Context, cl *pve.Client, c *Change) (*liveObj, error)
}

type kindRole int

const (
	roleOther    kindRole = iota
	roleIface             // stages a change in /etc/network/interfaces.new
	roleNetApply          // commits a node's staged network changes
)

// kinds is the registry of supported kinds; read-only after package init.
var kinds = map[string]kindOps{
	spec.KindQemuVM:       qemuKind{},
	spec.KindLinuxBridge:  bridgeKind{},
	spec.KindPool:         poolKind{},
	spec.KindNetworkApply: netApplyKind{},
}

func kindOf(kind string) (kindOps, error) {
	k, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("kind %s is not supported by the planner", kind)
	}
	return k, nil
}

// liveObj is one resource's live object as read at plan (or verify) time.
type liveObj struct {
	Exists bool
	Node   string
	VMID   int
	Config pve.Config // the object's configuration as PVE reports it
	Status string     // QemuVM: running | stopped
	Pool   string     // QemuVM: the pool it belongs to ("" = none)
	Digest string     // PVE's config digest, or our own sha1 over the fields
	Staged bool       // interfaces: the node's network has uncommitted changes

	// load, when set, finishes reading the object; Observe runs the loads
	// of all resources concurrently (per-VM config reads dominate a plan).
	load func(ctx context.Context) error
}

// execution is what a kind's apply gets: the client of the change's
// connection and a way to report progress.
type execution struct {
	client   *pve.Client
	hooks    Hooks
	change   *Change
	reserved map[int]bool // vmids other changes of the plan are pinned to
}

func (x *execution) msg(format string, args ...any) {
	x.hooks.Message(x.change, fmt.Sprintf(format, args...))
}

// lifecycle settles the kind-independent cases: destroy mode, state absent,
// missing objects. It returns handled=false when the kind must compare.
func (b *builder) lifecycle(r *spec.Resource, lo *liveObj, c *Change) (handled bool, err error) {
	switch {
	case b.opts.Destroy:
		switch {
		case !lo.Exists:
			c.Action, c.Reasons = NoOp, []string{"does not exist"}
		case r.Protected:
			c.Action, c.Reasons, c.Kept = NoOp, []string{"protected: skipped"}, true
		default:
			c.Action, c.Reasons = Delete, []string{"destroy"}
		}
		return true, nil
	case r.State == spec.Absent:
		switch {
		case !lo.Exists:
			c.Action, c.Reasons = NoOp, []string{"does not exist"}
		case r.Protected:
			return true, fmt.Errorf("%s is protected: refusing to delete it (state: absent)", r.Address())
		default:
			c.Action, c.Reasons = Delete, []string{"state: absent"}
		}
		return true, nil
	case !lo.Exists:
		c.Action, c.Reasons = Create, []string{"does not exist"}
		c.Diff = createDiff(r, c.Node)
		return true, nil
	}
	return false, nil
}

// createDiff lists what a create will set, as "+" fields. The node is the
// resolved one (node is the object's place, not a parameter), so a create
// whose spec leaves it out still shows where it lands.
func createDiff(r *spec.Resource, node string) []FieldDiff {
	params := maps.Clone(r.Params)
	if params == nil {
		params = map[string]string{}
	}
	delete(params, "node")
	if node != "" {
		params["node"] = node
	}
	var out []FieldDiff
	for _, k := range slices.Sorted(maps.Keys(params)) {
		out = append(out, fieldDiff(k, nil, params[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Own)) {
		switch v := r.Own[k].(type) {
		case bool, string, int, float64: // running, image, ip…; lists and maps are not fields
			out = append(out, fieldDiff(k, nil, v))
		}
	}
	return out
}

// replace turns c into a replace, unless r is protected.
func (b *builder) replace(r *spec.Resource, c *Change, reason string) error {
	if r.Protected {
		return fmt.Errorf("%s is protected: refusing to replace it (%s)", r.Address(), reason)
	}
	c.Action = Replace
	c.Reasons = append(c.Reasons, reason)
	return nil
}

// paramNode is the node the spec names, if any.
func paramNode(r *spec.Resource) string {
	if n := r.Params["node"]; n != "" {
		return n
	}
	if n, ok := r.Own["node"].(string); ok {
		return n
	}
	return ""
}

// ownBool reads a pvectl boolean key (YAML bool, or a string after a plan
// file round trip).
func ownBool(r *spec.Resource, key string) (val, ok bool) {
	switch v := r.Own[key].(type) {
	case bool:
		return v, true
	case string:
		b, ok := schema.ParseBool(v)
		return b, ok
	}
	return false, false
}

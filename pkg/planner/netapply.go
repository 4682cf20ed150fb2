package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// netApplyKind commits a node's staged network changes (NetworkApply). It
// is planned after every interface so it can see whether any will stage.
type netApplyKind struct{ engine.NeverCreated }

// Traits: every node has its network once (a singleton), and its commit
// makes live what the node's interfaces staged.
func (netApplyKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeNode, Singleton: true, Commits: string(engine.ScopeNode)}
}

// netNodeLive is what observe reads of a node for its commit: every
// interface as PVE lists it (the staged view).
type netNodeLive struct{ Ifaces []*pve.Config }

// netCommitState is what a NetworkApply change carries from plan to apply,
// saved plans included: the node's network as the plan read it, to tell
// what this plan staged from what others did, and to put the interfaces
// back when the reload fails.
type netCommitState struct {
	// Staged is the staged diff the plan found, without the files'
	// header lines (they carry modification times). The plan had staged
	// nothing yet, so all of it was made by others.
	Staged string `json:"staged,omitempty"`
	// Seen is every interface of the node as the plan read it.
	Seen []*pve.Config `json:"seen,omitempty"`
	// Ours maps the plan's interface changes on the node (addresses) to
	// the interfaces they stage.
	Ours map[string]string `json:"ours,omitempty"`
}

func (netApplyKind) NewState(lo *engine.LiveObj) any {
	st := &netCommitState{Staged: stagedDiff(lo.Config.Get("changes"))}
	if nl, ok := lo.State.(*netNodeLive); ok {
		st.Seen = nl.Ifaces
	}
	return st
}

func (netApplyKind) DecodeState(raw json.RawMessage) (any, error) {
	return engine.DecodeNew[netCommitState](raw)
}

func (netApplyKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	node := engine.ParamNode(r)
	if node == "" && lc.HasNode(r.Name) {
		node = r.Name // the natural identity: a NetworkApply named after its node
	}
	if node == "" {
		var err error
		if node, err = lc.Node(r); err != nil {
			return nil, err
		}
	} else if !lc.HasNode(node) {
		return nil, fmt.Errorf("node %q is not in the cluster", node)
	}
	ln, err := lc.Network(ctx, node)
	if err != nil {
		return nil, err
	}
	return &engine.LiveObj{Exists: true, Node: node, Config: pve.ConfigOf(map[string]string{"changes": ln.Changes}), State: &netNodeLive{Ifaces: ln.Ifaces}}, nil
}

// maxShownLines caps the staged diff a plan shows.
const maxShownLines = 40

// PlanCommit decides whether the node's staged changes need a commit: some
// are pending already (made by others: the plan shows them, and apply
// commits them only when allowed), or an interface change of this plan
// will stage one (in a destroy too: interface removals are staged).
func (netApplyKind) PlanCommit(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if !engine.StartCommit(r, c) {
		return nil
	}
	st := engine.ChangeState[netCommitState](c)
	if st == nil {
		st = &netCommitState{Staged: stagedDiff(lo.Config.Get("changes"))}
		c.State = st
	}
	st.Ours = nil
	if st.Staged != "" {
		c.Reasons = append(c.Reasons, foreignReasons(lo.Node, st.Staged)...)
	}
	st.Ours = stagedBy(b, c, r, lo, "will stage a change", ifaceName) // the node's staging scope
	return nil
}

// stagedBy lists, for the commit change c of r, the changes of the plan
// that stage into its scope (what it will commit: their addresses and
// the names in the staging), giving each as a reason (addr+" "+why); c
// applies when it has any reason. Interfaces and SDN objects alike.
func stagedBy(b *engine.Builder, c *engine.Change, r *spec.Resource, lo *engine.LiveObj, why string, name func(*spec.Resource) string) map[string]string {
	var ours map[string]string
	_, mine := engine.StagingKey(r.Kind, r.Connection, lo.Node)
	for _, addr := range slices.Sorted(maps.Keys(b.Changes)) {
		o := b.Changes[addr]
		if role, key := b.NetKey(addr); role != engine.NetStage || key != mine || o.Action == engine.NoOp {
			continue
		}
		c.Reasons = append(c.Reasons, addr+" "+why)
		if ours == nil {
			ours = map[string]string{}
		}
		ours[addr] = name(o.Resource)
	}
	if len(c.Reasons) > 0 {
		c.Action = engine.ApplyNet
	}
	return ours
}

// foreignReasons show the staged changes pvectl did not make, as the diff
// PVE reports them (capped).
func foreignReasons(node, staged string) []string {
	out := []string{fmt.Sprintf("node %s has staged network changes that pvectl did not make; apply commits them only with --allow-foreign-network-changes:", node)}
	lines := strings.Split(staged, "\n")
	shown := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "@@") {
			continue
		}
		if shown == maxShownLines {
			out = append(out, fmt.Sprintf("  … (GET /nodes/%s/network shows the whole diff)", node))
			break
		}
		out = append(out, "  "+strings.TrimRight(l, " \t"))
		shown++
	}
	return out
}

// stagedDiff is PVE's staged diff (`diff -u` of interfaces and
// interfaces.new) without its "---"/"+++" header lines, whose modification
// times change with every staged edit.
func stagedDiff(changes string) string {
	var out []string
	hunks := false
	for _, l := range strings.Split(strings.TrimRight(changes, "\n"), "\n") {
		if !hunks && (strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ")) {
			continue
		}
		hunks = hunks || strings.HasPrefix(l, "@@")
		out = append(out, l)
	}
	if d := strings.TrimSpace(strings.Join(out, "\n")); d != "" {
		return d
	}
	return strings.TrimSpace(changes) // not a diff PVE would write: keep it whole
}

func (netApplyKind) Foreign(c *engine.Change) string {
	if st := engine.ChangeState[netCommitState](c); st != nil && st.Staged != "" {
		return fmt.Sprintf("node %s has staged network changes that pvectl did not make", c.Node)
	}
	return ""
}

// Compare is planCommit: the engine calls planCommit in every mode.
func (k netApplyKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	return k.PlanCommit(b, r, lo, c)
}

// Update commits the node's staged changes, if any, once they are what
// the plan saw plus what it staged; a failed reload is reverted when the
// spec asks for it.
func (netApplyKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	ifaces, changes, err := x.Client.NetworkList(ctx, c.Node)
	if err != nil {
		return fmt.Errorf("list network of node %s: %w", c.Node, err)
	}
	if changes == "" {
		x.Msg("no pending network changes on node %s", c.Node)
		return nil
	}
	st := engine.ChangeState[netCommitState](c)
	if err := st.check(c.Node, ifaces, changes, st.ours(x.Plan), x.AllowForeign); err != nil {
		return err
	}
	x.Msg("committing network changes on node %s", c.Node)
	err = x.Client.ApplyNetwork(ctx, c.Node)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("apply network on node %s: %w", c.Node, err)
	var te *pve.TaskError
	switch {
	case !errors.As(err, &te):
		return err
	case spec.NetApply(c.Resource).RevertOnFailure == nil || !*spec.NetApply(c.Resource).RevertOnFailure:
		return fmt.Errorf("%w\n  PVE put the new configuration in place before reloading it, so the node keeps it; set revertOnFailure: true on %s to have pvectl put back the interfaces as the plan found them", err, c.Address)
	}
	return revertNetwork(ctx, x, c.Node, st, err)
}

func (netApplyKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	return &engine.LiveObj{Exists: true, Node: c.Node}, nil
}

// ReadCalls: a node's network list and its staged changes are everyone's
// (GET /nodes/{node}/network is open to all).
func (netApplyKind) ReadCalls(*spec.Resource) []engine.APICall { return nil }

// ChangeCalls: PUT /nodes/{node}/network commits the staged changes.
func (netApplyKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	if c.Action != engine.ApplyNet {
		return nil
	}
	return []engine.APICall{engine.Call("PUT", "/nodes/{node}/network", "to commit the node's network changes", "node", c.Node)}
}

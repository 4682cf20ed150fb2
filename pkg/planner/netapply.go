package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// netApplyKind commits a node's staged network changes (NetworkApply). It
// is planned after every interface so it can see whether any will stage.
type netApplyKind struct{ neverCreated }

func (netApplyKind) singleton() {}

func (netApplyKind) observe(ctx context.Context, lc *liveConn, r *spec.Resource) (*liveObj, error) {
	node := paramNode(r)
	if node == "" && lc.hasNode(r.Name) {
		node = r.Name // the natural identity: a NetworkApply named after its node
	}
	if node == "" {
		var err error
		if node, err = lc.node(r); err != nil {
			return nil, err
		}
	} else if !lc.hasNode(node) {
		return nil, fmt.Errorf("node %q is not in the cluster", node)
	}
	ln, err := lc.network(ctx, node)
	if err != nil {
		return nil, err
	}
	return &liveObj{Exists: true, Node: node, Config: pve.Config{"changes": ln.changes}}, nil
}

// planCommit decides whether the node's staged changes need a commit: some
// are pending already, or an interface change of this plan will stage one
// (in a destroy too: interface removals are staged).
func (netApplyKind) planCommit(b *builder, r *spec.Resource, lo *liveObj, c *Change) error {
	c.Action, c.Digest, c.Fingerprint = NoOp, "", ""
	switch {
	case r.State == spec.Absent:
		c.Reasons = []string{"nothing to remove"}
		return nil
	case r.ReadOnly:
		c.Reasons = []string{"managed: false: never commits"}
		return nil
	}
	if lo.Config["changes"] != "" {
		c.Reasons = append(c.Reasons, "node "+lo.Node+" has pending network changes")
	}
	for _, addr := range slices.Sorted(maps.Keys(b.changes)) {
		o := b.changes[addr]
		if !is[netStager](o.Resource.Kind) || o.Action == NoOp {
			continue
		}
		if o.Node == lo.Node && o.Resource.Connection == r.Connection {
			c.Reasons = append(c.Reasons, addr+" will stage a change")
		}
	}
	if len(c.Reasons) > 0 {
		c.Action = ApplyNet
	}
	return nil
}

// compare is planCommit: the engine calls planCommit in every mode.
func (k netApplyKind) compare(b *builder, r *spec.Resource, lo *liveObj, c *Change) error {
	return k.planCommit(b, r, lo, c)
}

func (netApplyKind) update(ctx context.Context, x *execution, c *Change) error {
	_, changes, err := x.client.NetworkList(ctx, c.Node)
	if err != nil {
		return fmt.Errorf("list network of node %s: %w", c.Node, err)
	}
	if changes == "" {
		x.msg("no pending network changes on node %s", c.Node)
		return nil
	}
	x.msg("committing network changes on node %s", c.Node)
	if err := x.client.ApplyNetwork(ctx, c.Node); err != nil {
		return fmt.Errorf("apply network on node %s: %w", c.Node, err)
	}
	return nil
}

func (netApplyKind) current(ctx context.Context, cl *pve.Client, c *Change) (*liveObj, error) {
	return &liveObj{Exists: true, Node: c.Node}, nil
}

// readPerms: a node's network list and its staged changes are everyone's.
func (netApplyKind) readPerms(*spec.Resource) []permNeed { return nil }

// changePerms: PUT /nodes/{node}/network checks Sys.Modify on the node.
func (netApplyKind) changePerms(c *Change, _ *liveObj) []permNeed {
	if c.Action != ApplyNet {
		return nil
	}
	return []permNeed{need("/nodes/"+c.Node, "to commit the node's network changes", "Sys.Modify")}
}

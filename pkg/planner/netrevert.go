package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Putting a node's interfaces back after a failed reload.
//
// pve-manager PVE/API2/Network.pm reload_network_config moves
// interfaces.new over /etc/network/interfaces first and runs `ifreload -a`
// after: when the reload fails, nothing is staged any more, and `DELETE
// /nodes/{node}/network` (which only unlinks interfaces.new) reverts
// nothing. So the revert stages the interfaces as the plan read them
// (the configuration that ran before, plus the staged changes by others
// the plan showed, if they were allowed) and reloads again.

// restoreOp is one call that puts an interface back.
type restoreOp struct {
	iface  string
	method string // POST (create), PUT (update), DELETE
	params url.Values
}

func (op restoreOp) String() string {
	switch op.method {
	case "POST":
		return "create " + op.iface
	case "DELETE":
		return "delete " + op.iface
	}
	return "restore " + op.iface
}

func (op restoreOp) run(ctx context.Context, cl *pve.Client, node string) error {
	switch op.method {
	case "POST":
		return cl.CreateIface(ctx, node, op.params)
	case "DELETE":
		return cl.DeleteIface(ctx, node, op.iface)
	}
	return cl.UpdateIface(ctx, node, op.iface, op.params)
}

// restoreOps are the calls that make now (the node's interfaces) look as
// seen: the ones it lacks created, the ones it has in addition deleted,
// the changed ones redefined in full, keys they did not have deleted.
func restoreOps(now, seen []*pve.Config) []restoreOp {
	put, _ := schema.Default().Lookup("PUT", networkUpdatePath)
	was, is := byIface(seen), byIface(now)
	var ops []restoreOp
	for _, name := range slices.Sorted(maps.Keys(is)) {
		if _, ok := was[name]; !ok {
			ops = append(ops, restoreOp{iface: name, method: "DELETE"})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(was)) {
		old, cur := was[name], is[name]
		if ifaceDigest(old) == ifaceDigest(cur) {
			continue
		}
		p := map[string]string{}
		carryLive(p, old, nil, put)
		p["type"] = old.Get("type")
		if cur == nil {
			p["iface"] = name
			ops = append(ops, restoreOp{iface: name, method: "POST", params: toValues(p)})
			continue
		}
		if del := extraKeys(old, cur, put); len(del) > 0 {
			p["delete"] = strings.Join(del, ",")
		}
		ops = append(ops, restoreOp{iface: name, method: "PUT", params: toValues(p)})
	}
	return ops
}

// extraKeys are the settings cur has and old had not, as PUT's delete
// names them (cidr takes address and netmask with it).
func extraKeys(old, cur *pve.Config, put *schema.Method) []string {
	skip := map[string]bool{"node": true, "iface": true, "type": true, "delete": true, "digest": true,
		"address": true, "netmask": true, "address6": true, "netmask6": true}
	var out []string
	for _, k := range ifaceKeys(put) {
		if _, has := cur.Lookup(k); !has || skip[k] {
			continue
		}
		if _, had := old.Lookup(k); !had {
			out = append(out, k)
		}
	}
	return out
}

// runRestore makes the calls, each pass retrying those PVE refused (a
// bridge can take its old port back only once the bond holding it is
// gone); it stops when a pass gets nothing more through.
func runRestore(ctx context.Context, cl *pve.Client, node string, ops []restoreOp) error {
	pending := ops
	for len(pending) > 0 {
		var refused []restoreOp
		var errs []error
		for _, op := range pending {
			err := op.run(ctx, cl, node)
			var ae *pve.APIError
			switch {
			case err == nil:
			case errors.As(err, &ae):
				refused = append(refused, op)
				errs = append(errs, fmt.Errorf("%s: %w", op, err))
			default:
				return fmt.Errorf("%s: %w", op, err)
			}
		}
		if len(refused) == len(pending) {
			return errors.Join(errs...)
		}
		pending = refused
	}
	return nil
}

// revertNetwork answers a failed reload (cause) on node: it puts the
// interfaces back as the plan read them and reloads again. The commit
// still counts as failed; the error says what the revert did.
func revertNetwork(ctx context.Context, x *engine.Execution, node string, st *netCommitState, cause error) error {
	now, changes, err := x.Client.NetworkList(ctx, node)
	if err != nil {
		return fmt.Errorf("%w\n  reverting: list network of node %s: %v", cause, node, err)
	}
	if changes != "" {
		// The reload failed before PVE moved the staged file: nothing
		// was committed.
		if st.Staged != "" {
			return fmt.Errorf("%w\n  nothing was committed; the staged changes stay, as they include changes pvectl did not make", cause)
		}
		if err := x.Client.RevertNetwork(ctx, node); err != nil {
			return fmt.Errorf("%w\n  nothing was committed; discarding the staged changes failed: %v", cause, err)
		}
		return st.reverted(x.Plan, node, nil, fmt.Errorf("%w\n  nothing was committed; reverted: this run's staged changes on node %s were discarded", cause, node))
	}
	ops := restoreOps(now, st.Seen)
	if len(ops) == 0 {
		return fmt.Errorf("%w\n  nothing to revert: node %s's interfaces are as the plan found them", cause, node)
	}
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.String()
	}
	x.Msg("reload failed on node %s; reverting: %s", node, strings.Join(names, ", "))
	// A call can succeed and still not restore everything when another
	// one undoes it (the writer starts a bond's slaves at boot as long as
	// the bond lists them): read back and go again, a few rounds at most.
	for round := 0; len(ops) > 0 && round < maxRestoreRounds; round++ {
		err := runRestore(ctx, x.Client, node, ops)
		if err == nil {
			var lerr error
			if now, _, lerr = x.Client.NetworkList(ctx, node); lerr == nil {
				ops = restoreOps(now, st.Seen)
			}
			err = lerr
		}
		if err != nil {
			// Leave nothing half reverted staged for the next commit.
			if derr := x.Client.RevertNetwork(ctx, node); derr != nil {
				err = errors.Join(err, fmt.Errorf("discard the partial revert: %w", derr))
			}
			return fmt.Errorf("%w\n  revert failed, node %s keeps the new configuration: %v", cause, node, err)
		}
	}
	if err := x.Client.ApplyNetwork(ctx, node); err != nil {
		return fmt.Errorf("%w\n  reverted node %s's interfaces, but reloading them failed too: %v", cause, node, err)
	}
	if len(ops) > 0 {
		left := make([]string, len(ops))
		for i, op := range ops {
			left[i] = op.iface
		}
		return st.reverted(x.Plan, node, left, fmt.Errorf("%w\n  reverted and reloaded, but %s still differ from what the plan found on node %s", cause, strings.Join(left, ", "), node))
	}
	return st.reverted(x.Plan, node, nil, fmt.Errorf("%w\n  reverted: node %s's interfaces are back as the plan found them, and reloaded", cause, node))
}

// reverted is err as a *RevertError naming the plan's interface changes
// on node that the revert undid: all of them but those on the interfaces
// left as they are.
func (st *netCommitState) reverted(plan *engine.Plan, node string, left []string, err error) error {
	var addrs []string
	for addr, iface := range st.Ours {
		if slices.Contains(left, iface) {
			continue
		}
		if plan == nil {
			addrs = append(addrs, addr)
		} else if c := plan.Change(addr); c != nil && c.Action != engine.NoOp {
			addrs = append(addrs, addr)
		}
	}
	slices.Sort(addrs)
	return &engine.RevertError{Node: node, Reverted: addrs, Err: err}
}

// maxRestoreRounds bounds the read-back rounds of a revert.
const maxRestoreRounds = 3

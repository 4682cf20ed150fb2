package planner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Ownership without a state file: what pvectl creates carries a mark, in
// a field PVE keeps, naming the stack that made it. A plan lists the
// objects of its stack that no document names (Plan.Orphans), and
// Options.Prune plans their removal. docs/decisions.md ("Ownership marks
// and --prune") says why the mark looks as it does.

// DefaultStack is the stack of a run that names none (--stack,
// PVECTL_STACK, a Connection's stack).
const DefaultStack = "default"

// Orphan is an object that its stack made and no document names.
type Orphan struct {
	Address    string `json:"address"` // Kind/name, as a document would name it
	Connection string `json:"connection,omitempty"`
	Node       string `json:"node,omitempty"`
	What       string `json:"what"` // "vmid 101"
	Stack      string `json:"stack"`
	// Protected: PVE's protection flag is set, so pvectl never removes it.
	Protected bool `json:"protected,omitempty"`
}

// ownedObj is one live object a kind found carrying an owner mark.
type ownedObj struct {
	res       *spec.Resource // made up: what identifies the object for its kind
	stack     string
	what      string // "vmid 101"
	protected bool
	lo        *liveObj
}

// ownerKind kinds mark what they create with its stack and find, live,
// the objects that carry a mark and no document of the Set names
// (owner_guest.go).
type ownerKind interface {
	markOwner(c *Change, stack string)
	findOwned(ctx context.Context, lc *liveConn, kind string, obs *Observed, set *spec.Set) ([]*ownedObj, error)
	// adopt writes stack's mark on lo's object (owner_adopt.go).
	adopt(ctx context.Context, cl *pve.Client, lo *liveObj, stack string) (bool, error)
}

// readOwned finds, per connection the Set uses, the owned objects no
// document names (their configs are read here, at observe time).
func (ob *observer) readOwned(ctx context.Context) {
	for _, conn := range slices.Sorted(maps.Keys(ob.obs.conns)) {
		lc := ob.obs.conns[conn]
		for _, kind := range slices.Sorted(maps.Keys(kinds)) {
			ok, is := kinds[kind].(ownerKind)
			if !is {
				continue
			}
			found, err := ok.findOwned(ctx, lc, kind, ob.obs, ob.set)
			if err != nil {
				// What cannot be read is never pruned; the plan says so.
				ob.obs.ownedErrs = append(ob.obs.ownedErrs, fmt.Sprintf("%s: %v", connLabel(conn), err))
				continue
			}
			ob.obs.owned = append(ob.obs.owned, found...)
		}
	}
}

// stackOf is the stack the plan works for on a connection: Options.Stack,
// else the Connection's stack, else DefaultStack.
func (b *builder) stackOf(conn string) string {
	if b.opts.Stack != "" {
		return b.opts.Stack
	}
	if lc := b.obs.conns[conn]; lc != nil && lc.settings != nil && lc.settings.Stack != "" {
		return lc.settings.Stack
	}
	return DefaultStack
}

// markCreated gives a change that makes an object the owner mark of its
// connection's stack, when its kind carries one.
func (b *builder) markCreated(k kindOps, c *Change) {
	if c.Action != Create && c.Action != Replace {
		return
	}
	if ok, is := k.(ownerKind); is {
		ok.markOwner(c, b.stackOf(c.Resource.Connection))
	}
}

// planOwned lists the owned objects of the plan's stacks (Plan.Orphans)
// or, with Options.Prune, plans their removal as a destroy would: a
// protected one (PVE's protection flag) is kept and shown apart.
func (b *builder) planOwned() []Orphan {
	var orphans []Orphan
	// Two connections may reach one cluster: a guest is one orphan, found
	// through the first (by node, vmid and config digest).
	seen, used := map[string]bool{}, map[string]bool{}
	taken := func(addr string) bool { return b.changes[addr] != nil || used[addr] }
	for _, o := range b.obs.owned {
		if o.stack != b.stackOf(o.res.Connection) {
			continue // another stack's: never touched
		}
		key := o.lo.Node + "/" + o.what + "/" + o.lo.Digest
		if seen[key] {
			continue
		}
		seen[key] = true
		res := *o.res // Build may run again on the same Observed
		addr := res.Address()
		if taken(addr) { // two orphans of one name: the vmid tells them apart
			res.Name += "-" + strings.TrimPrefix(o.what, "vmid ")
			addr = res.Address()
		}
		if taken(addr) {
			continue
		}
		used[addr] = true
		if !b.opts.Prune || b.opts.Destroy {
			orphans = append(orphans, Orphan{Address: addr, Connection: res.Connection, Node: o.lo.Node, What: o.what, Stack: o.stack, Protected: o.protected})
			continue
		}
		k := kinds[res.Kind]
		c := &Change{Address: addr, Resource: &res, Node: o.lo.Node, Digest: o.lo.Digest, Fingerprint: fingerprint(o.lo), Pruned: true, Diff: []FieldDiff{}}
		if st, is := k.(stateful); is {
			c.State = st.newState(o.lo)
		}
		switch {
		case o.protected:
			c.Action, c.Kept, c.Reasons = NoOp, true, []string{"made by stack " + o.stack + ", in no spec; protected in PVE (protection: 1): kept"}
		default:
			c.Action, c.Reasons = Delete, []string{"made by stack " + o.stack + ", in no spec: --prune"}
			if needs, ok := changeNeeds(k, c, o.lo); ok {
				if err := b.notePerms(b.obs.conns[res.Connection], &res, c, needs); err != nil {
					b.changes[addr], b.failed[addr] = c, err
					continue
				}
			}
		}
		b.changes[addr] = c
	}
	slices.SortFunc(orphans, func(a, b Orphan) int { return strings.Compare(a.Address, b.Address) })
	return orphans
}

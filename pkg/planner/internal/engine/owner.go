package engine

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
type OwnedObj struct {
	Res       *spec.Resource // made up: what identifies the object for its kind
	Stack     string
	What      string // "vmid 101"
	Protected bool
	Lo        *LiveObj
}

// ownerKind kinds mark what they create with its stack and find, live,
// the objects that carry a mark and no document of the Set names
// (owner_guest.go).
type OwnerKind interface {
	MarkOwner(c *Change, stack string)
	FindOwned(ctx context.Context, lc *LiveConn, kind string, obs *Observed, set *spec.Set) ([]*OwnedObj, error)
	// adopt writes stack's mark on lo's object (owner_adopt.go).
	Adopt(ctx context.Context, cl *pve.Client, lo *LiveObj, stack string) (bool, error)
}

// readOwned finds, per connection the Set uses, the owned objects no
// document names (their configs are read here, at observe time).
func (ob *observer) readOwned(ctx context.Context) {
	for _, conn := range slices.Sorted(maps.Keys(ob.obs.Conns)) {
		lc := ob.obs.Conns[conn]
		for _, kind := range slices.Sorted(maps.Keys(Kinds)) {
			ok, is := Kinds[kind].(OwnerKind)
			if !is {
				continue
			}
			found, err := ok.FindOwned(ctx, lc, kind, ob.obs, ob.set)
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
func (b *Builder) stackOf(conn string) string {
	if b.Opts.Stack != "" {
		return b.Opts.Stack
	}
	if lc := b.Obs.Conns[conn]; lc != nil && lc.Settings != nil && lc.Settings.Stack != "" {
		return lc.Settings.Stack
	}
	return DefaultStack
}

// markCreated gives a change that makes an object the owner mark of its
// connection's stack, when its kind carries one.
func (b *Builder) markCreated(k KindOps, c *Change) {
	if c.Action != Create && c.Action != Replace {
		return
	}
	if ok, is := k.(OwnerKind); is {
		ok.MarkOwner(c, b.stackOf(c.Resource.Connection))
	}
}

// planOwned lists the owned objects of the plan's stacks (Plan.Orphans)
// or, with Options.Prune, plans their removal as a destroy would: a
// protected one (PVE's protection flag) is kept and shown apart.
func (b *Builder) planOwned() []Orphan {
	var orphans []Orphan
	// Two connections may reach one cluster: a guest is one orphan, found
	// through the first (by node, vmid and config digest).
	seen, used := map[string]bool{}, map[string]bool{}
	taken := func(addr string) bool { return b.Changes[addr] != nil || used[addr] }
	for _, o := range b.Obs.owned {
		if o.Stack != b.stackOf(o.Res.Connection) {
			continue // another stack's: never touched
		}
		key := o.Lo.Node + "/" + o.What + "/" + o.Lo.Digest
		if seen[key] {
			continue
		}
		seen[key] = true
		res := *o.Res // Build may run again on the same Observed
		addr := res.Address()
		if taken(addr) { // two orphans of one name: the vmid tells them apart
			res.Name += "-" + strings.TrimPrefix(o.What, "vmid ")
			addr = res.Address()
		}
		if taken(addr) {
			continue
		}
		used[addr] = true
		if !b.Opts.Prune || b.Opts.Destroy {
			orphans = append(orphans, Orphan{Address: addr, Connection: res.Connection, Node: o.Lo.Node, What: o.What, Stack: o.Stack, Protected: o.Protected})
			continue
		}
		k := Kinds[res.Kind]
		c := &Change{Address: addr, Resource: &res, Node: o.Lo.Node, Digest: o.Lo.Digest, Fingerprint: Fingerprint(o.Lo), Pruned: true, Diff: []FieldDiff{}}
		if st, is := k.(stateful); is {
			c.State = st.NewState(o.Lo)
		}
		switch {
		case o.Protected:
			c.Action, c.Kept, c.Reasons = NoOp, true, []string{"made by stack " + o.Stack + ", in no spec; protected in PVE (protection: 1): kept"}
		default:
			c.Action, c.Reasons = Delete, []string{"made by stack " + o.Stack + ", in no spec: --prune"}
			if needs, ok := changeNeeds(k, c, o.Lo); ok {
				if err := b.notePerms(b.Obs.Conns[res.Connection], &res, c, needs); err != nil {
					b.Changes[addr], b.Failed[addr] = c, err
					continue
				}
			}
		}
		b.Changes[addr] = c
	}
	slices.SortFunc(orphans, func(a, b Orphan) int { return strings.Compare(a.Address, b.Address) })
	return orphans
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Prerequisites: what a change needs to exist before PVE can carry it out
// (a guest's pool, the storages its disks land on and the content they
// take, the bridges of its NICs on its node, the template it is made
// from). PVE checks them only when the call runs — a create into
// `pool: nopool` fails at apply time, and a replace that moves a VM onto
// a node without its bridge would fail after the old VM was destroyed.
// The engine finds them at plan time, from the specs (a resource that
// provides them) or from the live state, and refuses the plan naming the
// resource and the key. A prerequisite the token may not see is left to
// PVE: PVE's lists hide it, and "missing" would be a guess.

// prereq is one thing a change needs.
type Prereq struct {
	Key  string // the spec key that names it ("pool", "net0", "scsi0", "ostemplate")
	What string // "pool nopool", "bridge vmbr9 on node pve2", for messages
	// kind, value and node name the resource of the specs that would
	// provide it: its kind, its spec.RefValue, and the node it must be
	// on ("": any). kind "": the specs cannot provide it.
	Kind, Value, Node string
	// anyNodeKind is another kind whose resource named value provides
	// it on every node (an SDN vnet is a bridge wherever its zone is).
	AnyNodeKind string
	// fromSpec judges a provider of the specs: "" when it provides what
	// is needed, else the problem. nil: any provider does.
	FromSpec func(p *spec.Resource) string
	// read fetches into the connection's caches what live judges by;
	// nil: it judges by lists read anyway.
	Read func(ctx context.Context, lc *LiveConn) error
	// live judges the live state: "" when what is needed is there, or
	// cannot be seen; else the problem.
	Live func(lc *LiveConn) string
}

// prereqCache holds the lists read only for prerequisites, per
// connection: bridge lists by node (type any_bridge: local bridges and
// SDN vnets).
type prereqCache struct {
	Bridges map[string][]*pve.Config
}

// readPrereqs reads, after the objects themselves, what judging the
// prerequisites of the observed resources needs and the specs do not
// provide. A read that fails fails its resource.
func readPrereqs(ctx context.Context, set *spec.Set, obs *Observed) {
	for _, r := range set.Resources {
		pk, ok := Kinds[r.Kind].(prerequisiter)
		lo := obs.Objs[r.Address()]
		lc := obs.Conns[r.Connection]
		if !ok || lo == nil || lc == nil || r.ReadOnly {
			continue
		}
		for _, p := range pk.Prereqs(r, targetNode(r, lo), lo) {
			if p.Read == nil || providerOf(set, obs, r, p) != nil {
				continue
			}
			if err := p.Read(ctx, lc); err != nil {
				obs.Errs[r.Address()] = fmt.Errorf("%s: %s: %w", r.Address(), p.Key, err)
				delete(obs.Objs, r.Address())
				break
			}
		}
	}
}

// targetNode is where r's object is to be: the node its spec names, else
// where it is (or, for one to create, the node observe resolved).
func targetNode(r *spec.Resource, lo *LiveObj) string {
	if n := ParamNode(r); n != "" {
		return n
	}
	return lo.Node
}

// checkPrereqs reports the prerequisites of c that neither the specs nor
// the live state provide, one error each.
func (b *Builder) checkPrereqs(k KindOps, r *spec.Resource, lo *LiveObj, c *Change) error {
	pk, ok := k.(prerequisiter)
	if !ok || c.Action == NoOp || c.Action == Delete || r.ReadOnly {
		return nil
	}
	lc := b.Obs.Conns[r.Connection]
	var errs []error
	for _, p := range pk.Prereqs(r, c.Node, lo) {
		msg := ""
		if prov := providerOf(b.Set, b.Obs, r, p); prov != nil {
			switch {
			case prov.State == spec.Absent:
				msg = fmt.Sprintf("%s is removed by %s (state: absent)", p.What, prov.Address())
			case p.FromSpec != nil:
				msg = p.FromSpec(prov)
			}
		} else if lc != nil && p.Live != nil {
			msg = p.Live(lc)
		}
		if msg != "" {
			errs = append(errs, fmt.Errorf("%s: %s: %s", r.Address(), p.Key, msg))
		}
	}
	return errors.Join(errs...)
}

// providerOf finds the resource of the specs that provides p: on r's
// connection, of p's kind, named p's value, on p's node.
func providerOf(set *spec.Set, obs *Observed, r *spec.Resource, p Prereq) *spec.Resource {
	if p.Kind == "" {
		return nil
	}
	for _, x := range obs.providers.candidates(set, r.Connection, p.Kind, p.Value) {
		if p.Node != "" {
			n := ParamNode(x)
			if lo := obs.Objs[x.Address()]; lo != nil && lo.Node != "" {
				n = lo.Node
			}
			if n != p.Node {
				continue
			}
		}
		return x
	}
	if p.AnyNodeKind != "" {
		if xs := obs.providers.candidates(set, r.Connection, p.AnyNodeKind, p.Value); len(xs) > 0 {
			return xs[0]
		}
	}
	return nil
}

// verifyPrereqs checks, right before a replace removes the old object,
// that what the new one needs is there now (its dependencies have run,
// so the live state alone judges): a saved plan or a change made since
// the plan must not leave the old object destroyed and the new one
// impossible.
func verifyPrereqs(ctx context.Context, k KindOps, x *Execution, c *Change) error {
	pk, ok := k.(prerequisiter)
	if !ok {
		return nil
	}
	ps := pk.Prereqs(c.Resource, c.Node, nil)
	if len(ps) == 0 {
		return nil
	}
	lc := &LiveConn{Client: x.Client, Networks: map[string]*LiveNetwork{}}
	var err error
	if lc.Perms, err = x.Client.Permissions(ctx); err != nil {
		return fmt.Errorf("check what the new one needs: %w", err)
	}
	if lc.Resources, err = x.Client.ClusterResources(ctx, ""); err != nil {
		return fmt.Errorf("check what the new one needs: read cluster resources: %w", err)
	}
	if lc.Nodes, err = x.Client.NodeNames(ctx); err != nil {
		return fmt.Errorf("check what the new one needs: list nodes: %w", err)
	}
	slices.Sort(lc.Nodes)
	var errs []string
	for _, p := range ps {
		if p.Read != nil {
			if err := p.Read(ctx, lc); err != nil {
				return fmt.Errorf("check what the new one needs: %s: %w", p.Key, err)
			}
		}
		if p.Live != nil {
			if msg := p.Live(lc); msg != "" {
				errs = append(errs, p.Key+": "+msg)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("not replaced, the old one is kept: the new one could not be created: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Sees reports whether the token may see path with any of privs (PVE's
// lists leave out what it may not); true when the permissions were not
// read.
func (lc *LiveConn) Sees(path string, privs ...string) bool {
	if lc.Perms == nil {
		return true
	}
	return slices.ContainsFunc(privs, func(p string) bool { return lc.Perms.Has(path, p) })
}

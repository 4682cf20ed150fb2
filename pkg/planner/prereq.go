package planner

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
type prereq struct {
	key  string // the spec key that names it ("pool", "net0", "scsi0", "ostemplate")
	what string // "pool nopool", "bridge vmbr9 on node pve2", for messages
	// kind, value and node name the resource of the specs that would
	// provide it: its kind, its spec.RefValue, and the node it must be
	// on ("": any). kind "": the specs cannot provide it.
	kind, value, node string
	// anyNodeKind is another kind whose resource named value provides
	// it on every node (an SDN vnet is a bridge wherever its zone is).
	anyNodeKind string
	// fromSpec judges a provider of the specs: "" when it provides what
	// is needed, else the problem. nil: any provider does.
	fromSpec func(p *spec.Resource) string
	// read fetches into the connection's caches what live judges by;
	// nil: it judges by lists read anyway.
	read func(ctx context.Context, lc *liveConn) error
	// live judges the live state: "" when what is needed is there, or
	// cannot be seen; else the problem.
	live func(lc *liveConn) string
}

// prereqCache holds the lists read only for prerequisites, per
// connection: bridge lists by node (type any_bridge: local bridges and
// SDN vnets).
type prereqCache struct {
	bridges map[string][]*pve.Config
}

// readPrereqs reads, after the objects themselves, what judging the
// prerequisites of the observed resources needs and the specs do not
// provide. A read that fails fails its resource.
func readPrereqs(ctx context.Context, set *spec.Set, obs *Observed) {
	for _, r := range set.Resources {
		pk, ok := kinds[r.Kind].(prerequisiter)
		lo := obs.objs[r.Address()]
		lc := obs.conns[r.Connection]
		if !ok || lo == nil || lc == nil || r.ReadOnly {
			continue
		}
		for _, p := range pk.prereqs(r, targetNode(r, lo), lo) {
			if p.read == nil || providerOf(set, obs, r, p) != nil {
				continue
			}
			if err := p.read(ctx, lc); err != nil {
				obs.errs[r.Address()] = fmt.Errorf("%s: %s: %w", r.Address(), p.key, err)
				delete(obs.objs, r.Address())
				break
			}
		}
	}
}

// targetNode is where r's object is to be: the node its spec names, else
// where it is (or, for one to create, the node observe resolved).
func targetNode(r *spec.Resource, lo *liveObj) string {
	if n := paramNode(r); n != "" {
		return n
	}
	return lo.Node
}

// checkPrereqs reports the prerequisites of c that neither the specs nor
// the live state provide, one error each.
func (b *builder) checkPrereqs(k kindOps, r *spec.Resource, lo *liveObj, c *Change) error {
	pk, ok := k.(prerequisiter)
	if !ok || c.Action == NoOp || c.Action == Delete || r.ReadOnly {
		return nil
	}
	lc := b.obs.conns[r.Connection]
	var errs []error
	for _, p := range pk.prereqs(r, c.Node, lo) {
		msg := ""
		if prov := providerOf(b.set, b.obs, r, p); prov != nil {
			switch {
			case prov.State == spec.Absent:
				msg = fmt.Sprintf("%s is removed by %s (state: absent)", p.what, prov.Address())
			case p.fromSpec != nil:
				msg = p.fromSpec(prov)
			}
		} else if lc != nil && p.live != nil {
			msg = p.live(lc)
		}
		if msg != "" {
			errs = append(errs, fmt.Errorf("%s: %s: %s", r.Address(), p.key, msg))
		}
	}
	return errors.Join(errs...)
}

// providerOf finds the resource of the specs that provides p: on r's
// connection, of p's kind, named p's value, on p's node.
func providerOf(set *spec.Set, obs *Observed, r *spec.Resource, p prereq) *spec.Resource {
	if p.kind == "" {
		return nil
	}
	for _, x := range obs.providers.candidates(set, r.Connection, p.kind, p.value) {
		if p.node != "" {
			n := paramNode(x)
			if lo := obs.objs[x.Address()]; lo != nil && lo.Node != "" {
				n = lo.Node
			}
			if n != p.node {
				continue
			}
		}
		return x
	}
	if p.anyNodeKind != "" {
		if xs := obs.providers.candidates(set, r.Connection, p.anyNodeKind, p.value); len(xs) > 0 {
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
func verifyPrereqs(ctx context.Context, k kindOps, x *execution, c *Change) error {
	pk, ok := k.(prerequisiter)
	if !ok {
		return nil
	}
	ps := pk.prereqs(c.Resource, c.Node, nil)
	if len(ps) == 0 {
		return nil
	}
	lc := &liveConn{client: x.client, networks: map[string]*liveNetwork{}}
	var err error
	if lc.perms, err = x.client.Permissions(ctx); err != nil {
		return fmt.Errorf("check what the new one needs: %w", err)
	}
	if lc.resources, err = x.client.ClusterResources(ctx, ""); err != nil {
		return fmt.Errorf("check what the new one needs: read cluster resources: %w", err)
	}
	if lc.nodes, err = x.client.NodeNames(ctx); err != nil {
		return fmt.Errorf("check what the new one needs: list nodes: %w", err)
	}
	slices.Sort(lc.nodes)
	var errs []string
	for _, p := range ps {
		if p.read != nil {
			if err := p.read(ctx, lc); err != nil {
				return fmt.Errorf("check what the new one needs: %s: %w", p.key, err)
			}
		}
		if p.live != nil {
			if msg := p.live(lc); msg != "" {
				errs = append(errs, p.key+": "+msg)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("not replaced, the old one is kept: the new one could not be created: %s", strings.Join(errs, "; "))
	}
	return nil
}

// sees reports whether the token may see path with any of privs (PVE's
// lists leave out what it may not); true when the permissions were not
// read.
func (lc *liveConn) sees(path string, privs ...string) bool {
	if lc.perms == nil {
		return true
	}
	return slices.ContainsFunc(privs, func(p string) bool { return lc.perms.Has(path, p) })
}

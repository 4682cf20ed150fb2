package spec

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// link checks references, adds implicit edges and builds the graph.
func (l *loader) link(set *Set, links map[*Resource]docLinks) {
	index := &resourceIndex{rs: set.Resources}
	refs := newRefIndex(set.Resources, false)
	deps := map[Ref]bool{} // one map, cleared for each resource
	for _, r := range set.Resources {
		clear(deps)
		d := links[r]
		if r.Connection != "" && set.Connections[r.Connection] == nil && !l.unreadable {
			l.errorf(d.connectionPos, "connection %q is not defined: no Connection document has that name%s",
				r.Connection, didYouMeanName(r.Connection, slices.Sorted(maps.Keys(set.Connections))))
		}
		for _, ra := range d.dependsOn {
			if index.get(ra.String()) == nil {
				if !l.unreadable && !l.rejected[ra.Ref] {
					l.errorf(ra.Pos, "dependsOn: %s is not defined in the given files%s", ra.Ref, didYouMeanRef(ra.Ref, index.refs()))
				}
				continue
			}
			deps[ra.Ref] = true
		}
		for _, ref := range l.linkOutputs(r, index) {
			deps[ref] = true
		}
		found, refused := refs.deps(r)
		for _, ref := range found {
			deps[ref] = true
		}
		for _, x := range refused {
			pos := r.Pos
			if p, ok := r.KeyPos.Get(x.key); ok && p.File != "" {
				pos = p
			}
			l.errorf(pos, "%s", x.msg)
		}
		r.DependsOn = r.DependsOn[:0]
		for ref := range deps {
			r.DependsOn = append(r.DependsOn, ref)
		}
		sort.Slice(r.DependsOn, func(i, j int) bool { return r.DependsOn[i].String() < r.DependsOn[j].String() })
	}
	// Only a resource with dependencies can be in a cycle: the check
	// builds the graph of those alone. The whole graph is made when a plan
	// asks for it (Set.DepGraph), not kept by Load: for a spec of many
	// small documents it was a tenth of what Load keeps alive.
	rank := map[string]int{}
	var from []*Resource
	for i, r := range set.Resources {
		if len(r.DependsOn) > 0 {
			rank[r.Address()] = i
			from = append(from, r)
		}
	}
	for _, cycle := range newGraph(from).Cycles(rank) {
		l.errorf(index.get(cycle[0]).Pos, "dependency cycle: %s", strings.Join(cycle, " -> "))
	}
}

// resourceIndex finds the specs' resources by address. Its map and the
// list of every address (for "did you mean") are made at the first
// lookup: a spec without dependsOn or output references makes neither,
// which for many small documents is a fifth of Load's peak.
type resourceIndex struct {
	rs  []*Resource
	m   map[string]*Resource
	all []Ref
}

func (x *resourceIndex) get(addr string) *Resource {
	if x.m == nil {
		x.m = make(map[string]*Resource, len(x.rs))
		for _, r := range x.rs {
			x.m[r.Address()] = r
		}
	}
	return x.m[addr]
}

// refs are every resource's reference, in the specs' order.
func (x *resourceIndex) refs() []Ref {
	if x.all == nil {
		x.all = make([]Ref, 0, len(x.rs))
		for _, r := range x.rs {
			x.all = append(x.all, r.Ref())
		}
	}
	return x.all
}

// refRule is one kind of implicit reference a resource makes: the values
// it writes at Key name resources of Kinds (by their RefValue), and each
// such resource of the specs becomes a dependency.
type refRule struct {
	// Key names where the reference is written, for messages ("pool",
	// "netN.bridge").
	Key string
	// Values extracts the referenced values from a resource, each with
	// the spec key that holds it.
	Values func(r *Resource) []refValue
	// Kinds may be referenced.
	Kinds []string
	// SameNode limits targets to the resource's node (a node left unset
	// matches any node).
	SameNode bool
	// PresentOnly skips targets with state: absent (a VM does not wait for
	// the removal of a pool it names).
	PresentOnly bool
	// All references every resource of Kinds (on the same node), whatever
	// its value: a node's NetworkApply commits after all its interfaces.
	All bool
	// Skip, when set, leaves out the edge from r to target when it says
	// so: the two are ordered the other way round, and r's kind finishes
	// its change after target (a cluster Firewall whose IP sets a
	// SecurityGroup's rules use: the group waits for the sets, the
	// firewall's rules naming the group wait for the group).
	Skip func(r, target *Resource) bool
	// Refuse, when set, makes naming a resource of Kinds an error rather
	// than an edge: it says why PVE cannot use that object there (a VM's
	// NIC on a bond); "" accepts that one (an edge: a guest's mapping that
	// has an entry for its node).
	Refuse func(r, target *Resource, v refValue) string
}

// refValue is one referenced value and the spec key that holds it.
type refValue struct{ Key, Value string }

// refusal is a reference a refRule refuses, with its message.
type refusal struct{ key, msg string }

// refIndex finds referenced resources by connection, kind and value
// without comparing every pair of resources. Its keys are structs, so a
// lookup allocates nothing.
type refIndex struct {
	byValue map[refKey][]*Resource // connection, kind, value
	byKind  map[refKey][]*Resource // connection, kind (value "")
}

// refKey is a connection, a kind and, in byValue, a value.
type refKey struct{ conn, kind, value string }

// newRefIndex indexes rs. By value it indexes the kinds that a rule of a
// kind of rs references (link), or with allKinds every kind (Resolve
// finds any kind): a spec of many resources that nothing references by
// value (10 MB of Pools) builds no such index.
func newRefIndex(rs []*Resource, allKinds bool) *refIndex {
	ix := &refIndex{byValue: map[refKey][]*Resource{}, byKind: map[refKey][]*Resource{}}
	for _, r := range rs {
		if kindOf(r.Kind) == nil {
			continue
		}
		ck := refKey{conn: r.Connection, kind: r.Kind}
		ix.byKind[ck] = append(ix.byKind[ck], r)
	}
	referenced := map[string]bool{}
	for ck := range ix.byKind {
		for _, rule := range kindOf(ck.kind).Refs {
			for _, kind := range rule.Kinds {
				referenced[kind] = referenced[kind] || !rule.All
			}
		}
	}
	for ck, rs := range ix.byKind {
		k := kindOf(ck.kind)
		if k.RefValue == nil || !(allKinds || referenced[ck.kind]) {
			continue
		}
		for _, r := range rs {
			if v := k.RefValue(r); v != "" {
				vk := refKey{ck.conn, ck.kind, v}
				ix.byValue[vk] = append(ix.byValue[vk], r)
			}
		}
	}
	return ix
}

// deps are the edges r's values imply under its kind's Refs, and the
// references its rules refuse. Only resources of the same connection (the
// same cluster) are linked.
func (ix *refIndex) deps(r *Resource) ([]Ref, []refusal) {
	k := kindOf(r.Kind)
	if k == nil {
		return nil, nil
	}
	var out []Ref
	var refused []refusal
	add := func(rule refRule, targets []*Resource, v refValue) {
		for _, o := range targets {
			if o == r || (rule.PresentOnly && o.State != Present) || (rule.SameNode && !sameNode(r, o)) || (rule.Skip != nil && rule.Skip(r, o)) {
				continue
			}
			if rule.Refuse != nil {
				if msg := rule.Refuse(r, o, v); msg != "" {
					if r.State == Present {
						refused = append(refused, refusal{v.Key, msg})
					}
					continue
				}
			}
			out = append(out, o.Ref())
		}
	}
	for _, rule := range k.Refs {
		if !ix.hasAny(r.Connection, rule.Kinds) {
			continue // nothing to name: the values are not even read
		}
		var values []refValue // extracted once for all the rule's kinds
		if !rule.All {
			values = rule.Values(r)
		}
		for _, kind := range rule.Kinds {
			if rule.All {
				add(rule, ix.byKind[refKey{conn: r.Connection, kind: kind}], refValue{Key: rule.Key})
				continue
			}
			for _, v := range values {
				add(rule, ix.byValue[refKey{r.Connection, kind, v.Value}], v)
			}
		}
	}
	return out, refused
}

// hasAny reports whether the specs have a resource of any of kinds on
// the connection.
func (ix *refIndex) hasAny(conn string, kinds []string) bool {
	for _, kind := range kinds {
		if len(ix.byKind[refKey{conn: conn, kind: kind}]) > 0 {
			return true
		}
	}
	return false
}

func sameNode(a, b *Resource) bool {
	na, nb := a.Params.Get("node"), b.Params.Get("node")
	return na == "" || nb == "" || na == nb
}

// paramValue references by a parameter's value ("pool: lab").
func paramValue(param string) func(r *Resource) []refValue {
	return func(r *Resource) []refValue {
		if v := r.Params.Get(param); v != "" {
			return []refValue{{param, v}}
		}
		return nil
	}
}

// listValues references by each item of a list parameter
// ("bridge_ports: bond0 eno2").
func listValues(param string) func(r *Resource) []refValue {
	return func(r *Resource) []refValue {
		var out []refValue
		for _, v := range schema.SplitList(r.Params.Get(param)) {
			out = append(out, refValue{param, v})
		}
		return out
	}
}

// paramValueOf is a kind's RefValue: the value of one parameter.
func paramValueOf(param string) func(r *Resource) string {
	return func(r *Resource) string { return r.Params.Get(param) }
}

// subKeyValues references by a sub-key of every member of an indexed
// family of property strings ("netN: …,bridge=vmbr1").
func subKeyValues(family, sub string) func(r *Resource) []refValue {
	return func(r *Resource) []refValue {
		var keys []string // the family's keys only, then sorted
		for key := range r.Params.All() {
			if isFamilyKey(key, family) {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		var out []refValue
		for _, key := range keys {
			if x := propValue(r.Params.Get(key), sub); x != "" {
				out = append(out, refValue{key, x})
			}
		}
		return out
	}
}

// isFamilyKey reports whether key is family followed by an index ("net0").
func isFamilyKey(key, family string) bool {
	idx, ok := strings.CutPrefix(key, family)
	if !ok || idx == "" {
		return false
	}
	for _, c := range idx {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// propValue returns key's value in a property string "a=1,key=v".
func propValue(s, key string) string {
	items, _ := schema.SplitPropertyString(s)
	v, _ := schema.PropValue(items, key)
	return v
}

func newGraph(rs []*Resource) *Graph {
	g := &Graph{Deps: make(map[string][]string, len(rs))}
	for _, r := range rs {
		deps := make([]string, 0, len(r.DependsOn))
		for _, d := range r.DependsOn {
			deps = append(deps, d.String())
		}
		sort.Strings(deps)
		g.Deps[r.Address()] = deps
	}
	return g
}

// Order returns the addresses in dependency order (dependencies first); among
// resources that are ready together, addresses sort. Members of a cycle
// (which Load rejects) come last, sorted.
func (s *Set) Order() []string {
	return s.DepGraph().Order()
}

// DepGraph returns the dependency graph of the resources, made at the
// first call (Load does not keep one).
func (s *Set) DepGraph() *Graph {
	if s.Graph == nil {
		s.Graph = newGraph(s.Resources)
	}
	return s.Graph
}

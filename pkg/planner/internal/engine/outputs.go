package engine

import (
	"maps"
	"sync"

	"github.com/pvectl/pvectl/pkg/spec"
)

// Output references, ${Kind/name.output} (pkg/spec/outputs.go): a value
// another resource's change produces. The planner puts each value in as
// soon as it is known — at plan time when the object exists (a guest's
// vmid) or follows from its spec (a volume id), at apply time right after
// the change that produces it otherwise — so a kind only ever sees
// values, or, while planning, a reference it takes for "known after
// apply" (an ACL on a path that names a VM not made yet is not found and
// is planned as a create).

// outputter kinds produce outputs (spec.KindOutputs, declared in the
// kind's row). outputs returns those known for r: from its object as
// read at plan time (lo; nil at apply time) or from its applied change
// (c; nil at plan time).
type Outputter interface {
	Outputs(r *spec.Resource, lo *LiveObj, c *Change) map[string]string
}

// hasOutputRefs reports whether r's parameters hold a reference not put
// in yet.
func hasOutputRefs(r *spec.Resource) bool {
	for _, v := range r.Params.All() {
		if spec.HasOutputRef(v) {
			return true
		}
	}
	return false
}

// outputTargets are the addresses r's references name.
func outputTargets(r *spec.Resource) map[string]bool {
	out := map[string]bool{}
	for _, v := range r.Params.All() {
		for _, ref := range spec.OutputRefs(v) {
			out[ref.Address()] = true
		}
	}
	return out
}

// resolveParams puts into params every reference get knows; it returns
// params itself when nothing changed, else a copy.
func resolveParams(params map[string]string, get func(spec.OutputRef) (string, bool)) map[string]string {
	var out map[string]string
	for k, v := range params {
		if !spec.HasOutputRef(v) {
			continue
		}
		nv, _ := spec.ResolveOutputs(v, get)
		if nv == v {
			continue
		}
		if out == nil {
			out = maps.Clone(params)
		}
		out[k] = nv
	}
	if out == nil {
		return params
	}
	return out
}

// planOutputs looks up outputs at plan time from the observed objects.
func (o *Observed) planOutputs(set *spec.Set) func(spec.OutputRef) (string, bool) {
	byAddr := map[string]*spec.Resource{}
	for _, r := range set.Resources {
		byAddr[r.Address()] = r
	}
	return func(ref spec.OutputRef) (string, bool) {
		r := byAddr[ref.Address()]
		k, ok := Kinds[ref.Kind].(Outputter)
		if r == nil || !ok || hasOutputRefs(r) {
			return "", false
		}
		v, ok := k.Outputs(r, o.Objs[ref.Address()], nil)[ref.Output]
		return v, ok
	}
}

// resolveAtPlan puts the outputs known now into r's parameters (r is the
// set's; a saved plan keeps the references that stay).
func (o *Observed) resolveAtPlan(r *spec.Resource, get func(spec.OutputRef) (string, bool)) {
	r.Params = spec.ParamsOf(resolveParams(r.Params.Map(), get))
}

// appliedOutputs are the outputs the changes of one apply produced, by
// connection and address; the walk's order makes a change's dependencies
// record theirs before it reads them.
type appliedOutputs struct {
	mu   sync.Mutex
	vals map[string]map[string]string
}

func (a *appliedOutputs) record(c *Change) {
	if c.Resource == nil {
		return
	}
	k, ok := Kinds[c.Resource.Kind].(Outputter)
	if !ok {
		return
	}
	outs := k.Outputs(c.Resource, nil, c)
	if len(outs) == 0 {
		return
	}
	// The identity, known from the spec, goes with them.
	for _, o := range spec.KindOutputs(c.Resource.Kind) {
		if v, ok := c.Resource.Params.Lookup(o.Name); ok && outs[o.Name] == "" && !spec.HasOutputRef(v) {
			outs[o.Name] = v
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.vals == nil {
		a.vals = map[string]map[string]string{}
	}
	a.vals[c.Resource.Connection+"\x00"+c.Address] = outs
}

// resolve puts the outputs c's references name into its resource and
// parameters, before its kind acts; a reference still unknown is an
// error naming it (the change it waits for did not produce it).
func (a *appliedOutputs) resolve(c *Change) error {
	if c.Resource == nil || (!hasOutputRefs(c.Resource) && !anyRef(c.Params)) {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var missing *spec.OutputRef
	get := func(ref spec.OutputRef) (string, bool) {
		v, ok := a.vals[c.Resource.Connection+"\x00"+ref.Address()][ref.Output]
		if !ok && missing == nil {
			missing = &ref
		}
		return v, ok
	}
	r := *c.Resource
	r.Params = spec.ParamsOf(resolveParams(r.Params.Map(), get))
	params := resolveParams(c.Params, get)
	if missing != nil {
		return &unknownOutputError{ref: *missing}
	}
	c.Resource, c.Params = &r, params
	return nil
}

func anyRef(params map[string]string) bool {
	for _, v := range params {
		if spec.HasOutputRef(v) {
			return true
		}
	}
	return false
}

// unknownOutputError: a change needs a value its dependency did not
// produce in this apply.
type unknownOutputError struct{ ref spec.OutputRef }

func (e *unknownOutputError) Error() string {
	return "the value of " + e.ref.String() + " is not known: " + e.ref.Address() +
		" produced none in this apply (its change did not run, or the plan was made when it existed and it is gone now); run plan again"
}

// Produced is the output name of the resource at addr on conn that this
// apply's changes produced so far.
func (a *appliedOutputs) Produced(conn, addr, name string) (string, bool) {
	if a == nil {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.vals[conn+"\x00"+addr][name]
	return v, ok
}

package spec

import (
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// requiredProblems lists the parameters PVE's schema marks as required
// (not optional) for the kind's create call that the document leaves out
// and pvectl does not supply, so that validate refuses what apply would
// send to a 400 ("property is missing and it is not optional"). pvectl
// supplies the node (the object's place, resolved by the planner), the
// identity (defaulted from the name), the Fixed parameters, the ones a
// kind does not let a spec write (Params) and the row's Filled ones.
//
// A document that creates nothing (state: absent, managed: false) needs
// only the parameters its object is found by (FoundBy).
func requiredProblems(k *kindInfo, m *schema.Method, r *Resource) []problem {
	if m == nil {
		return nil
	}
	creates := r.State == Present && !r.ReadOnly
	var out []problem
	for _, name := range requiredParams(k, m) {
		if r.KeyPos.Has(name) {
			continue // a written but refused value is reported at its line already
		}
		if !creates && !slices.Contains(k.FoundBy, name) {
			continue
		}
		why := k.RequiredWhy[name]
		if why == "" {
			why = "PVE refuses to create " + article(Noun(k.Name)) + " without it (" + k.Create.Method + " " + k.Create.Path + ")"
		}
		out = append(out, problem{"", "spec." + name + " is required: " + why})
	}
	return out
}

// requiredParams are the create call's required parameters that a spec
// must write, sorted.
func requiredParams(k *kindInfo, m *schema.Method) []string {
	var out []string
	for name, p := range m.Params {
		switch {
		case p.Optional, strings.HasSuffix(name, "[n]"), name == "node", name == k.Identity,
			!k.acceptsParam(name), slices.Contains(k.Filled, name):
			continue
		}
		if _, fixed := k.Fixed[name]; fixed {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

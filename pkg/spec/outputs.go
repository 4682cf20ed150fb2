package spec

import (
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"go.yaml.in/yaml/v3"
)

// An output reference ${Kind/name.output} stands, in any string of a
// spec, for a value another resource's change produces during apply (a
// guest's vmid when the spec pins none): Terraform's "known after apply".
// Load keeps it verbatim in the value (it is not an environment variable)
// and makes it an implicit dependency; the planner puts the value in once
// it is known — at plan time when the object exists and is kept, at apply
// time right before the dependent change runs otherwise.

// OutputRef is one ${Kind/name.output}.
type OutputRef struct {
	Kind, Name, Output string
}

// Address is the referenced resource's "Kind/name".
func (o OutputRef) Address() string { return o.Kind + "/" + o.Name }

func (o OutputRef) String() string { return "${" + o.Kind + "/" + o.Name + "." + o.Output + "}" }

// outputRefRe matches the inside of a ${…}: a kind, "/", a name (no dot,
// brace or space; a name with dots cannot be referenced), ".", an output.
var outputRefRe = lazyre.New(`^([A-Z][A-Za-z0-9]*)/([^\s{}.$]+)\.([a-z][A-Za-z0-9_]*)$`)

// parseOutputRef reads the inside of a ${…} as an output reference.
func parseOutputRef(expr string) (OutputRef, bool) {
	m := outputRefRe.FindStringSubmatch(expr)
	if m == nil {
		return OutputRef{}, false
	}
	return OutputRef{Kind: m[1], Name: m[2], Output: m[3]}, true
}

// OutputRefs lists the output references in s, in order.
func OutputRefs(s string) []OutputRef {
	var refs []OutputRef
	walkOutputRefs(s, func(ref OutputRef, _, _ int) { refs = append(refs, ref) })
	return refs
}

// HasOutputRef reports whether s holds an output reference: a value not
// known yet. A kind's observe that finds one in its identity takes the
// object for one to be made (it cannot exist before what it names).
func HasOutputRef(s string) bool {
	found := false
	walkOutputRefs(s, func(OutputRef, int, int) { found = true })
	return found
}

// ResolveOutputs replaces every output reference in s that get knows
// with its value and keeps the others as they are; ok reports whether it
// knew them all.
func ResolveOutputs(s string, get func(OutputRef) (string, bool)) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	last, ok := 0, true
	walkOutputRefs(s, func(ref OutputRef, start, end int) {
		v, known := get(ref)
		if !known {
			ok = false
			return
		}
		b.WriteString(s[last:start])
		b.WriteString(v)
		last = end
	})
	if last == 0 {
		return s, ok
	}
	b.WriteString(s[last:])
	return b.String(), ok
}

// walkOutputRefs calls f for each output reference in s with its byte
// range.
func walkOutputRefs(s string, f func(ref OutputRef, start, end int)) {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			return
		}
		start := i + j
		end := strings.IndexByte(s[start:], '}')
		if end < 0 {
			return
		}
		end += start + 1
		if ref, ok := parseOutputRef(s[start+2 : end-1]); ok {
			f(ref, start, end)
		}
		i = end
	}
}

// OutputDoc is one output a kind produces.
type OutputDoc struct {
	Name string
	// Sample is a value of the output's form: Load checks a value that
	// holds a reference with its samples in, as PVE will get it.
	Sample string
	Doc    string
}

func guestOutputs(noun string) []OutputDoc {
	return []OutputDoc{
		{Name: "vmid", Sample: "100", Doc: "the " + noun + "'s vmid: the pinned one, or the one PVE's next free id gave at create"},
		{Name: "node", Sample: "pve", Doc: "the node the " + noun + " is on"},
	}
}

// KindOutputs lists what ${Kind/name.output} may name for kind: the
// outputs its changes produce, then its identity key (known from the
// spec, put in at load).
func KindOutputs(kind string) []OutputDoc {
	k := kindOf(kind)
	if k == nil {
		return nil
	}
	outs := append([]OutputDoc(nil), k.Outputs...)
	if _, explicit := declaredOutput(k, k.Identity); k.Identity != "" && k.Role == roleResource && !explicit {
		outs = append(outs, OutputDoc{Name: k.Identity, Sample: "x", Doc: "the " + k.Identity + " of the " + k.Noun + " (from its spec)"})
	}
	return outs
}

func outputDoc(kind, name string) (OutputDoc, bool) {
	for _, o := range KindOutputs(kind) {
		if o.Name == name {
			return o, true
		}
	}
	return OutputDoc{}, false
}

// withSamples is s with every output reference replaced by a sample of
// its form, for checking the value as PVE will get it.
func withSamples(s string) string {
	v, _ := ResolveOutputs(s, func(ref OutputRef) (string, bool) {
		if o, ok := outputDoc(ref.Kind, ref.Output); ok {
			return o.Sample, true
		}
		return "x", true
	})
	return v
}

// nodeHasOutputRef reports whether a value node holds an output
// reference anywhere.
func nodeHasOutputRef(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		return HasOutputRef(n.Value)
	}
	for _, c := range n.Content {
		if nodeHasOutputRef(c) {
			return true
		}
	}
	return false
}

// checkWithSamples runs check on r with every parameter that holds an
// output reference set to its samples, then puts the references back:
// the kind's checks see values of the form PVE will get, and their
// messages show the value as written. A parameter naming an output that
// does not exist is left out of the check (linkOutputs reports it).
func checkWithSamples(r *Resource, check func(*Resource) []problem) []problem {
	raw, sampled := map[string]string{}, map[string]string{}
	for key, v := range r.Params.All() {
		if !HasOutputRef(v) {
			continue
		}
		raw[key] = v
		if allOutputsExist(v) {
			sampled[key] = withSamples(v)
			r.Params.Set(key, sampled[key])
		} else {
			r.Params.Delete(key)
		}
	}
	ps := check(r)
	for key, v := range raw {
		if _, kept := r.Params.Lookup(key); kept || sampled[key] == "" {
			r.Params.Set(key, v)
		}
		for i := range ps {
			if s := sampled[key]; s != "" {
				ps[i].msg = strings.ReplaceAll(ps[i].msg, s, v)
			}
		}
	}
	return ps
}

func allOutputsExist(s string) bool {
	all := true
	walkOutputRefs(s, func(ref OutputRef, _, _ int) {
		_, ok := outputDoc(ref.Kind, ref.Output)
		all = all && ok
	})
	return all
}

// linkOutputs checks r's output references — the kind, the resource and
// the output exist, on r's connection — puts in those known from the
// specs (an identity key) and returns the resources r depends on by them.
func (l *loader) linkOutputs(r *Resource, index *resourceIndex) []Ref {
	var deps []Ref
	for key, v := range r.Params.All() {
		if !strings.Contains(v, "${") {
			continue
		}
		pos := r.Pos
		if p, ok := r.KeyPos.Get(key); ok && p.File != "" {
			pos = p
		}
		resolved, _ := ResolveOutputs(v, func(ref OutputRef) (string, bool) {
			target := index.get(ref.Address())
			switch {
			case kindOf(ref.Kind) == nil || kindOf(ref.Kind).Role != roleResource:
				l.errorf(pos, "%s.%s: %s names kind %q, which is not a resource kind%s", r.Address(), key, ref, ref.Kind, didYouMean(ref.Kind, SupportedKinds()))
				return "", false
			case target == nil:
				if !l.unreadable && !l.rejected[Ref{Kind: ref.Kind, Name: ref.Name}] {
					l.errorf(pos, "%s.%s: %s names %s, which is not defined in the given files%s", r.Address(), key, ref, ref.Address(), didYouMeanRef(Ref{Kind: ref.Kind, Name: ref.Name}, index.refs()))
				}
				return "", false
			case target.Connection != r.Connection:
				l.errorf(pos, "%s.%s: %s names %s of another connection: an output is known on its own cluster only", r.Address(), key, ref, ref.Address())
				return "", false
			}
			if _, ok := outputDoc(ref.Kind, ref.Output); !ok {
				l.errorf(pos, "%s.%s: %s has no output %q (it has: %s)", r.Address(), key, ref.Address(), ref.Output, outputNames(ref.Kind))
				return "", false
			}
			deps = append(deps, Ref{Kind: ref.Kind, Name: ref.Name})
			if k := kindOf(ref.Kind); ref.Output == k.Identity && !isDeclared(k, ref.Output) {
				if id, ok := target.Params.Lookup(k.Identity); ok && !HasOutputRef(id) {
					return id, true
				}
			}
			return "", false
		})
		if resolved != v {
			r.Params.Set(key, resolved)
		}
	}
	return deps
}

func outputNames(kind string) string {
	var names []string
	for _, o := range KindOutputs(kind) {
		names = append(names, o.Name)
	}
	return strings.Join(names, ", ")
}

func declaredOutput(k *kindInfo, name string) (OutputDoc, bool) {
	for _, o := range k.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return OutputDoc{}, false
}

func isDeclared(k *kindInfo, name string) bool { _, ok := declaredOutput(k, name); return ok }

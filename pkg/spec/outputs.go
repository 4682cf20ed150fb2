package spec

import (
	"regexp"
	"strings"
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
var outputRefRe = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*)/([^\s{}.$]+)\.([a-z][A-Za-z0-9_]*)$`)

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

// ResolveOutputs replaces every output reference in s with its value from
// get; ok is false (and s is returned unchanged) when get knows any of
// them not.
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
	if !ok {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
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

package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Returns is the subset of a method's "returns" JSONSchema that response
// checks need.
type Returns struct {
	Type       string              // "" or "any" accept anything
	Optional   bool                // as a property of an object
	Enum       []string            // allowed values, in their JSON text form
	Properties map[string]*Returns // object properties; "net[n]" families included
	// Additional is nil when extra object properties are allowed freely,
	// a schema when each extra value must match it, and Closed when the
	// schema forbids them (additionalProperties: 0).
	Additional *Returns
	Closed     bool
	Items      *Returns
	OneOf      []*Returns
	// IntegerAsString accepts an integer written as a string of digits
	// too, where PVE's answer contradicts the schema (see Deviations).
	IntegerAsString bool
	// StringAsInteger accepts a JSON integer where a string is declared.
	StringAsInteger bool
	// DeletedValues accepts the string "deleted" for any property of
	// the object (see Deviations).
	DeletedValues bool
}

func returnsFromSchema(s map[string]any) *Returns {
	if s == nil {
		return nil
	}
	r := &Returns{Optional: schema.Truthy(s["optional"])}
	r.Type, _ = s["type"].(string)
	if e, ok := s["enum"].([]any); ok {
		for _, v := range e {
			r.Enum = append(r.Enum, jsonText(v))
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		r.Properties = map[string]*Returns{}
		for k, v := range props {
			if sm, ok := v.(map[string]any); ok {
				r.Properties[k] = returnsFromSchema(sm)
			}
		}
	}
	switch ap := s["additionalProperties"].(type) {
	case map[string]any:
		r.Additional = returnsFromSchema(ap)
	case float64, bool, string:
		r.Closed = !schema.Truthy(ap)
	}
	if items, ok := s["items"].(map[string]any); ok {
		r.Items = returnsFromSchema(items)
	}
	if of, ok := s["oneOf"].([]any); ok {
		for _, v := range of {
			if sm, ok := v.(map[string]any); ok {
				r.OneOf = append(r.OneOf, returnsFromSchema(sm))
			}
		}
	}
	return r
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var integerLit = lazyre.New(`^-?\d+$`)

// Check validates a value decoded with json.Decoder.UseNumber, collecting
// every problem with its JSON path ("data[2].vmid").
func (r *Returns) Check(path string, v any) []error {
	var errs []error
	r.check(path, v, &errs)
	return errs
}

func (r *Returns) check(path string, v any, errs *[]error) {
	if r == nil {
		return
	}
	if len(r.OneOf) > 0 {
		for _, alt := range r.OneOf {
			if len(alt.Check(path, v)) == 0 {
				return
			}
		}
		*errs = append(*errs, fmt.Errorf("%s: matches none of the %d oneOf schemas", path, len(r.OneOf)))
		return
	}
	bad := func(want string) {
		*errs = append(*errs, fmt.Errorf("%s: got %s, want %s", path, describe(v), want))
	}
	switch r.Type {
	case "", "any":
		return
	case "null":
		if v != nil {
			bad("null")
		}
		return
	case "string":
		if n, ok := v.(json.Number); ok && r.StringAsInteger && integerLit.MatchString(n.String()) {
			return
		}
		if _, ok := v.(string); !ok {
			bad("string")
			return
		}
	case "integer":
		if str, ok := v.(string); ok && r.IntegerAsString && integerLit.MatchString(str) {
			return
		}
		n, ok := v.(json.Number)
		if !ok || !integerLit.MatchString(n.String()) {
			bad("integer")
			return
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			bad("number")
			return
		}
	case "boolean":
		// PVE's Perl emits booleans as 0/1 as often as true/false.
		n, isNum := v.(json.Number)
		if _, isBool := v.(bool); !isBool && !(isNum && (n == "0" || n == "1")) {
			bad("boolean")
		}
		return
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			bad("object")
			return
		}
		r.checkObject(path, obj, errs)
		return
	case "array":
		arr, ok := v.([]any)
		if !ok {
			bad("array")
			return
		}
		for i, item := range arr {
			r.Items.check(fmt.Sprintf("%s[%d]", path, i), item, errs)
		}
		return
	default:
		return
	}
	if len(r.Enum) > 0 && !slices.Contains(r.Enum, jsonText(v)) {
		*errs = append(*errs, fmt.Errorf("%s: value %s is not one of %s", path, jsonText(v), strings.Join(r.Enum, ", ")))
	}
}

func (r *Returns) checkObject(path string, obj map[string]any, errs *[]error) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		val := obj[k]
		sub := r.property(k)
		if val == nil && (sub == nil || sub.Type != "null") {
			// Perl's undef serialises as null: treat it as an absent property.
			continue
		}
		if r.DeletedValues && val == "deleted" {
			continue
		}
		switch {
		case sub != nil:
			sub.check(path+"."+k, val, errs)
		case r.Additional != nil:
			r.Additional.check(path+"."+k, val, errs)
		case r.Closed:
			*errs = append(*errs, fmt.Errorf("%s.%s: property is not defined in the return schema", path, k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Properties)) {
		if strings.HasSuffix(k, "[n]") || r.Properties[k].Optional {
			continue
		}
		if obj[k] == nil {
			*errs = append(*errs, fmt.Errorf("%s.%s: property is missing and it is not optional", path, k))
		}
	}
}

// property finds k, mapping indexed keys ("net0") to families ("net[n]").
func (r *Returns) property(k string) *Returns {
	if p, ok := r.Properties[k]; ok {
		return p
	}
	base := strings.TrimRight(k, "0123456789")
	if base != k && base != "" {
		return r.Properties[base+"[n]"]
	}
	return nil
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		// Never the content: response strings may carry secrets (token values).
		return fmt.Sprintf("string (%d bytes)", len(x))
	case json.Number:
		return "number " + x.String()
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

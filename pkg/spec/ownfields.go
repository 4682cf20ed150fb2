package spec

import (
	"reflect"
	"strings"
	"sync"
)

// OwnFields is read for every resource of a plan (the output scrubber's
// secret values, diffs); its JSON round trip cost a plan of 50,000 VMs a
// tenth of what it allocates. fastOwnFields gives the same map by walking
// the Keys struct (TestOwnFieldsFast keeps the two equal for every kind),
// for the field types it knows: strings, booleans, integers, pointers to
// them and string lists, flattened from embedded structs as encoding/json
// does. A struct with any other field is walked the JSON way.

// ownField is one field of a Keys struct that fastOwnFields reads.
type ownField struct {
	name      string
	index     []int
	omitEmpty bool
}

// ownPlans caches each Keys type's fields (nil: the JSON way).
var ownPlans sync.Map // reflect.Type → []ownField

// fastOwnFields fills out with keys' fields as OwnFields has them; false
// when keys is not a struct (pointer) of fields it knows.
func fastOwnFields(keys any, out map[string]any) bool {
	v := reflect.ValueOf(keys)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	v = v.Elem()
	plan, ok := ownPlans.Load(v.Type())
	if !ok {
		plan, _ = ownPlans.LoadOrStore(v.Type(), ownPlanOf(v.Type()))
	}
	fields := plan.([]ownField)
	if fields == nil {
		return false
	}
	for _, f := range fields {
		if val, ok := ownFieldValue(v.FieldByIndex(f.index), f.omitEmpty); ok {
			out[f.name] = val
		}
	}
	return true
}

// ownFieldValue is one field's value as the JSON round trip gives it; false:
// omitted (omitempty and empty).
func ownFieldValue(v reflect.Value, omitEmpty bool) (any, bool) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, !omitEmpty
		}
		v, omitEmpty = v.Elem(), false // omitempty is about the pointer
	} else if omitEmpty && v.IsZero() && v.Kind() != reflect.Slice {
		return nil, false
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(v.Int()), true
	case reflect.Slice:
		if v.Len() == 0 && (omitEmpty || v.IsNil()) {
			return nil, !omitEmpty
		}
		list := make([]any, v.Len())
		for i := range list {
			list[i] = v.Index(i).String()
		}
		return list, true
	}
	return nil, false
}

// ownPlanOf lists t's fields for fastOwnFields; nil when a field is of a
// type it does not walk, or two fields share a name.
func ownPlanOf(t reflect.Type) []ownField {
	var fields []ownField
	seen := map[string]bool{}
	if !collectOwn(t, nil, &fields, seen) {
		return nil
	}
	return fields
}

func collectOwn(t reflect.Type, prefix []int, fields *[]ownField, seen map[string]bool) bool {
	var embedded []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		if f.Anonymous && !hasTag {
			if f.Type.Kind() != reflect.Struct {
				return false
			}
			embedded = append(embedded, f)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if !ownKind(f.Type) || seen[name] || strings.Contains(opts, "string") || strings.Contains(opts, "inline") {
			return false
		}
		seen[name] = true
		*fields = append(*fields, ownField{name: name, index: append(append([]int(nil), prefix...), i), omitEmpty: strings.Contains(opts, "omitempty")})
	}
	// encoding/json lets a shallower field win over an embedded one of the
	// same name; this walk refuses such a struct instead (seen).
	for _, f := range embedded {
		if !collectOwn(f.Type, append(append([]int(nil), prefix...), f.Index...), fields, seen) {
			return false
		}
	}
	return true
}

// ownKind: the field types fastOwnFields walks.
func ownKind(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return t.PkgPath() == "" // a named type may marshal itself
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String && t.Elem().PkgPath() == "" && t.PkgPath() == ""
	}
	return false
}

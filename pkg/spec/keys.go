package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// GuestKeys are the pvectl keys of the guest kinds (QemuVM, LxcContainer).
// A nil pointer field is a key the spec does not set. The `doc` tag is the
// key's description in `pvectl explain` and the JSON Schema.
type GuestKeys struct {
	// Running is the power state to reconcile.
	Running *bool `json:"running,omitempty" doc:"The power state to reconcile: true starts the guest (after create too), false shuts it down (a hard stop after 180 s). Absent: the power state is not managed."`
}

// Guest returns r's guest keys (the zero value when it sets none).
func Guest(r *Resource) *GuestKeys {
	if g, ok := r.Keys.(*GuestKeys); ok && g != nil {
		return g
	}
	return &GuestKeys{}
}

// decodeKeys turns the validated own-key values of a resource into the
// kind's Keys struct; nil when the kind has none or none is set.
func decodeKeys(k *kindInfo, own map[string]any) (any, error) {
	if k.Keys == nil || len(own) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(own)
	if err != nil {
		return nil, err
	}
	return unmarshalKeys(k, b)
}

func unmarshalKeys(k *kindInfo, b []byte) (any, error) {
	v := reflect.New(reflect.TypeOf(k.Keys).Elem()).Interface()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, fmt.Errorf("%s keys: %w", k.Name, err)
	}
	return v, nil
}

// OwnFields lists the own keys r sets, by name, as JSON values (strings,
// booleans, integers, lists): for showing them, not for deciding on them.
func (r *Resource) OwnFields() map[string]any {
	out := map[string]any{}
	if r.Keys == nil {
		return out
	}
	b, err := json.Marshal(r.Keys)
	if err != nil {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return out
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil && !strings.ContainsAny(n.String(), ".eE") {
				v = int(i)
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		out[k] = v
	}
	return out
}

// UnmarshalJSON reads a resource from a plan file, decoding Keys into its
// kind's struct.
func (r *Resource) UnmarshalJSON(b []byte) error {
	type plain Resource
	var aux struct {
		*plain
		Keys json.RawMessage `json:"own"`
	}
	aux.plain = (*plain)(r)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Keys = nil
	if len(aux.Keys) == 0 || string(aux.Keys) == "null" {
		return nil
	}
	k := kindOf(r.Kind)
	if k == nil || k.Keys == nil {
		return fmt.Errorf("%s: kind %q has no own keys", r.Address(), r.Kind)
	}
	keys, err := unmarshalKeys(k, aux.Keys)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Address(), err)
	}
	r.Keys = keys
	return nil
}

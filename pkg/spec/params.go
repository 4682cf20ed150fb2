package spec

import (
	"encoding/json"
	"iter"
	"slices"
	"strings"
)

// Params are a resource's PVE parameters (Resource.Params): a small map
// from PVE's key to its wire value, kept as a list sorted by key.
//
// A Go map was the first form; its smallest table holds eight entries
// (~340 bytes), more than the rest of a small resource, and a spec of
// many small documents is mostly such maps (docs/performance.md, "10 MB
// of small documents"). A list of the keys a document writes costs 32
// bytes a key. Lookups are a binary search: resources have a few dozen
// keys at most.
//
// *Params behaves like the map it replaces: it is shared, not copied, by
// assignment (use Clone for a copy); the methods that read accept nil
// (an empty set), and Set on nil panics as a write to a nil map does.
// Iteration is in key order, and a change made while iterating is safe:
// All goes on from the key after the last one it yielded.
type Params struct {
	kv []param
}

type param struct{ k, v string }

// NewParams returns an empty set with room for n keys.
func NewParams(n int) *Params { return &Params{kv: make([]param, 0, n)} }

// ParamsOf returns a set holding m's keys and values (nil for a nil map).
func ParamsOf(m map[string]string) *Params {
	if m == nil {
		return nil
	}
	p := NewParams(len(m))
	for k, v := range m {
		p.kv = append(p.kv, param{k, v})
	}
	slices.SortFunc(p.kv, func(a, b param) int { return strings.Compare(a.k, b.k) })
	return p
}

func (p *Params) find(k string) (int, bool) {
	return slices.BinarySearchFunc(p.kv, k, func(e param, k string) int { return strings.Compare(e.k, k) })
}

// Get returns k's value, "" when k is not set.
func (p *Params) Get(k string) string {
	v, _ := p.Lookup(k)
	return v
}

// Lookup returns k's value and whether k is set.
func (p *Params) Lookup(k string) (string, bool) {
	if p == nil {
		return "", false
	}
	if i, ok := p.find(k); ok {
		return p.kv[i].v, true
	}
	return "", false
}

// Has says whether k is set.
func (p *Params) Has(k string) bool {
	_, ok := p.Lookup(k)
	return ok
}

// Set sets k to v.
func (p *Params) Set(k, v string) {
	i, ok := p.find(k)
	if ok {
		p.kv[i].v = v
		return
	}
	p.kv = slices.Insert(p.kv, i, param{k, v})
}

// Delete removes k; a nil set or a key not set is left as it is.
func (p *Params) Delete(k string) {
	if p == nil {
		return
	}
	if i, ok := p.find(k); ok {
		p.kv = slices.Delete(p.kv, i, i+1)
	}
}

// Len is the number of keys set.
func (p *Params) Len() int {
	if p == nil {
		return 0
	}
	return len(p.kv)
}

// All yields the keys and their values in key order.
func (p *Params) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if p == nil {
			return
		}
		for i := 0; i < len(p.kv); {
			e := p.kv[i]
			if !yield(e.k, e.v) {
				return
			}
			// Go on after e.k, wherever a change made by yield moved it.
			j, found := p.find(e.k)
			if found {
				j++
			}
			i = j
		}
	}
}

// KeySeq yields the keys in order.
func (p *Params) KeySeq() iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range p.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Keys returns the keys, sorted.
func (p *Params) Keys() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.kv))
	for i, e := range p.kv {
		out[i] = e.k
	}
	return out
}

// Clone returns a copy (nil for nil).
func (p *Params) Clone() *Params {
	if p == nil {
		return nil
	}
	return &Params{kv: slices.Clone(p.kv)}
}

// Map returns the keys and values as a new map (nil for nil).
func (p *Params) Map() map[string]string {
	if p == nil {
		return nil
	}
	m := make(map[string]string, len(p.kv))
	for _, e := range p.kv {
		m[e.k] = e.v
	}
	return m
}

// MarshalJSON writes the set as a JSON object, as the map was (keys in
// order; a saved plan's form is unchanged).
func (p *Params) MarshalJSON() ([]byte, error) {
	if p == nil {
		return []byte("null"), nil
	}
	return json.Marshal(p.Map())
}

// UnmarshalJSON reads a JSON object of strings.
func (p *Params) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*p = Params{}
	if q := ParamsOf(m); q != nil {
		p.kv = q.kv
	}
	return nil
}

// Equal says whether p and o hold the same keys and values (nil and an
// empty set are equal). go-cmp uses it.
func (p *Params) Equal(o *Params) bool {
	if p.Len() == 0 || o.Len() == 0 {
		return p.Len() == o.Len()
	}
	return slices.Equal(p.kv, o.kv)
}

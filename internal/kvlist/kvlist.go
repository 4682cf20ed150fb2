// Package kvlist is the small string map pvectl keeps as a list sorted by
// key: a resource's parameters (spec.Params) and a PVE object's config
// (pve.Config). A plan keeps one of each per resource alive, and a Go map
// of a dozen keys costs ~620 bytes where the list costs ~384 (a map's
// smallest table alone holds eight entries, ~340 bytes:
// docs/performance.md, "10 MB of small documents"). Lookups are a binary
// search: these maps have a few dozen keys at most.
//
// A List is used as a pointer, which behaves like the map it replaces: it
// is shared, not copied, by assignment and when passed to a function (a
// callee's Set is seen by the caller, as with a map; use Clone for a
// copy); the methods that read accept nil (an empty map), and Set on nil
// panics as a write to a nil map does. A List value would instead copy
// the slice header on assignment, so that a Set on the copy might or might
// not show through the original — hence the pointer. Iteration is in key
// order, and a change made while iterating is safe: All goes on from the
// key after the last one it yielded.
//
// The two uses differ only in how they read JSON: D, a Decoder, says how.
package kvlist

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Entry is one key and its value.
type Entry struct{ K, V string }

// Decoder reads a JSON value into entries sorted by key, one per key
// (nil for JSON null).
type Decoder interface {
	Decode(b []byte) ([]Entry, error)
}

// List is a string map kept as a list sorted by key; D reads its JSON.
type List[D Decoder] struct {
	kv []Entry
}

func compareEntries(a, b Entry) int { return strings.Compare(a.K, b.K) }

// New returns an empty list with room for n keys.
func New[D Decoder](n int) *List[D] { return &List[D]{kv: make([]Entry, 0, n)} }

// Of returns a list holding m's keys and values (nil for a nil map).
func Of[D Decoder](m map[string]string) *List[D] {
	if m == nil {
		return nil
	}
	return &List[D]{kv: Entries(m)}
}

// Entries are m's keys and values sorted by key (nil for a nil map): what
// a Decoder that reads a map returns.
func Entries(m map[string]string) []Entry {
	if m == nil {
		return nil
	}
	kv := make([]Entry, 0, len(m))
	for k, v := range m {
		kv = append(kv, Entry{k, v})
	}
	slices.SortFunc(kv, compareEntries)
	return kv
}

func (l *List[D]) find(k string) (int, bool) {
	return slices.BinarySearchFunc(l.kv, k, func(e Entry, k string) int { return strings.Compare(e.K, k) })
}

// Get returns k's value, "" when k is not set.
func (l *List[D]) Get(k string) string {
	v, _ := l.Lookup(k)
	return v
}

// Lookup returns k's value and whether k is set.
func (l *List[D]) Lookup(k string) (string, bool) {
	if l == nil {
		return "", false
	}
	if i, ok := l.find(k); ok {
		return l.kv[i].V, true
	}
	return "", false
}

// Has says whether k is set.
func (l *List[D]) Has(k string) bool {
	_, ok := l.Lookup(k)
	return ok
}

// Set sets k to v.
func (l *List[D]) Set(k, v string) {
	i, ok := l.find(k)
	if ok {
		l.kv[i].V = v
		return
	}
	l.kv = slices.Insert(l.kv, i, Entry{k, v})
}

// Delete removes k; a nil list or a key not set is left as it is.
func (l *List[D]) Delete(k string) {
	if l == nil {
		return
	}
	if i, ok := l.find(k); ok {
		l.kv = slices.Delete(l.kv, i, i+1)
	}
}

// Len is the number of keys set.
func (l *List[D]) Len() int {
	if l == nil {
		return 0
	}
	return len(l.kv)
}

// IsZero says whether no key is set, so that a field tagged omitzero is
// left out when empty, as an empty map tagged omitempty was.
func (l *List[D]) IsZero() bool { return l.Len() == 0 }

// All yields the keys and their values in key order.
func (l *List[D]) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if l == nil {
			return
		}
		for i := 0; i < len(l.kv); {
			e := l.kv[i]
			if !yield(e.K, e.V) {
				return
			}
			// Go on after e.K, wherever a change made by yield moved it.
			j, found := l.find(e.K)
			if found {
				j++
			}
			i = j
		}
	}
}

// KeySeq yields the keys in order.
func (l *List[D]) KeySeq() iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range l.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Keys returns the keys, sorted.
func (l *List[D]) Keys() []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l.kv))
	for i, e := range l.kv {
		out[i] = e.K
	}
	return out
}

// Clone returns a copy (nil for nil).
func (l *List[D]) Clone() *List[D] {
	if l == nil {
		return nil
	}
	return &List[D]{kv: slices.Clone(l.kv)}
}

// Map returns the keys and values as a new map (nil for nil).
func (l *List[D]) Map() map[string]string {
	if l == nil {
		return nil
	}
	m := make(map[string]string, len(l.kv))
	for _, e := range l.kv {
		m[e.K] = e.V
	}
	return m
}

// Equal says whether l and o hold the same keys and values (nil and an
// empty list are equal). go-cmp uses it.
func (l *List[D]) Equal(o *List[D]) bool {
	if l.Len() == 0 || o.Len() == 0 {
		return l.Len() == o.Len()
	}
	return slices.Equal(l.kv, o.kv)
}

// String formats the list as fmt formats the map it replaces
// ("map[cores:2 memory:512]"), so that messages read as they did.
func (l *List[D]) String() string { return fmt.Sprint(l.Map()) }

// MarshalJSON writes the list as a JSON object, as the map was (keys in
// order; a saved plan's form is unchanged).
func (l *List[D]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	return json.Marshal(l.Map())
}

// UnmarshalJSON reads the list with D; JSON null leaves it empty.
func (l *List[D]) UnmarshalJSON(b []byte) error {
	var d D
	kv, err := d.Decode(b)
	if err != nil {
		l.kv = nil
		return err
	}
	l.kv = kv
	return nil
}

package kvlist

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// mapJSON reads a JSON object of strings.
type mapJSON struct{}

func (mapJSON) Decode(b []byte) ([]Entry, error) {
	var m map[string]string
	err := json.Unmarshal(b, &m)
	return Entries(m), err
}

type list = List[mapJSON]

func TestListBehavesLikeTheMap(t *testing.T) {
	var none *list
	if none.Get("a") != "" || none.Has("a") || none.Len() != 0 || none.Keys() != nil || none.Map() != nil || none.Clone() != nil || !none.IsZero() {
		t.Error("a nil list must read as empty")
	}
	none.Delete("a") // no panic, as delete on a nil map
	c := Of[mapJSON](map[string]string{"memory": "512", "cores": "2", "name": "vm"})
	c.Set("agent", "1")
	c.Set("cores", "4")
	if got := c.Keys(); !slices.Equal(got, []string{"agent", "cores", "memory", "name"}) {
		t.Errorf("keys %v, want them sorted", got)
	}
	if v, ok := c.Lookup("cores"); !ok || v != "4" {
		t.Errorf("cores = %q, %v", v, ok)
	}
	if _, ok := c.Lookup("net0"); ok {
		t.Error("net0 is not set")
	}
	set := func(cfg *list) { cfg.Delete("agent") }
	set(c)
	if c.Has("agent") {
		t.Error("a callee's change must show in the caller's list, as with a map")
	}
	d := c.Clone()
	d.Set("net0", "virtio")
	if c.Has("net0") || !d.Equal(Of[mapJSON](map[string]string{"cores": "4", "memory": "512", "name": "vm", "net0": "virtio"})) {
		t.Error("Clone must copy")
	}
	if !none.Equal(New[mapJSON](0)) {
		t.Error("nil and empty are equal")
	}
	if got, want := fmt.Sprint(c), fmt.Sprint(map[string]string{"cores": "4", "memory": "512", "name": "vm"}); got != want {
		t.Errorf("printed as %s, want the map's %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("Set on a nil list must panic, as a write to a nil map does")
		}
	}()
	none.Set("a", "b")
}

// A change made while iterating neither repeats nor skips a key that
// stays: All goes on after the key it yielded last.
func TestListAllWhileChanging(t *testing.T) {
	c := Of[mapJSON](map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"})
	var seen []string
	for k := range c.All() {
		seen = append(seen, k)
		switch k {
		case "a":
			c.Delete("a") // the current key
			c.Set("aa", "x")
		case "b":
			c.Delete("c") // a later key
		}
	}
	if !slices.Equal(seen, []string{"a", "aa", "b", "d"}) {
		t.Errorf("visited %v", seen)
	}
}

package pve

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

func TestConfigBehavesLikeTheMap(t *testing.T) {
	var none *Config
	if none.Get("a") != "" || none.Has("a") || none.Len() != 0 || none.Keys() != nil || none.Map() != nil || none.Clone() != nil || !none.IsZero() {
		t.Error("a nil config must read as empty")
	}
	none.Delete("a") // no panic, as delete on a nil map
	c := ConfigOf(map[string]string{"memory": "512", "cores": "2", "name": "vm"})
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
	set := func(cfg *Config) { cfg.Delete("agent") }
	set(c)
	if c.Has("agent") {
		t.Error("a callee's change must show in the caller's config, as with a map")
	}
	d := c.Clone()
	d.Set("net0", "virtio")
	if c.Has("net0") || !d.Equal(ConfigOf(map[string]string{"cores": "4", "memory": "512", "name": "vm", "net0": "virtio"})) {
		t.Error("Clone must copy")
	}
	if !none.Equal(NewConfig(0)) {
		t.Error("nil and empty are equal")
	}
	if got, want := fmt.Sprint(c), fmt.Sprint(map[string]string{"cores": "4", "memory": "512", "name": "vm"}); got != want {
		t.Errorf("printed as %s, want the map's %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("Set on a nil config must panic, as a write to a nil map does")
		}
	}()
	none.Set("a", "b")
}

// A change made while iterating neither repeats nor skips a key that
// stays: All goes on after the key it yielded last.
func TestConfigAllWhileChanging(t *testing.T) {
	c := ConfigOf(map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"})
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

func TestConfigJSONIsTheMapsForm(t *testing.T) {
	c := ConfigOf(map[string]string{"b": "2", "a": "1"})
	b, err := json.Marshal(struct {
		C *Config
		E *Config `json:",omitzero"`
	}{C: c, E: NewConfig(0)})
	if err != nil || string(b) != `{"C":{"a":"1","b":"2"}}` {
		t.Fatalf("%s %v", b, err)
	}
	var back struct{ C *Config }
	if err := json.Unmarshal(b, &back); err != nil || !back.C.Equal(c) {
		t.Fatalf("%v %v", back.C, err)
	}
	if err := json.Unmarshal([]byte(`{"C":null}`), &back); err != nil || back.C != nil {
		t.Fatalf("null: %v %v", back.C, err)
	}
	// Decoding sorts once and keeps the last of repeated keys, as the
	// map did.
	var dup *Config
	if err := json.Unmarshal([]byte(`{"z":1,"a":"x","a":"y","m":null}`), &dup); err != nil || !slices.Equal(dup.Keys(), []string{"a", "z"}) || dup.Get("a") != "y" {
		t.Fatalf("%v %v", dup, err)
	}
}

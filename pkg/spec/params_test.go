package spec

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestParamsBehavesLikeTheMap(t *testing.T) {
	var none *Params
	if none.Get("a") != "" || none.Has("a") || none.Len() != 0 || none.Keys() != nil || none.Map() != nil || none.Clone() != nil {
		t.Error("a nil set must read as empty")
	}
	none.Delete("a") // no panic, as delete on a nil map
	p := ParamsOf(map[string]string{"memory": "512", "cores": "2", "name": "vm"})
	p.Set("agent", "1")
	p.Set("cores", "4")
	if got := p.Keys(); !slices.Equal(got, []string{"agent", "cores", "memory", "name"}) {
		t.Errorf("keys %v, want them sorted", got)
	}
	if v, ok := p.Lookup("cores"); !ok || v != "4" {
		t.Errorf("cores = %q, %v", v, ok)
	}
	if _, ok := p.Lookup("net0"); ok {
		t.Error("net0 is not set")
	}
	alias := p
	alias.Delete("agent")
	if p.Has("agent") {
		t.Error("a copy of the pointer shares the set, as a map does")
	}
	c := p.Clone()
	c.Set("net0", "virtio")
	if p.Has("net0") || !c.Equal(ParamsOf(map[string]string{"cores": "4", "memory": "512", "name": "vm", "net0": "virtio"})) {
		t.Error("Clone must copy")
	}
	if !none.Equal(NewParams(0)) {
		t.Error("nil and empty are equal")
	}
	defer func() {
		if recover() == nil {
			t.Error("Set on a nil set must panic, as a write to a nil map does")
		}
	}()
	none.Set("a", "b")
}

// A change made while iterating neither repeats nor skips a key that
// stays: All goes on after the key it yielded last.
func TestParamsAllWhileChanging(t *testing.T) {
	p := ParamsOf(map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"})
	var seen []string
	for k := range p.All() {
		seen = append(seen, k)
		switch k {
		case "a":
			p.Delete("a") // the current key
			p.Set("aa", "x")
		case "b":
			p.Delete("c") // a later key
		}
	}
	if !slices.Equal(seen, []string{"a", "aa", "b", "d"}) {
		t.Errorf("visited %v", seen)
	}
}

func TestParamsJSONIsTheMapsForm(t *testing.T) {
	p := ParamsOf(map[string]string{"b": "2", "a": "1"})
	b, err := json.Marshal(struct{ P *Params }{p})
	if err != nil || string(b) != `{"P":{"a":"1","b":"2"}}` {
		t.Fatalf("%s %v", b, err)
	}
	var back struct{ P *Params }
	if err := json.Unmarshal(b, &back); err != nil || !back.P.Equal(p) {
		t.Fatalf("%v %v", back.P, err)
	}
	if err := json.Unmarshal([]byte(`{"P":null}`), &back); err != nil || back.P != nil {
		t.Fatalf("null: %v %v", back.P, err)
	}
}

package pve

import (
	"encoding/json"
	"slices"
	"testing"
)

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

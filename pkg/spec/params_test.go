package spec

import (
	"encoding/json"
	"testing"
)

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

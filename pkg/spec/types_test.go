package spec

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResourceJSON checks the camelCase keys a saved plan file carries, and
// that a Resource survives the round trip.
func TestResourceJSON(t *testing.T) {
	on := true
	r := &Resource{
		Kind: KindQemuVM, Name: "vm", Connection: "lab",
		DependsOn: []Ref{{KindPool, "p"}}, Protected: true, State: Present,
		Params: ParamsOf(map[string]string{"memory": "1024"}), Remove: []string{"tags"},
		Keys:   &GuestKeys{Running: &on},
		Pos:    Pos{File: "a.yaml", Line: 1, Col: 1},
		KeyPos: KeyPositionsOf(map[string]Pos{"memory": {File: "a.yaml", Line: 4, Col: 3}}),
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"QemuVM","name":"vm","connection":"lab","dependsOn":[{"kind":"Pool","name":"p"}],` +
		`"protected":true,"state":"present","params":{"memory":"1024"},"remove":["tags"],"own":{"running":true},` +
		`"pos":{"file":"a.yaml","line":1,"col":1},"keyPos":{"memory":{"file":"a.yaml","line":4,"col":3}}}`
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("json: got %s\nwant %s\n(-want +got):\n%s", data, want, diff)
	}
	var back Resource
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, &back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

package planner

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestPlanFileSecretReferences: a saved plan holds, for each secret value
// read from a variable (a secret parameter, a key the document declares
// secret), the variable's name and a keyed hash, never the value; reading
// it back restores the value from the environment so the change applies,
// refuses a value that changed since, and leaves an unset one Redacted.
func TestPlanFileSecretReferences(t *testing.T) {
	const pw, note = "hunter2-long-pw", "token 5e3d1c0a-secret"
	newPlan := func() *engine.Plan {
		r := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Rare: &spec.Rare{SecretKeys: []string{"description"},
			SecretEnv: map[string]string{"cipassword": "VM_PW", "description": "NOTE"}},
			Params: spec.ParamsOf(map[string]string{"cipassword": pw, "description": note, "memory": "1024"})}
		c := &engine.Change{Address: "QemuVM/vm", Action: engine.Update, Resource: r,
			Diff:   []engine.FieldDiff{compare.Diff("description", "old", note), compare.Diff("memory", "512", "1024")},
			Params: map[string]string{"description": note, "memory": "1024"}}
		engine.MaskDeclared(c)
		return &engine.Plan{FormatVersion: engine.FormatVersion, Changes: []*engine.Change{c}}
	}
	p := newPlan()
	if got := p.Changes[0].Diff[0].After; got != "(sensitive)" {
		t.Errorf("declared key's diff shows %v, want (sensitive)", got)
	}
	data, err := engine.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{pw, note, "5e3d1c0a"} {
		if strings.Contains(string(data), v) {
			t.Fatalf("plan file holds %q:\n%s", v, data)
		}
	}
	for _, ref := range []string{`"env":"VM_PW"`, `"env":"NOTE"`, `"salt":`} {
		if !strings.Contains(string(data), ref) {
			t.Errorf("plan file lacks %s:\n%s", ref, data)
		}
	}

	got, err := engine.UnmarshalEnv(data, env(map[string]string{"VM_PW": pw, "NOTE": note}))
	if err != nil {
		t.Fatal(err)
	}
	c := got.Changes[0]
	if len(c.Redacted) != 0 || c.Params["description"] != note || c.Resource.Params.Get("cipassword") != pw || c.Params["cipassword"] != "" {
		t.Errorf("resolved: redacted %v, update params %v, resource params %v", c.Redacted, c.Params, c.Resource.Params)
	}

	if _, err := engine.UnmarshalEnv(data, env(map[string]string{"VM_PW": pw, "NOTE": "something else"})); err == nil ||
		!strings.Contains(err.Error(), "$NOTE is not the value spec.description had when the plan was made") {
		t.Errorf("changed value: got %v", err)
	}
	got, err = engine.UnmarshalEnv(data, env(map[string]string{"VM_PW": pw}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"description"}, got.Changes[0].Redacted); diff != "" {
		t.Errorf("unset variable: Redacted (-want +got):\n%s", diff)
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

package main

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// eventSchema compiles docs/apply-events.schema.json, the documented
// contract of apply/destroy --json.
func eventSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "apply-events.schema.json"))
	if err != nil {
		t.Fatalf("compile the event schema: %v", err)
	}
	return s
}

// validateLines checks every line of out against the schema and returns
// the event types seen.
func validateLines(t *testing.T, s *jsonschema.Schema, out string) map[string]int {
	t.Helper()
	types := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Errorf("not JSON: %v\n%s", err, line)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("line does not match docs/apply-events.schema.json: %v\n%s", err, line)
		}
		var ev struct{ Type string }
		_ = json.Unmarshal([]byte(line), &ev)
		types[ev.Type]++
	}
	return types
}

// Issue 10 acceptance: real apply and destroy --json output (successes,
// a failure and what it skips, task warnings, lock retries) validates
// against the documented event schema.
func TestE2EJSONEventsMatchSchema(t *testing.T) {
	s := eventSchema(t)
	env := startSimOpts(t, pvesim.Options{WarnRate: 1, LockContention: 0.3, Seed: 7}, nil)
	stageBridge(t, env, "vmbr9") // js-broken is created, and cannot start
	f := writeSpec(t, "mix.yaml", `kind: Pool
name: js-pool
---
kind: QemuVM
name: js-ok
spec:
  memory: 512
  pool: js-pool
---
kind: QemuVM
name: js-broken
spec:
  memory: 512
  net0: virtio,bridge=vmbr9
  running: true
---
kind: QemuVM
name: js-after
dependsOn: [QemuVM/js-broken]
spec:
  memory: 512
`)
	r := env.run("apply", "-f", f, "--auto-approve", "--json")
	if r.code != 1 {
		t.Fatalf("apply: exit %d, want 1 (js-broken fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	types := validateLines(t, s, r.stdout)
	for _, want := range []string{"change_start", "change_progress", "change_complete", "change_failed", "summary"} {
		if types[want] == 0 {
			t.Errorf("apply --json printed no %s event:\n%s", want, r.stdout)
		}
	}
	sum := lastJSONLine(t, r.stdout)
	if got := addresses(sum["not_started"]); len(got) != 1 || got[0] != "QemuVM/js-after" {
		t.Errorf("summary not_started: got %v, want QemuVM/js-after", got)
	}
	if counts, _ := sum["counts"].(map[string]any); counts["create"] != float64(2) {
		t.Errorf("summary counts: got %v, want 2 creates", sum["counts"])
	}
	// Every task ends with a warning (WarnRate 1): each is in the summary.
	if got := addresses(sum["warnings"]); !slices.Contains(got, "QemuVM/js-ok") {
		t.Errorf("summary warnings: got %v, want the warned tasks' changes", got)
	}

	r = env.run("destroy", "-f", f, "--auto-approve", "--json")
	if types := validateLines(t, s, r.stdout); types["summary"] != 1 {
		t.Errorf("destroy --json: got %v, want one summary", types)
	}
}

// validate --json reports each problem as an object with file and line.
func TestE2EValidateJSON(t *testing.T) {
	env := startSim(t)
	bad := writeSpec(t, "bad.yaml", "kind: Pool\nname: p\nspec:\n  coment: x\n---\nkind: QemuVM\nname: v\nspec:\n  memory: lots\n")
	r := env.mustRun(3, "validate", "-f", bad, "--json")
	var got struct {
		FormatVersion string `json:"format_version"`
		Valid         bool
		Diagnostics   []struct {
			File    string
			Line    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, r.stdout)
	}
	if got.FormatVersion != "1" || got.Valid || len(got.Diagnostics) != 2 || got.Diagnostics[0].File != bad ||
		got.Diagnostics[0].Line != 4 || got.Diagnostics[1].Line != 9 || !strings.Contains(got.Diagnostics[0].Message, "coment") {
		t.Errorf("validate --json: got %+v", got)
	}
	if r.stderr != "" {
		t.Errorf("validate --json wrote to stderr: %q", r.stderr)
	}
	good := writeSpec(t, "good.yaml", "kind: Pool\nname: p\n")
	r = env.mustRun(0, "validate", "-f", good, "--json")
	if !strings.Contains(r.stdout, `"valid":true`) || !strings.Contains(r.stdout, `"diagnostics":[]`) {
		t.Errorf("validate --json of a good spec: %s", r.stdout)
	}
}

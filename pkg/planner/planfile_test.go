package planner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/spec"
)

func TestPlanFileRoundTrip(t *testing.T) {
	set := example01()
	set.Lookup("QemuVM/app-vm-1").Params.Set("memory", "4096")
	p, err := build(t, set, liveApplied(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := savedPlan(t, p)
	// Own values come back as JSON types; running is a bool either way.
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestPlanFileOmitsSecrets(t *testing.T) {
	r := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Params: spec.ParamsOf(map[string]string{"cipassword": "hunter2", "memory": "1024"})}
	p := &engine.Plan{FormatVersion: "1", Changes: []*engine.Change{{
		Address: "QemuVM/vm", Action: engine.Update, Resource: r,
		Diff:    []engine.FieldDiff{compare.Diff("cipassword", "x", "hunter2")},
		Params:  map[string]string{"cipassword": "hunter2"},
		Reasons: []string{"cipassword changed"},
	}}}
	data, got := marshalled(t, p)
	for _, secret := range []string{"hunter2", "PRIVATE KEY", "nested-secret"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("plan file: got %q in\n%s\nwant it left out", secret, data)
		}
	}
	if diff := cmp.Diff([]string{"cipassword"}, got.Changes[0].Redacted); diff != "" {
		t.Errorf("Redacted (-want +got):\n%s", diff)
	}
	if r.Params.Get("cipassword") != "hunter2" {
		t.Errorf("Marshal modified the plan: got cipassword %q", r.Params.Get("cipassword"))
	}
	err := engine.ApplyChange(t.Context(), nil, &engine.Execution{Hooks: engine.NopHooks{}, Change: got.Changes[0]})
	if err == nil || !strings.Contains(err.Error(), "omits secret parameter(s) cipassword") {
		t.Errorf("applyChange of a redacted update: got %v want a refusal", err)
	}
}

// testKeys is a kind's own-keys struct holding secrets at the top and
// further down, as provisioning keys will.
type testKeys struct {
	SSHPrivateKey string `json:"sshPrivateKey,omitempty"`
	Provision     struct {
		Steps []struct {
			Password string `json:"password,omitempty"`
			Run      string `json:"run,omitempty"`
		} `json:"steps,omitempty"`
	} `json:"provision"`
}

// TestPlanFileOmitsOwnKeySecrets: secret own keys, at any depth, are left
// out of a plan file, and the plan in memory keeps them.
func TestPlanFileOmitsOwnKeySecrets(t *testing.T) {
	keys := &testKeys{SSHPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----"}
	keys.Provision.Steps = append(keys.Provision.Steps, struct {
		Password string `json:"password,omitempty"`
		Run      string `json:"run,omitempty"`
	}{"nested-secret", "true"})
	r := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Params: spec.ParamsOf(map[string]string{"memory": "1024"}), Keys: keys}
	c, _, _ := engine.Redact(&engine.Change{Address: "QemuVM/vm", Action: engine.Create, Resource: r})
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"PRIVATE KEY", "nested-secret"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("plan file change: got %q in\n%s\nwant it left out", secret, data)
		}
	}
	if !strings.Contains(string(data), `"run":"true"`) {
		t.Errorf("plan file change: lost the non-secret nested key in\n%s", data)
	}
	if diff := cmp.Diff([]string{"password", "sshPrivateKey"}, c.Redacted); diff != "" {
		t.Errorf("Redacted (-want +got):\n%s", diff)
	}
	if keys.SSHPrivateKey == "" || keys.Provision.Steps[0].Password != "nested-secret" {
		t.Errorf("redact modified the plan's own keys: %+v", keys)
	}
}

func TestPlanFileErrors(t *testing.T) {
	tests := []struct {
		name, data, errHas string
	}{
		{"version", `{"format_version":"2","changes":[]}`, "format version"},
		{"action", `{"format_version":"1","changes":[{"address":"Pool/p","action":"explode"}]}`, "unknown action"},
		{"json", `{`, "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.json")
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := engine.ReadFile(path)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("ReadFile: got %v want error containing %q", err, tt.errHas)
			}
		})
	}
}

func TestPlanFileRedactedOnlyWhenNeeded(t *testing.T) {
	r := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Params: spec.ParamsOf(map[string]string{"cipassword": "hunter2", "memory": "2048"})}
	p := &engine.Plan{FormatVersion: "1", Changes: []*engine.Change{{
		Address: "QemuVM/vm", Action: engine.Update, Resource: r, Params: map[string]string{"memory": "2048"},
	}}}
	data, got := marshalled(t, p)
	if red := got.Changes[0].Redacted; len(red) != 0 {
		t.Errorf("Redacted: got %v want none (the update does not send cipassword)", red)
	}
	if strings.Contains(string(data), "hunter2") {
		t.Errorf("plan file: got the secret in\n%s", data)
	}
}

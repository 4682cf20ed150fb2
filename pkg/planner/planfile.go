package planner

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/pvectl/pvectl/pkg/secret"
)

// planFile is the on-disk form of a Plan: Change.Action is not a JSON
// field of Change (the plan JSON view names it differently), so the file
// carries it beside each change.
type planFile struct {
	FormatVersion string        `json:"format_version"`
	Destroy       bool          `json:"destroy,omitempty"`
	Changes       []*fileChange `json:"changes"`
	// Endpoints: see Plan.Endpoints.
	Endpoints map[string]string `json:"endpoints,omitempty"`
}

type fileChange struct {
	Action string `json:"action"`
	*Change
}

// WriteFile saves p so that `apply FILE` can carry it out later. Secret
// parameters are left out (and listed in the change's Redacted), so the
// file is safe to keep next to the specs.
func WriteFile(path string, p *Plan) error {
	data, err := Marshal(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	return nil
}

// ReadFile loads a plan saved by WriteFile.
func ReadFile(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	p, err := Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return p, nil
}

// Marshal renders the plan-file form of p, secrets left out.
func Marshal(p *Plan) ([]byte, error) {
	f := planFile{FormatVersion: p.FormatVersion, Destroy: p.Destroy, Changes: []*fileChange{}, Endpoints: p.Endpoints}
	for _, c := range p.Changes {
		f.Changes = append(f.Changes, &fileChange{Action: c.Action.String(), Change: redact(c)})
	}
	return json.MarshalIndent(f, "", "  ")
}

// Unmarshal parses the plan-file form.
func Unmarshal(data []byte) (*Plan, error) {
	var f planFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("plan format version %q is not supported (want %q)", f.FormatVersion, FormatVersion)
	}
	p := &Plan{FormatVersion: f.FormatVersion, Destroy: f.Destroy, Changes: []*Change{}, Endpoints: f.Endpoints}
	for i, fc := range f.Changes {
		if fc == nil || fc.Change == nil {
			return nil, fmt.Errorf("change %d is empty", i)
		}
		a, err := ParseAction(fc.Action)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fc.Address, err)
		}
		fc.Change.Action = a
		if fc.Diff == nil {
			fc.Diff = []FieldDiff{}
		}
		if fc.Reasons == nil {
			fc.Reasons = []string{}
		}
		p.Changes = append(p.Changes, fc.Change)
	}
	return p, nil
}

// redact copies c without secret values (diffs are already masked by
// Build). Redacted lists the dropped keys the change's own call would have
// sent, so that Apply refuses it instead of writing something else.
func redact(c *Change) *Change {
	out := *c
	var fromParams, fromUpdate, ignored []string
	if c.Resource != nil {
		r := *c.Resource
		r.Params = dropSecrets(c.Resource.Params, &fromParams)
		r.Own = dropNestedSecrets(c.Resource.Own, &ignored)
		out.Resource = &r
	}
	out.Params = dropSecrets(c.Params, &fromUpdate)
	needed := append([]string(nil), c.Redacted...)
	switch c.Action {
	case Create, Replace:
		needed = append(needed, fromParams...)
	case Update:
		needed = append(needed, fromUpdate...)
	}
	if len(needed) > 0 {
		out.Redacted = sortedUnique(needed)
	}
	return &out
}

// dropNestedSecrets is dropSecrets for pvectl's own keys, whose values may
// be maps and lists holding secrets further down (a provisioning block's
// password, a cloud-init user's key).
func dropNestedSecrets(m map[string]any, dropped *[]string) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if secret.Key(k) {
			*dropped = append(*dropped, k)
			continue
		}
		out[k] = dropSecretsIn(v, dropped)
	}
	return out
}

func dropSecretsIn(v any, dropped *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		return dropNestedSecrets(x, dropped)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropSecretsIn(e, dropped)
		}
		return out
	}
	return v
}

func dropSecrets[V any](m map[string]V, dropped *[]string) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		if secret.Key(k) {
			*dropped = append(*dropped, k)
			continue
		}
		out[k] = v
	}
	return out
}

package planner

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

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
	// Connections: see Plan.Connections (added compatibly: a file without
	// it still reads, and then needs the connection settings as before).
	Connections map[string]*SavedConnection `json:"connections,omitempty"`
	// NotPlanned: see Plan.NotPlanned (added compatibly).
	NotPlanned []NotPlanned `json:"not_planned,omitempty"`
}

type fileChange struct {
	Action string `json:"action"`
	// State is the kind's change state, decoded by the kind (stateful).
	State json.RawMessage `json:"state,omitempty"`
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
	f := planFile{FormatVersion: p.FormatVersion, Destroy: p.Destroy, Changes: []*fileChange{}, Endpoints: p.Endpoints, Connections: p.Connections, NotPlanned: p.NotPlanned}
	for _, c := range p.Changes {
		fc := &fileChange{Action: c.Action.String(), Change: redact(c)}
		if c.State != nil {
			b, err := json.Marshal(c.State)
			if err != nil {
				return nil, fmt.Errorf("%s: state: %w", c.Address, err)
			}
			fc.State = b
		}
		f.Changes = append(f.Changes, fc)
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
	p := &Plan{FormatVersion: f.FormatVersion, Destroy: f.Destroy, Changes: []*Change{}, Endpoints: f.Endpoints, Connections: f.Connections, NotPlanned: f.NotPlanned}
	for i, fc := range f.Changes {
		if fc == nil || fc.Change == nil {
			return nil, fmt.Errorf("change %d is empty", i)
		}
		a, err := ParseAction(fc.Action)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fc.Address, err)
		}
		fc.Change.Action = a
		if len(fc.State) > 0 && fc.Resource != nil {
			st, ok := kinds[fc.Resource.Kind].(stateful)
			if !ok {
				return nil, fmt.Errorf("%s: kind %s keeps no state", fc.Address, fc.Resource.Kind)
			}
			if fc.Change.State, err = st.decodeState(fc.State); err != nil {
				return nil, fmt.Errorf("%s: state: %w", fc.Address, err)
			}
		}
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
	var fromParams, fromUpdate []string
	if c.Resource != nil {
		r := *c.Resource
		r.Params = dropSecrets(c.Resource.Params, &fromParams)
		r.Keys = clearSecrets(c.Resource.Keys, &fromParams)
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

// clearSecrets copies a kind's Keys struct with every secret field (by its
// JSON name, at any depth) zeroed, naming the ones that were set.
func clearSecrets(keys any, dropped *[]string) any {
	v := reflect.ValueOf(keys)
	if keys == nil || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return keys
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	clearStruct(cp.Elem(), dropped)
	return cp.Interface()
}

func clearStruct(v reflect.Value, dropped *[]string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		fv := v.Field(i)
		if secret.Key(name) {
			if !fv.IsZero() {
				*dropped = append(*dropped, name)
			}
			fv.Set(reflect.Zero(fv.Type()))
			continue
		}
		switch fv.Kind() {
		case reflect.Struct:
			clearStruct(fv, dropped)
		case reflect.Pointer:
			if !fv.IsNil() && fv.Elem().Kind() == reflect.Struct {
				cp := reflect.New(fv.Elem().Type())
				cp.Elem().Set(fv.Elem())
				clearStruct(cp.Elem(), dropped)
				fv.Set(cp)
			}
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.Struct && fv.Len() > 0 {
				cp := reflect.MakeSlice(fv.Type(), fv.Len(), fv.Len())
				reflect.Copy(cp, fv)
				for j := range cp.Len() {
					clearStruct(cp.Index(j), dropped)
				}
				fv.Set(cp)
			}
		}
	}
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

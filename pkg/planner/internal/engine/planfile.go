package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
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
	// Salt keys the hashes of the secret references (secretRef).
	Salt string `json:"salt,omitempty"`
	// NotPlanned: see Plan.NotPlanned (added compatibly).
	NotPlanned []NotPlanned `json:"not_planned,omitempty"`
}

type fileChange struct {
	Action string `json:"action"`
	// State is the kind's change state, decoded by the kind (stateful).
	State json.RawMessage `json:"state,omitempty"`
	// Secrets reference the secret values left out: the variable each
	// was read from and its hash; SentSecrets are those the update sends.
	Secrets     map[string]secretRef `json:"secrets,omitempty"`
	SentSecrets []string             `json:"sentSecrets,omitempty"`
	*Change
}

// WriteFile saves p so that `apply FILE` can carry it out later. Secret
// values (secret parameters and own keys, the keys a document declares
// secret) are left out: one read from a ${VAR} is kept as a reference
// (the variable's name and a keyed hash), which ReadFile resolves from
// the environment again; any other is listed in the change's Redacted.
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
	salt := newSalt()
	for _, c := range p.Changes {
		out, fromParams, fromUpdate := Redact(c)
		fc := &fileChange{Action: c.Action.String(), Change: out,
			Secrets: secretRefs(c, compare.SortedUnique(append(slices.Clone(fromParams), fromUpdate...)), salt)}
		if fc.Secrets != nil {
			f.Salt = salt
			fc.SentSecrets = compare.SortedUnique(fromUpdate)
		}
		if c.State != nil {
			b, err := json.Marshal(c.State)
			if err != nil {
				return nil, fmt.Errorf("%s: state: %w", c.Address, err)
			}
			fc.State = b
		}
		f.Changes = append(f.Changes, fc)
	}
	return json.Marshal(f)
}

// Unmarshal parses the plan-file form, reading the secrets it references
// from the environment.
func Unmarshal(data []byte) (*Plan, error) { return UnmarshalEnv(data, os.LookupEnv) }

func UnmarshalEnv(data []byte, getenv func(string) (string, bool)) (*Plan, error) {
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
			st, ok := Kinds[fc.Resource.Kind].(stateful)
			if !ok {
				return nil, fmt.Errorf("%s: kind %s keeps no state", fc.Address, fc.Resource.Kind)
			}
			if fc.Change.State, err = st.DecodeState(fc.State); err != nil {
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
	if err := resolveFile(&f, getenv); err != nil {
		return nil, err
	}
	return p, nil
}

// Redact copies c without secret values (diffs are already masked by
// Build). Redacted lists the dropped keys the change's own call would have
// sent, so that Apply refuses it instead of writing something else (until
// a reference puts the value back: resolveSecrets). It returns the keys
// dropped from the resource and from the update's parameters.
func Redact(c *Change) (out *Change, fromParams, fromUpdate []string) {
	cp := *c
	isSecret := func(k string) bool { return spec.IsSecretKey(c.Resource, k) }
	if c.Resource != nil {
		r := *c.Resource
		r.Params = spec.ParamsOf(dropSecrets(c.Resource.Params.Map(), isSecret, &fromParams))
		r.Keys = clearSecrets(c.Resource.Keys, c.Resource.SecretKeys(), &fromParams)
		cp.Resource = &r
	}
	cp.Params = dropSecrets(c.Params, isSecret, &fromUpdate)
	needed := append([]string(nil), c.Redacted...)
	switch c.Action {
	case Create, Replace:
		needed = append(needed, fromParams...)
	case Update:
		needed = append(needed, fromUpdate...)
	}
	if len(needed) > 0 {
		cp.Redacted = compare.SortedUnique(needed)
	}
	return &cp, fromParams, fromUpdate
}

// clearSecrets copies a kind's Keys struct with every secret field (by its
// JSON name, at any depth, and the top-level ones declared) zeroed,
// naming the ones that were set.
func clearSecrets(keys any, declared []string, dropped *[]string) any {
	v := reflect.ValueOf(keys)
	if keys == nil || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return keys
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	clearStruct(cp.Elem(), declared, dropped)
	return cp.Interface()
}

func clearStruct(v reflect.Value, declared []string, dropped *[]string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		fv := v.Field(i)
		if secret.Key(name) || slices.Contains(declared, name) {
			if !fv.IsZero() {
				*dropped = append(*dropped, name)
			}
			fv.Set(reflect.Zero(fv.Type()))
			continue
		}
		switch fv.Kind() {
		case reflect.Struct:
			clearStruct(fv, declared, dropped)
		case reflect.Pointer:
			if !fv.IsNil() && fv.Elem().Kind() == reflect.Struct {
				cp := reflect.New(fv.Elem().Type())
				cp.Elem().Set(fv.Elem())
				clearStruct(cp.Elem(), nil, dropped)
				fv.Set(cp)
			}
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.Struct && fv.Len() > 0 {
				cp := reflect.MakeSlice(fv.Type(), fv.Len(), fv.Len())
				reflect.Copy(cp, fv)
				for j := range cp.Len() {
					clearStruct(cp.Index(j), nil, dropped)
				}
				fv.Set(cp)
			}
		}
	}
}

func dropSecrets[V any](m map[string]V, isSecret func(string) bool, dropped *[]string) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		if isSecret(k) {
			*dropped = append(*dropped, k)
			continue
		}
		out[k] = v
	}
	return out
}

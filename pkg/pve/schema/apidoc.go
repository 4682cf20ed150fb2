package schema

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// apidocNode is one node of the apidoc's path tree.
type apidocNode struct {
	Path     string                    `json:"path"`
	Info     map[string]map[string]any `json:"info"`
	Children []apidocNode              `json:"children"`
}

// FromAPIDoc reads the official apidoc JSON (a list of path trees).
func FromAPIDoc(r io.Reader) (*Table, error) {
	var roots []apidocNode
	if err := json.NewDecoder(r).Decode(&roots); err != nil {
		return nil, fmt.Errorf("decode apidoc: %w", err)
	}
	t := &Table{Methods: map[string]*Method{}}
	var walk func(n *apidocNode) error
	walk = func(n *apidocNode) error {
		for verb, info := range n.Info {
			m, err := methodFromInfo(verb, n.Path, info)
			if err != nil {
				return err
			}
			t.Methods[verb+" "+n.Path] = m
		}
		for i := range n.Children {
			if err := walk(&n.Children[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range roots {
		if err := walk(&roots[i]); err != nil {
			return nil, err
		}
	}
	if len(t.Methods) == 0 {
		return nil, fmt.Errorf("decode apidoc: no methods found")
	}
	return t, nil
}

func methodFromInfo(verb, path string, info map[string]any) (*Method, error) {
	m := &Method{Method: verb, Path: path}
	params, _ := info["parameters"].(map[string]any)
	if params == nil {
		return m, nil
	}
	m.AdditionalProperties = Truthy(params["additionalProperties"])
	props, _ := params["properties"].(map[string]any)
	for name, raw := range props {
		s, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: parameter %q is not an object", verb, path, name)
		}
		if m.Params == nil {
			m.Params = map[string]*Param{}
		}
		m.Params[name] = paramFromSchema(s)
	}
	return m, nil
}

// paramFromSchema keeps the facts of a JSONSchema node and drops the
// descriptions; the apidoc spells booleans as 0/1 and numbers loosely.
func paramFromSchema(s map[string]any) *Param {
	p := &Param{
		Optional:   Truthy(s["optional"]),
		DefaultKey: Truthy(s["default_key"]),
		Min:        number(s["minimum"]),
		Max:        number(s["maximum"]),
	}
	p.Type, _ = s["type"].(string)
	p.Pattern, _ = s["pattern"].(string)
	p.Alias, _ = s["alias"].(string)
	p.KeyAlias, _ = s["keyAlias"].(string)
	p.TypeText, _ = s["typetext"].(string)
	p.TypeProperty, _ = s["type-property"].(string)
	p.Requires, _ = s["requires"].(string)
	if f := number(s["minLength"]); f != nil {
		p.MinLength = int(*f)
	}
	if f := number(s["maxLength"]); f != nil {
		p.MaxLength = int(*f)
	}
	if e, ok := s["enum"].([]any); ok {
		for _, v := range e {
			p.Enum = append(p.Enum, scalarString(v))
		}
	}
	if it, ok := s["instance-types"].([]any); ok {
		for _, v := range it {
			p.InstanceTypes = append(p.InstanceTypes, scalarString(v))
		}
	}
	switch f := s["format"].(type) {
	case string:
		p.Format = f
	case map[string]any:
		p.Props = map[string]*Param{}
		for k, sub := range f {
			if sm, ok := sub.(map[string]any); ok {
				p.Props[k] = paramFromSchema(sm)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		p.Items = paramFromSchema(items)
	}
	if of, ok := s["oneOf"].([]any); ok {
		for _, v := range of {
			if sm, ok := v.(map[string]any); ok {
				p.OneOf = append(p.OneOf, paramFromSchema(sm))
			}
		}
	}
	switch d := s["default"].(type) {
	case string, float64, bool:
		p.Default = d
	}
	return p
}

// Truthy is a JSON schema flag's value as PVE's schema writes them: true,
// a non-zero number, or a string other than "" and "0" (the apidoc has
// all three for optional and additionalProperties).
func Truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	}
	return false
}

func number(v any) *float64 {
	switch x := v.(type) {
	case float64:
		return &x
	case string:
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return &f
		}
	}
	return nil
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}

// WriteFacts writes the table as gzipped JSON. The output is deterministic
// (sorted map keys, no gzip timestamp) so the committed file only changes
// when the facts do.
func (t *Table) WriteFacts(w io.Writer) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := t.encodeFacts(zw); err != nil {
		return err
	}
	return zw.Close()
}

func (t *Table) encodeFacts(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(t)
}

// ReadFacts reads a table written by WriteFacts.
func ReadFacts(r io.Reader) (*Table, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	defer zr.Close()
	var t Table
	if err := json.NewDecoder(zr).Decode(&t); err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	return &t, nil
}

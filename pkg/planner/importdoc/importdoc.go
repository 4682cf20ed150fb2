// Package importdoc is the document model of pvectl import: a document
// in the spec format made from what PVE answers (its fields, Typed by the
// schema facts of the kind's create call, without what PVE assumes
// anyway; secrets as ${VAR} placeholders whose live values only the
// import's own check reads), and its YAML. The planner's kinds fill the
// documents; the planner checks that they plan clean.
package importdoc

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Doc is one document of an import, in the spec format.
type Doc struct {
	Kind string
	Name string
	// ReadOnly writes `managed: false`.
	ReadOnly  bool
	DependsOn []string
	Spec      []Field
	// Notes are written as comments above the document.
	Notes []string

	// Problem, when set, is why the document does not plan clean (or
	// does not load): it is written commented out, after this line.
	Problem string

	// secrets holds the live values of the ${VAR} placeholders in Spec,
	// by variable: only the check that the documents plan clean reads
	// them, they are never written.
	secrets map[string]string
}

// Field is one spec key of an imported document. Value is a string, an
// int, a bool or a []string.
type Field struct {
	Key   string
	Value any
}

// Address is "Kind/name".
func (d *Doc) Address() string { return d.Kind + "/" + d.Name }

// Vars are the environment variables the document's placeholders name.
func (d *Doc) Vars() []string { return slices.Sorted(maps.Keys(d.secrets)) }

// CopySecrets copies the live values of the document's placeholders, by
// variable, into dst: for the import's check, which loads the documents
// with them. They are never written.
func (d *Doc) CopySecrets(dst map[string]string) { maps.Copy(dst, d.secrets) }

// Encode writes docs as one multi-document YAML stream.
func Encode(w io.Writer, docs []*Doc) error {
	for i, d := range docs {
		if i > 0 {
			if _, err := w.Write([]byte("---\n")); err != nil {
				return err
			}
		}
		b, err := d.YAML()
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// YAML renders the document, its notes as comments above it.
func (d *Doc) YAML() ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v *yaml.Node) {
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	}
	add("kind", str(d.Kind))
	add("name", str(d.Name))
	if d.ReadOnly {
		add("managed", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"})
	}
	if len(d.DependsOn) > 0 {
		add("dependsOn", strList(d.DependsOn, yaml.FlowStyle))
	}
	body := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range d.Spec {
		var v *yaml.Node
		switch x := f.Value.(type) {
		case bool:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
		case int:
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
		case []string:
			v = strList(x, 0)
		case string:
			v = str(x)
		case *yaml.Node: // a structure the kind built (a firewall's rules)
			v = x
		default:
			return nil, fmt.Errorf("internal error: %s: %s: unexpected value %T", d.Address(), f.Key, f.Value)
		}
		body.Content = append(body.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.Key}, v)
	}
	add("spec", body)
	if len(d.Notes) > 0 {
		doc.HeadComment = strings.Join(d.Notes, "\n")
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	if d.Problem == "" {
		return buf.Bytes(), nil
	}
	return commentedOut(d.Address(), d.Problem, buf.Bytes()), nil
}

// commentedOut is a document that does not plan clean, as comments: a
// plan of the file does not see it, and a user sees why and what to fix.
func commentedOut(addr, problem string, doc []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# pvectl import: %s is commented out: it would not plan clean as written:\n", addr)
	for _, line := range strings.Split(problem, "\n") {
		fmt.Fprintf(&b, "#   %s\n", line)
	}
	b.WriteString("# Fix the document (or the object in PVE), then remove the leading \"# \" of its lines.\n")
	for _, line := range strings.SplitAfter(string(doc), "\n") {
		if line != "" {
			b.WriteString("# " + line)
		}
	}
	return b.Bytes()
}

func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func strList(xs []string, style yaml.Style) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: style}
	for _, x := range xs {
		n.Content = append(n.Content, str(x))
	}
	return n
}

// Helpers for the kinds' importers.

// Writer makes documents' fields from live configs; an import has one
// (it keeps, by kind, which PVE parameters the kind's spec takes).
type Writer struct {
	accepts map[string]func(string) bool
}

// Fields turns a live config into spec fields with the facts of the
// kind's create method m: only m's parameters, without skip's keys and
// without what PVE assumes anyway (defaults, false flags); booleans and
// integers Typed; secrets as ${VAR} placeholders named after prefix
// (STORAGE_NFS1_PASSWORD) with their live values kept for the check.
// sub, when set, decides about each property-string sub-key: it returns
// the value to write, or drop to leave it out.
func (w *Writer) Fields(d *Doc, m *schema.Method, cfg *pve.Config, prefix string, skip func(key string) bool, sub SubRule) []Field {
	var out []Field
	accepts := w.accepts[d.Kind]
	if accepts == nil {
		// Once per kind: the kind's spec facts are built on each call.
		accepts = acceptedParams(d.Kind)
		if w.accepts == nil {
			w.accepts = map[string]func(string) bool{}
		}
		w.accepts[d.Kind] = accepts
	}
	for key, v := range cfg.All() {
		if (skip != nil && skip(key)) || !accepts(key) {
			continue
		}
		var p *schema.Param
		if m != nil {
			var ok bool
			if p, ok = m.Param(key); !ok {
				continue
			}
		}
		if v == "" || compare.IsDefault(key, p, v) || compare.IsDefaultPS(p, v) {
			continue
		}
		if secret.Key(key) {
			out = append(out, Field{key, d.Placeholder(prefix, key, v)})
			continue
		}
		if p != nil && len(p.SubKeys()) > 0 && sub != nil {
			nv, keep := w.propertyString(key, p, v, sub)
			if !keep {
				continue
			}
			v = nv
		}
		out = append(out, Field{key, Typed(p, v)})
	}
	return out
}

// acceptedParams reports whether a kind's spec takes a PVE parameter
// (a kind may take fewer than its create call has).
func acceptedParams(kind string) func(string) bool {
	ks, ok := spec.SpecOf(kind)
	if !ok {
		return func(string) bool { return false }
	}
	names := map[string]bool{}
	for _, p := range ks.Params {
		if p.Family != "" {
			names[p.Family+"[n]"] = true
		} else {
			names[p.Name] = true
		}
	}
	return func(key string) bool {
		if names[key] {
			return true
		}
		i := len(key)
		for i > 0 && key[i-1] >= '0' && key[i-1] <= '9' {
			i--
		}
		return i < len(key) && names[key[:i]+"[n]"]
	}
}

// SubRule says what becomes of one sub-key of a property string (the
// parameter key, whose facts are p): its new value, or keep false to
// leave it out.
type SubRule func(key string, p *schema.Param, sub, value string, items []schema.KV) (string, bool)

// propertyString rewrites a property string sub-key by sub-key: what
// rule drops goes, and so do defaults (but the default key: "virtio" of
// a NIC). keep false drops the whole key (nothing is left).
func (w *Writer) propertyString(key string, p *schema.Param, v string, rule SubRule) (string, bool) {
	items, err := schema.ParsePropertyString(v, p)
	if err != nil {
		return v, true // kept as PVE wrote it
	}
	props := p.SubKeys()
	var out []schema.KV
	for _, it := range items {
		sp := props[it.Key]
		if sp != nil && !sp.DefaultKey && compare.IsDefault(it.Key, sp, it.Value) {
			continue
		}
		nv, keep := rule(key, p, it.Key, it.Value, items)
		if !keep {
			continue
		}
		out = append(out, schema.KV{Key: it.Key, Value: nv})
	}
	if len(out) == 0 {
		return "", false
	}
	return schema.FormatPropertyString(out, p), true
}

// KeepSub keeps every sub-key as it is.
func KeepSub(_ string, _ *schema.Param, _, value string, _ []schema.KV) (string, bool) {
	return value, true
}

// Placeholder records a secret's live value under a variable and returns
// "${VAR}".
func (d *Doc) Placeholder(prefix, key, value string) string {
	name := envName(prefix + "_" + key)
	if d.secrets == nil {
		d.secrets = map[string]string{}
	}
	if value == "" {
		// PVE does not give it back at all: the check needs a value
		// to load the document, and plan does not compare it.
		value = "unreadable"
	}
	d.secrets[name] = value
	d.Notes = append(d.Notes, fmt.Sprintf("# %s: set $%s (PVE does not give the secret back)", key, name))
	return "${" + name + "}"
}

// Unrecorded is a ${VAR} Placeholder for a value a spec must write but
// PVE does not keep (a container's template); why is its note. The check
// that the documents plan clean loads it with a stand-in value, which
// plan does not compare (a create-only key).
func (d *Doc) Unrecorded(prefix, key, why string) string {
	name := envName(prefix + "_" + key)
	if d.secrets == nil {
		d.secrets = map[string]string{}
	}
	d.secrets[name] = "unrecorded"
	d.Notes = append(d.Notes, fmt.Sprintf("# %s: set $%s (%s)", key, name, why))
	return "${" + name + "}"
}

var nonEnv = lazyre.New(`[^A-Z0-9_]+`)

// envName makes an environment variable name of s ("nfs-1_password" →
// "NFS_1_PASSWORD").
func envName(s string) string {
	n := strings.Trim(nonEnv.ReplaceAllString(strings.ToUpper(s), "_"), "_")
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		n = "PVE_" + n
	}
	return n
}

// Typed is a wire value as YAML writes it best: booleans and integers
// of the schema as such, the rest as strings.
func Typed(p *schema.Param, v string) any {
	if p == nil {
		return v
	}
	switch p.Type {
	case "boolean":
		if b, ok := schema.ParseBool(v); ok {
			return b
		}
	case "integer":
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	case "string":
		// A property string of its default key alone reads best as that
		// key's value: a VM's memory ([current=]N) as a number, its
		// agent ([enabled=]1) as a boolean.
		if items, err := schema.ParsePropertyString(v, p); err == nil && len(items) == 1 {
			if sub := p.SubKeys()[items[0].Key]; sub != nil && sub.DefaultKey {
				switch x := Typed(sub, items[0].Value).(type) {
				case bool, int:
					return x
				}
			}
		}
	}
	return v
}

// Value returns the value of key among fs.
func Value(fs []Field, key string) (any, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// WithFirst puts the fields named first, in that order, before the others.
func WithFirst(fs []Field, first ...Field) []Field {
	out := append([]Field(nil), first...)
	for _, f := range fs {
		if !slices.ContainsFunc(first, func(x Field) bool { return x.Key == f.Key }) {
			out = append(out, f)
		}
	}
	return out
}

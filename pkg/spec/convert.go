package spec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/secret"
)

// entry is one spec key with its value; file is where it was written (a
// Defaults document's file for a merged default).
type entry struct {
	file     string
	key, val *yaml.Node
	// what names the map in messages: "spec", or "Defaults.QemuVM" for a
	// default, so that a bad default reads as the place it was written.
	what string
}

func (l *loader) entries(file string, m *yaml.Node, what string) []entry {
	if m == nil {
		return nil
	}
	var es []entry
	for _, kv := range l.pairs(file, m, what) {
		kv[0].Value = l.intern(kv[0].Value) // kept as Params' and KeyPos' keys
		es = append(es, entry{file, kv[0], kv[1], what})
	}
	return es
}

// mergeDefaults appends the defaults whose key the resource does not set:
// the resource's own keys win, whole values at a time (a default net0 map
// is not merged into the resource's net0).
func mergeDefaults(own, defaults []entry) []entry {
	set := map[string]bool{}
	for _, e := range own {
		set[e.key.Value] = true
	}
	out := own
	for _, e := range defaults {
		if !set[e.key.Value] {
			out = append(out, e)
		}
	}
	return out
}

// convert validates spec entries of kind k into r's Params, Remove and
// KeyPos and the own keys' decoded YAML values into own (nil for a value
// whose interpolation failed), reporting every problem at the key's or the
// value's line.
func (l *loader) convert(k *kindInfo, es []entry, r *Resource, own map[string]any) {
	for _, e := range es {
		l.convertEntry(k, e, r, own)
	}
	for key, v := range k.Fixed {
		r.Params.Set(key, v)
	}
	l.checkRequires(k, es, r)
}

// checkRequires: a parameter PVE takes only beside another one (the
// schema's "requires": a network address and its netmask, a download's
// checksum and its algorithm) is an error at its key when the spec does
// not set the other, as PVE refuses the call (pve-common
// src/PVE/JSONSchema.pm check_object, "missing property required by").
func (l *loader) checkRequires(k *kindInfo, es []entry, r *Resource) {
	m := l.method(k)
	if m == nil {
		return
	}
	for _, e := range es {
		key := e.key.Value
		p, ok := m.Param(key)
		if !ok || p.Requires == "" || !r.Params.Has(key) || r.Params.Has(p.Requires) {
			continue
		}
		l.errorf(nodePos(e.file, e.key), "%s.%s needs %s beside it: PVE refuses %s without %s (\"missing property required by '%s'\"); set %s too, or leave %s out",
			e.what, key, p.Requires, key, p.Requires, key, p.Requires, key)
	}
}

// convertEntry puts one spec key into r: one of pvectl's own keys into
// own, a PVE parameter into r.Params in wire form (or r.Remove for null).
func (l *loader) convertEntry(k *kindInfo, e entry, r *Resource, own map[string]any) {
	key := e.key.Value
	kp, vp := nodePos(e.file, e.key), nodePos(e.file, e.val)
	isNull := e.val.Kind == yaml.ScalarNode && e.val.ShortTag() == "!!null"
	if l.isPoisoned(e.val) {
		// Reported already; record the key so that "required" holds.
		r.KeyPos.Set(key, kp)
		if _, isOwn := k.ownType(key); isOwn {
			own[key] = nil
		}
		return
	}
	if why, ok := k.Refused[key]; ok {
		l.errorf(kp, "%s.%s is not accepted: %s", e.what, key, why)
		return
	}
	if t, ok := k.ownType(key); ok {
		r.KeyPos.Set(key, kp)
		if isNull {
			delete(own, key) // resets a Defaults value
			return
		}
		l.convertOwn(t, e, r, own)
		return
	}
	if k.unsupported(key) {
		l.errorf(kp, "field %q of %s is not supported yet by this pvectl", key, k.Name)
		return
	}
	m := l.method(k)
	var p *schema.Param
	if m != nil && k.acceptsParam(key) {
		p, _ = m.Param(key)
	}
	if p == nil {
		l.errorf(kp, "unknown field %q in %s spec%s", key, k.Name, didYouMean(key, l.candidates(k, m, key)))
		return
	}
	r.KeyPos.Set(key, kp)
	if isNull {
		if !p.Optional || key == k.Identity || k.Fixed[key] != "" {
			l.errorf(vp, "%s.%s cannot be null: %s needs it", e.what, key, k.Name)
			return
		}
		if !contains(r.Remove, key) {
			r.Remove = append(r.Remove, key)
		}
		return
	}
	if wire, ok := l.paramWire(k, e, p); ok {
		r.Params.Set(key, wire)
	}
}

// convertOwn decodes one of pvectl's own keys (not null) into own.
func (l *loader) convertOwn(t ownType, e entry, r *Resource, own map[string]any) {
	key, vp := e.key.Value, nodePos(e.file, e.val)
	if nodeHasOutputRef(e.val) {
		l.errorf(vp, "%s.%s: an output reference ${Kind/name.output} is taken in PVE parameters, not in pvectl's own keys: "+
			"write the PVE parameter it stands for, or name the resource the way this key documents", e.what, key)
		return
	}
	if t != ownBool && t != ownInt && l.checkText(e.file, e.what+"."+key, e.val, isMultiLineOwnKey(key)) {
		return
	}
	v, err := ownValue(t, e.val)
	if err != nil {
		l.errorf(vp, "%s.%s: %v", e.what, key, err)
		return
	}
	own[key] = v
	if e.val.Kind == yaml.SequenceNode {
		// Each item's place, for problems with one of them
		// ("provision[1]").
		for i, item := range e.val.Content {
			r.KeyPos.Set(fmt.Sprintf("%s[%d]", key, i), nodePos(e.file, item))
		}
	}
}

// paramWire is a PVE parameter's value (not null) in wire form, checked
// against the schema and the kind's rules; false when it was refused
// (reported).
func (l *loader) paramWire(k *kindInfo, e entry, p *schema.Param) (string, bool) {
	key, vp := e.key.Value, nodePos(e.file, e.val)
	if secret.Key(key) && l.secrets[e.val].env == "" {
		// Never echo the value: it is a secret, in the wrong place.
		l.errorf(vp, "%s.%s is a secret: write it as ${VAR} (exactly that, the whole value) and set VAR in the environment; "+
			"a secret written into a spec file ends up in version control and backups", e.what, key)
		return "", false
	}
	if l.checkText(e.file, e.what+"."+key, e.val, isMultiLineParam(key)) {
		return "", false
	}
	wire, err := l.wireWithOutputs(key, p, e.val)
	if err != nil {
		pos, path := vp, key
		var ae *atError
		if errors.As(err, &ae) {
			pos, path = nodePos(e.file, ae.node), key+ae.sub
		}
		l.errorf(pos, "%s.%s: %v", e.what, path, err)
		return "", false
	}
	if alias, ok := k.ValueAliases[key][wire]; ok {
		wire = alias
	}
	if fixed, ok := k.Fixed[key]; ok && wire != fixed {
		l.errorf(vp, "%s.%s must be %q for a %s, got %q", e.what, key, fixed, k.Name, wire)
		return "", false
	}
	if err := p.Check(withSamples(wire)); err != nil {
		switch {
		case secret.Key(key):
			l.errorf(vp, "%s.%s: invalid value (not shown: it is a secret)", e.what, key)
		case p.Format == "urlencoded":
			l.errorf(vp, "%s.%s: %v (PVE wants this value URL-encoded: %%20 for a space, %%0A between lines)", e.what, key, err)
		default:
			l.errorf(vp, "%s.%s: %v", e.what, key, err)
		}
		return "", false
	}
	return wire, true
}

// method returns the schema facts of the kind's create call (nil for
// own-only kinds). A missing method is pvectl's bug, reported once.
func (l *loader) method(k *kindInfo) *schema.Method {
	if k.Create == nil {
		return nil
	}
	if m, ok := l.methods[k.Name]; ok {
		return m
	}
	switch {
	case l.table != nil:
	case l.tableCh != nil:
		l.table = <-l.tableCh // decoded while the first file was read
	default:
		l.table = schema.Default()
	}
	m, ok := l.table.Lookup(k.Create.Method, k.Create.Path)
	if !ok {
		l.errorf(Pos{File: "-"}, "internal error: the schema facts have no %s %s (needed for %s)", k.Create.Method, k.Create.Path, k.Name)
		m = nil
	}
	if l.methods == nil {
		l.methods = map[string]*schema.Method{}
	}
	l.methods[k.Name] = m
	return m
}

var indexedRE = lazyre.New(`^(.*?)(\d+)$`)

// candidates lists what key might have meant: own and planned keys and the
// create call's parameters, with families ("net[n]") spelled with the
// index the user typed ("nte1" → "net1").
func (l *loader) candidates(k *kindInfo, m *schema.Method, key string) []string {
	c := k.ownKeys()
	if m == nil {
		return c
	}
	idx := "0"
	if sm := indexedRE.FindStringSubmatch(key); sm != nil {
		idx = sm[2]
	}
	if k.params() != nil {
		return append(c, k.params()...)
	}
	for name := range m.Params {
		if fam, ok := strings.CutSuffix(name, "[n]"); ok {
			name = fam + idx
		}
		c = append(c, name)
	}
	sort.Strings(c)
	return c
}

func (l *loader) isPoisoned(n *yaml.Node) bool {
	if l.poisoned[n] {
		return true
	}
	for _, c := range n.Content {
		if l.isPoisoned(resolveAlias(c)) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ownValue checks a pvectl key's value and decodes it.
func ownValue(t ownType, v *yaml.Node) (any, error) {
	bad := fmt.Errorf("must be %s, got %s", t, describeNode(v))
	switch t {
	case ownString:
		if v.Kind != yaml.ScalarNode {
			return nil, bad
		}
		return v.Value, nil
	case ownBool:
		b, ok := boolValue(v)
		if !ok {
			return nil, bad
		}
		return b, nil
	case ownInt:
		var i int
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&i) != nil {
			return nil, bad
		}
		return i, nil
	case ownStructure:
		if v.Kind != yaml.MappingNode && v.Kind != yaml.SequenceNode {
			return nil, bad
		}
		var out any
		if err := v.Decode(&out); err != nil {
			return nil, fmt.Errorf("%s: %v", bad, err)
		}
		return out, nil
	case ownStringList:
		var out []any
		switch v.Kind {
		case yaml.ScalarNode:
			for _, s := range strings.Split(v.Value, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out, nil
		case yaml.SequenceNode:
			for _, it := range v.Content {
				it = resolveAlias(it)
				if it.Kind != yaml.ScalarNode || it.ShortTag() == "!!null" {
					return nil, bad
				}
				out = append(out, it.Value)
			}
			return out, nil
		}
	}
	return nil, bad
}

// propertyFormats are named PVE formats that are property strings
// ("k=v,k=v") even though the schema does not spell their keys inline.
var propertyFormats = map[string]bool{
	"pve-qm-ipconfig": true, "pve-qm-hostpci": true, "pve-vm-cpu-conf": true,
	"pve-qm-boot": true, "pve-qm-cicustom": true, "pve-qemu-sev-fmt": true,
	"pve-qemu-tdx-fmt": true, "pve-qm-rng": true, "pve-qm-smbios1": true,
	"pve-startup-order": true, "pve-qm-watchdog": true,
}

func isPropertyString(p *schema.Param) bool {
	return len(p.Props) > 0 || propertyFormats[p.Format] || strings.Contains(p.TypeText, "=<")
}

// listSeparator is how PVE joins a list-valued parameter on the wire.
func listSeparator(key string, p *schema.Param) (string, bool) {
	switch {
	case key == "tags" || p.Format == "pve-tag-list":
		return ";", true
	case key == "bridge_ports" || key == "slaves" || p.Format == "pve-iface-list" ||
		p.Format == "pve-vlan-id-or-range-list" || p.Format == "address-list":
		return " ", true
	case strings.HasSuffix(p.Format, "-list"):
		return ",", true
	}
	return "", false
}

// wireValue renders a YAML value as PVE expects it on the wire.
func wireValue(key string, p *schema.Param, v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return scalarWire(scalarType(p), v)
	case yaml.MappingNode:
		if !isPropertyString(p) {
			return "", fmt.Errorf("a map is only allowed for property strings (k=v,k=v); %s takes a %s", key, typeName(p))
		}
		return propertyWire(key, p.SubKeys(), v)
	case yaml.SequenceNode:
		sep, ok := listSeparator(key, p)
		if !ok {
			return "", fmt.Errorf("a list is only allowed for list parameters; %s takes a %s", key, typeName(p))
		}
		items := make([]string, 0, len(v.Content))
		for _, it := range v.Content {
			it = resolveAlias(it)
			if it.Kind != yaml.ScalarNode || it.ShortTag() == "!!null" {
				return "", &atError{it, "", fmt.Errorf("list items must be strings or numbers, got %s", describeNode(it))}
			}
			// PVE splits list values on spaces, commas and semicolons: an
			// item holding one would silently become several (tags: ["a b"]).
			if parts := schema.SplitList(it.Value); len(parts) != 1 || parts[0] != it.Value {
				return "", &atError{it, "", fmt.Errorf("list item %q must be a single value without spaces, commas or semicolons; write each value as its own list item", it.Value)}
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, sep), nil
	}
	return "", fmt.Errorf("unsupported value %s", describeNode(v))
}

// scalarType is the type a bare scalar of p is checked as: p's own type, or
// for a property string its default key's (memory is "[current=]<integer>",
// so `memory: 1_024` is the number 1024).
func scalarType(p *schema.Param) string {
	if p.Type == "string" {
		for _, sub := range p.SubKeys() {
			if sub.DefaultKey {
				return sub.Type
			}
		}
	}
	return p.Type
}

func typeName(p *schema.Param) string {
	if p.Type == "" {
		return "string"
	}
	return p.Type
}

// subKeyNames lists a property string's sub-keys for a message, leaving out
// aliases (net0's "virtio: MAC" shorthands would bury the real keys).
func subKeyNames(props map[string]*schema.Param) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if props[k].Alias == "" {
			out = append(out, k)
		}
	}
	return out
}

// atError is a value error that belongs to a node inside the value (a
// property-string sub-key, a list item), so that it is reported at that
// node's line; sub extends the key path in the message ("spec.net0.bridge").
type atError struct {
	node *yaml.Node
	sub  string
	err  error
}

func (e *atError) Error() string { return e.err.Error() }

// propertyWire renders a map as "k=v,k=v" in the written key order; a list
// sub-value is joined with ';' (PVE's separator inside property strings,
// e.g. trunks and boot order) and a null sub-value is left out. When the
// sub-keys are known (props), each one is checked here, so that a problem
// is reported at its own line rather than at the map's.
func propertyWire(key string, props map[string]*schema.Param, m *yaml.Node) (string, error) {
	var parts []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return "", &atError{k, "", fmt.Errorf("property keys must be strings")}
		}
		sub := props[k.Value]
		if props != nil && sub == nil {
			return "", &atError{k, "", fmt.Errorf("invalid format - property '%s' is not defined%s (allowed: %s)",
				k.Value, didYouMean(k.Value, slices.Sorted(maps.Keys(props))), strings.Join(subKeyNames(props), ", "))}
		}
		if sub != nil && sub.Alias != "" && props[sub.Alias] != nil {
			sub = props[sub.Alias] // virtio: MAC is macaddr (and model=virtio)
		}
		typ := ""
		if sub != nil {
			typ = sub.Type
		}
		var s string
		switch {
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
			continue
		case v.Kind == yaml.ScalarNode:
			var err error
			if s, err = scalarWire(typ, v); err != nil {
				return "", &atError{v, "." + k.Value, err}
			}
		case v.Kind == yaml.SequenceNode:
			var items []string
			for _, it := range v.Content {
				it = resolveAlias(it)
				if it.Kind != yaml.ScalarNode {
					return "", &atError{it, "." + k.Value, fmt.Errorf("list items must be scalars, got %s", describeNode(it))}
				}
				items = append(items, it.Value)
			}
			s = strings.Join(items, ";")
		default:
			return "", &atError{v, "." + k.Value, fmt.Errorf("a property value must be a scalar or a list, got %s", describeNode(v))}
		}
		if sub != nil {
			if err := sub.Check(s); err != nil {
				return "", &atError{v, "." + k.Value, err}
			}
		}
		parts = append(parts, k.Value+"="+s)
	}
	return strings.Join(parts, ","), nil
}

// article is "a NOUN" or "an NOUN".
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiouAEIOU", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

func boolHint(typ, written string) string {
	if typ == "string" {
		return fmt.Sprintf("quote it (\"%s\") to mean the word", written)
	}
	return "write the number you mean (a boolean is not taken as 1 or 0)"
}

// decimalRE is an integer written in plain decimal digits.
var decimalRE = lazyre.New(`^[-+]?[0-9]+$`)

// scalarWire maps YAML booleans to 1/0 where PVE takes a boolean (or the
// type is not known) and refuses them where it takes an integer, a number
// or a string; for numeric parameters it
// normalises YAML number spellings (0x10, 1_000, 1e3) to decimal. Anything
// else is kept exactly as written, except that a boolean parameter written
// as a string (yes, on, "true": YAML 1.1 habits) becomes 1/0, the only
// spellings PVE's API accepts for it.
func scalarWire(typ string, v *yaml.Node) (string, error) {
	switch v.ShortTag() {
	case "!!bool":
		if typ == "integer" || typ == "number" || typ == "string" {
			// PVE's schema says what the value is: expire: true is not
			// the timestamp 1, and a name is not "1".
			return "", fmt.Errorf("%s is a YAML boolean, but PVE takes %s here: %s", v.Value, article(typ), boolHint(typ, v.Value))
		}
		if b, _ := boolValue(v); b {
			return "1", nil
		}
		return "0", nil
	case "!!str":
		if typ == "boolean" {
			if b, ok := schema.ParseBool(v.Value); ok {
				return map[bool]string{true: "1", false: "0"}[b], nil
			}
		}
	case "!!int":
		if typ == "integer" || typ == "number" {
			if decimalRE.MatchString(v.Value) {
				// YAML 1.2 reads 0100 as decimal 100; the decoder would
				// take it for octal 64.
				if i, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
					return strconv.FormatInt(i, 10), nil
				}
			}
			var i int64
			if err := v.Decode(&i); err == nil {
				return strconv.FormatInt(i, 10), nil
			}
		}
	case "!!float":
		if typ == "integer" || typ == "number" {
			var f float64
			if err := v.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return "", fmt.Errorf("%q is not a finite number", v.Value)
			}
			return strconv.FormatFloat(f, 'f', -1, 64), nil
		}
	}
	return v.Value, nil
}

// wireWithOutputs is wireValue for a value that may hold output
// references (outputs.go): a scalar that holds one is converted with
// samples in, to check its form, and kept as written (the planner puts
// the values in); a property string written as a map keeps them in its
// rendering.
func (l *loader) wireWithOutputs(key string, p *schema.Param, val *yaml.Node) (string, error) {
	if val.Kind != yaml.ScalarNode || !HasOutputRef(val.Value) {
		return wireValue(key, p, val)
	}
	sample := *val
	sample.Value = withSamples(val.Value)
	if _, err := wireValue(key, p, &sample); err != nil {
		return "", err
	}
	return val.Value, nil
}

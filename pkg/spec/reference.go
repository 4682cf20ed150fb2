package spec

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/secret"
)

// This file exposes what each kind's documents accept, derived from the
// kind rows and the schema facts that Load validates with, so that the
// JSON Schema (`pvectl schema`) and `pvectl explain` follow every new row
// and key without edits of their own.

// Call is a PVE API method and path template.
type Call struct{ Method, Path string }

func (c Call) String() string { return c.Method + " " + c.Path }

// KindSpec is what documents of one kind accept.
type KindSpec struct {
	Kind string
	Noun string
	// Resource kinds are managed objects; the others (connections,
	// defaults) take only kind, name and spec.
	Resource bool
	// Defaults is the kind whose spec maps kind names to default spec keys
	// of that kind.
	Defaults bool
	// Create is the PVE call whose parameters the spec passes through (nil:
	// the kind has own keys only); Update is the call that changes an
	// existing object (nil when PVE has none).
	Create, Update *Call
	// CallNote says how the calls' paths differ per object ("" when they
	// do not).
	CallNote string
	// Immutable: no call changes an existing object; every key is
	// create-only.
	Immutable bool
	// Identity is the parameter defaulted from the document's name; Unique
	// are other parameters that identify an object when set. Neither may
	// be set in Defaults.
	Identity string
	Unique   []string
	// Params are the PVE parameters the spec accepts, sorted by name; an
	// indexed family is one entry ("net[n]").
	Params []*ParamSpec
	// Own are pvectl's own (camelCase) keys, sorted by name.
	Own []*OwnKeySpec
	// Unsupported are keys of the design this version does not implement:
	// Load rejects them as "not supported yet".
	Unsupported []string
}

// ParamSpec is one PVE parameter as a spec key.
type ParamSpec struct {
	// Name is the parameter's name, or a family's pattern ("net[n]").
	Name string
	// Family and Max are set for an indexed family: Family+"0" …
	// Family+Max are its members.
	Family string
	Max    int
	// Schema holds PVE's facts (type, enum, range, sub-keys); shared and
	// read-only.
	Schema *schema.Param
	// CreateOnly parameters are taken by the create call and not by the
	// update call (nor as a path variable of it).
	CreateOnly bool
	// Identifies is set for the parameters that name an existing object:
	// the identity, unique keys, and the update call's path variables
	// that the create call does not have in its path.
	Identifies bool
	// InPath parameters are path variables of the create call: where the
	// object is made (a guest's node).
	InPath bool
	// Fixed is the one value the kind allows ("" when free).
	Fixed string
	// ValueAliases are friendlier values Load maps to PVE's.
	ValueAliases map[string]string
	// ListSeparator is how a YAML list of values is joined on the wire
	// ("" when the parameter takes no list).
	ListSeparator string
	// PropertyString parameters also take a YAML map of their sub-keys.
	PropertyString bool
	// Removable parameters may be written `key: null` (delete them in PVE).
	Removable bool
	// Secret values are never shown.
	Secret bool
}

// SubKeys are the property-string sub-keys of the parameter (nil when it
// is not one).
func (p *ParamSpec) SubKeys() map[string]*schema.Param {
	if !p.PropertyString {
		return nil
	}
	return p.Schema.SubKeys()
}

// ScalarType is the JSON type a bare scalar of the parameter is checked
// as: its own type, or a property string's default sub-key's type
// (memory is "[current=]<integer>").
func (p *ParamSpec) ScalarType() string { return scalarType(p.Schema) }

// OwnType is the YAML shape of a pvectl key.
type OwnType string

const (
	OwnString  OwnType = "string"  // any scalar, kept as written
	OwnBoolean OwnType = "boolean" // true or false
	OwnInteger OwnType = "integer"
	OwnList    OwnType = "list" // a list of strings, or one comma-separated string
	// OwnStructure is a map or a list of maps, as the key documents.
	OwnStructure OwnType = "structure"
)

// OwnKeySpec is one pvectl key of a kind.
type OwnKeySpec struct {
	Name     string
	Type     OwnType
	Doc      string // from the `doc` tag of the key's field
	Required bool
	Secret   bool
}

// KindSpecs describes every supported kind, sorted by name.
func KindSpecs() []*KindSpec {
	var out []*KindSpec
	for _, name := range SupportedKinds() {
		k, _ := SpecOf(name)
		out = append(out, k)
	}
	return out
}

// SpecOf describes one supported kind.
func SpecOf(kind string) (*KindSpec, bool) {
	k := kindOf(kind)
	if k == nil {
		return nil, false
	}
	return kindSpec(k, schema.Default()), true
}

// PlannedKinds are the kinds of the design this version does not
// implement yet.
func PlannedKinds() []string { return slices.Clone(plannedKinds) }

// Param finds a parameter by its spec key: "memory", or a family member
// within the family's range ("net3").
func (k *KindSpec) Param(key string) (*ParamSpec, bool) {
	for _, p := range k.Params {
		if p.Name == key {
			return p, true
		}
	}
	if sm := indexedRE.FindStringSubmatch(key); sm != nil && (sm[2] == "0" || sm[2][0] != '0') {
		for _, p := range k.Params {
			if p.Family == sm[1] && len(sm[2]) <= 3 && atoi(sm[2]) <= p.Max {
				return p, true
			}
		}
	}
	return nil, false
}

// OwnKey finds a pvectl key.
func (k *KindSpec) OwnKey(key string) (*OwnKeySpec, bool) {
	for _, o := range k.Own {
		if o.Name == key {
			return o, true
		}
	}
	return nil, false
}

// Keys lists every key the kind's spec accepts (family members as
// "net0"), own keys and planned keys included: candidates for a
// did-you-mean.
func (k *KindSpec) Keys() []string {
	var out []string
	for _, p := range k.Params {
		if p.Family != "" {
			out = append(out, p.Family+"0")
			continue
		}
		out = append(out, p.Name)
	}
	for _, o := range k.Own {
		out = append(out, o.Name)
	}
	out = append(out, k.Unsupported...)
	slices.Sort(out)
	return out
}

// Candidates lists what a mistyped key might have meant, as Load's
// did-you-mean does: Keys, with family members spelled with the index the
// user typed ("nte1" → "net1").
func (k *KindSpec) Candidates(key string) []string {
	idx := "0"
	if sm := indexedRE.FindStringSubmatch(key); sm != nil {
		idx = sm[2]
	}
	var out []string
	for _, c := range k.Keys() {
		for _, p := range k.Params {
			if p.Family != "" && c == p.Family+"0" {
				c = p.Family + idx
			}
		}
		out = append(out, c)
	}
	return out
}

// Suggest returns the candidate closest to a mistyped word, or "" when
// none is close enough to be a plausible typo (as Load's did-you-mean).
func Suggest(word string, candidates []string) string { return suggest(word, candidates) }

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func kindSpec(k *kindInfo, table *schema.Table) *KindSpec {
	ks := &KindSpec{
		Kind: k.Name, Noun: k.Noun, Resource: k.Role == roleResource, Defaults: k.Role == roleDefaults,
		Identity: k.Identity, Unique: slices.Clone(k.Unique), Unsupported: slices.Clone(k.Unsupported),
		Immutable: k.Immutable, CallNote: k.CallNote,
	}
	if k.Keys != nil {
		ks.Own = ownKeySpecs(k)
	}
	if k.Create == nil {
		return ks
	}
	ks.Create = &Call{k.Create.Method, k.Create.Path}
	create, ok := table.Lookup(k.Create.Method, k.Create.Path)
	if !ok {
		return ks // Load reports the missing method as pvectl's bug
	}
	var update *schema.Method
	if c, m := updateCall(k, table); m != nil {
		ks.Update, update = c, m
	}
	for _, name := range slices.Sorted(maps.Keys(create.Params)) {
		base, isFamily := strings.CutSuffix(name, "[n]")
		if !k.acceptsParam(name) && !(isFamily && k.acceptsParam(base+"0")) {
			continue
		}
		p := create.Params[name]
		ps := &ParamSpec{
			Name: name, Schema: p, Fixed: k.Fixed[name], ValueAliases: k.ValueAliases[name],
			PropertyString: isPropertyString(p), Secret: secret.Key(base),
		}
		if isFamily {
			ps.Family, ps.Max = base, schema.FamilyMax(base)
		}
		ps.ListSeparator, _ = listSeparator(base, p)
		ps.InPath = strings.Contains(ks.Create.Path, "{"+name+"}")
		ps.Identifies = name == k.Identity || slices.Contains(k.Unique, name) ||
			(ks.Update != nil && !ps.InPath && strings.Contains(ks.Update.Path, "{"+name+"}"))
		ps.Removable = p.Optional && name != k.Identity && ps.Fixed == ""
		switch {
		case k.Immutable:
			ps.CreateOnly = !ps.Identifies && !ps.InPath
		case update != nil && !ps.Identifies && !ps.InPath:
			_, inUpdate := update.Params[name]
			ps.CreateOnly = !inUpdate
		}
		ks.Params = append(ks.Params, ps)
	}
	return ks
}

// updateCall is the call that changes an existing object of k: the row's
// own, else the create call itself when it is a PUT (singletons), else a
// PUT on the create path when that names the object, else the PUT on the
// object's path below the create path, preferring its "/config"
// ("/nodes/{node}/qemu" → "/nodes/{node}/qemu/{vmid}/config").
func updateCall(k *kindInfo, table *schema.Table) (*Call, *schema.Method) {
	try := func(method, path string) (*Call, *schema.Method) {
		if m, ok := table.Lookup(method, path); ok {
			return &Call{method, path}, m
		}
		return nil, nil
	}
	switch {
	case k.Update != nil:
		return try(k.Update.Method, k.Update.Path)
	case k.Create.Method == "PUT":
		return try(k.Create.Method, k.Create.Path)
	}
	segs := strings.Split(k.Create.Path, "/")
	if isVarSegment(segs[len(segs)-1]) {
		// The create call names the object already (a user's token).
		if c, m := try("PUT", k.Create.Path); m != nil {
			return c, m
		}
	}
	var best *Call
	var bestM *schema.Method
	prefix := k.Create.Path + "/{"
	for key, m := range table.Methods {
		if m.Method != "PUT" || !strings.HasPrefix(m.Path, prefix) {
			continue
		}
		rest := m.Path[len(k.Create.Path)+1:]
		v, tail, _ := strings.Cut(rest, "/")
		if !isVarSegment(v) || (tail != "" && tail != "config") {
			continue
		}
		// "/config" wins over the bare object path; of equals, the first
		// in key order, so the answer does not depend on map order.
		c := &Call{m.Method, m.Path}
		if best == nil || (tail == "config" && !strings.HasSuffix(best.Path, "/config")) ||
			(strings.HasSuffix(best.Path, "/config") == (tail == "config") && key < best.String()) {
			best, bestM = c, m
		}
	}
	return best, bestM
}

func isVarSegment(s string) bool { return len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' }

func ownKeySpecs(k *kindInfo) []*OwnKeySpec {
	docs := ownDocs(k.Keys)
	var out []*OwnKeySpec
	for name, t := range k.own() {
		out = append(out, &OwnKeySpec{
			Name: name, Type: t.exported(), Doc: docs[name],
			Required: slices.Contains(k.Required, name), Secret: secret.Key(name),
		})
	}
	slices.SortFunc(out, func(a, b *OwnKeySpec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (t ownType) exported() OwnType {
	switch t {
	case ownBool:
		return OwnBoolean
	case ownInt:
		return OwnInteger
	case ownStringList:
		return OwnList
	case ownStructure:
		return OwnStructure
	}
	return OwnString
}

// ownDocs reads the `doc` tags of a Keys struct, by key.
func ownDocs(keys any) map[string]string {
	out := map[string]string{}
	for _, f := range keyFields(reflect.TypeOf(keys).Elem()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out[name] = f.Tag.Get("doc")
	}
	return out
}

// DocumentKey is a top-level key of every document.
type DocumentKey struct {
	Name string
	// Type is "string", "boolean", "list" (of Kind/name), "keys" (a list
	// of spec keys), "enum" (Values) or "map" (the spec).
	Type     string
	Values   []string
	Required bool
	// ResourceOnly keys apply to managed resources, not to Connection or
	// Defaults documents.
	ResourceOnly bool
	Doc          string
}

// DocumentKeys describes the keys every document may have, in the order
// of the design.
func DocumentKeys() []DocumentKey {
	docs := map[string]DocumentKey{
		"kind":        {Type: "enum", Values: SupportedKinds(), Required: true, Doc: "What the document describes; each kind has its own spec keys."},
		"name":        {Type: "string", Required: true, Doc: "Unique per kind; the default of the kind's identity key (a VM's name, a bridge's iface, a pool's poolid…). Must not contain '/'."},
		"renamedFrom": {Type: "string", ResourceOnly: true, Doc: "The name the object has in PVE now, to rename it in place to this document's (like Terraform's moved blocks): a VM keeps its vmid, disks and addresses. QemuVM and LxcContainer only; a no-op once renamed."},
		"connection":  {Type: "string", ResourceOnly: true, Doc: "The Connection document whose cluster this resource lives in; default: the connection from the environment or --profile."},
		"dependsOn":   {Type: "list", ResourceOnly: true, Doc: "Resources (Kind/name) to apply before this one, besides the implicit references (pool:, netN bridge=)."},
		"protected":   {Type: "boolean", ResourceOnly: true, Doc: "true: pvectl never destroys or replaces this resource."},
		"managed":     {Type: "boolean", ResourceOnly: true, Doc: "false: pvectl only reads the object (it must exist; others may depend on it) and never creates, changes or deletes it."},
		"state":       {Type: "enum", Values: []string{Present.String(), Absent.String()}, ResourceOnly: true, Doc: "present (default) or absent: make sure the object is gone."},
		SecretKeysKey: {Type: "keys", ResourceOnly: true, Doc: "Spec keys this document declares secret, e.g. [description] holding a ${VAR} that feeds a secret elsewhere: shown (sensitive), left out of saved plans (a ${VAR} is kept as a reference), scrubbed from output. A secret in any other plain key is an error."},
		"spec":        {Type: "map", Doc: "The kind's keys: parameters of PVE's create call with PVE's names, and pvectl's own camelCase keys."},
	}
	out := make([]DocumentKey, 0, len(topLevelKeys))
	for _, k := range topLevelKeys {
		d := docs[k]
		d.Name = k
		out = append(out, d)
	}
	return out
}

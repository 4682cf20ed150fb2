package spec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// addDefaults merges a Defaults document into the defaults per kind (a
// later document's key replaces an earlier one) and validates its values
// as the kind's own, so a bad default is reported even when no resource
// uses it.
func (b *builder) addDefaults(d *document) {
	l := b.l
	if d.spec == nil {
		return
	}
	for _, kv := range l.pairs(d.file, d.spec, "Defaults spec") {
		kind, v := kv[0].Value, kv[1]
		kp := nodePos(d.file, kv[0])
		k := kindOf(kind)
		switch {
		case k != nil && k.Role == roleDefaults:
			l.errorf(kp, "Defaults cannot hold defaults for Defaults")
			continue
		case k == nil && isPlannedKind(kind):
			l.errorf(kp, "Defaults for kind %q: the kind is not supported yet by this pvectl%s", kind, kindsNote)
			continue
		case k == nil:
			l.errorf(kp, "Defaults for unknown kind %q%s%s", kind,
				didYouMean(kind, append(SupportedKinds(), plannedKinds...)), kindsNote)
			continue
		case v.Kind != yaml.MappingNode:
			l.errorf(nodePos(d.file, v), "Defaults.%s must be a map of %s spec keys, got %s", kind, kind, describeNode(v))
			continue
		}
		es := l.entries(d.file, v, "Defaults."+kind)
		for i := 0; i < len(es); i++ {
			// One default identity for every resource would collide.
			switch key := es[i].key.Value; {
			case key == k.Identity:
				l.errorf(nodePos(d.file, es[i].key), "Defaults.%s cannot set %s: it identifies each %s (it defaults to the document's name)", kind, key, kind)
			case contains(k.Unique, key):
				l.errorf(nodePos(d.file, es[i].key), "Defaults.%s cannot set %s: it identifies each %s (every %s would get the same one)", kind, key, kind, kind)
			default:
				continue
			}
			es = append(es[:i], es[i+1:]...)
			i--
		}
		l.convert(k, es, newResource(d.kind, d.name), map[string]any{})
		for _, e := range es {
			b.defaults[kind] = replaceEntry(b.defaults[kind], e)
		}
	}
}

func replaceEntry(es []entry, e entry) []entry {
	for i := range es {
		if es[i].key.Value == e.key.Value {
			es[i] = e
			return es
		}
	}
	return append(es, e)
}

func newResource(kind, name string) *Resource {
	return &Resource{
		Kind: kind, Name: name, State: Present,
		Params: NewParams(0),
	}
}

// resource builds a managed resource: spec with defaults merged, validated,
// the identity key defaulted from the document's name.
func (l *loader) resource(d *document, k *kindInfo, defaults []entry) *Resource {
	es := mergeDefaults(l.entries(d.file, d.spec, "spec"), defaults)
	// d.kind is the kind's own name string (accept), one for every
	// resource of the kind; its keys and the identity, allocated at once.
	r := &Resource{Kind: d.kind, Name: d.name, State: Present, Params: NewParams(len(es) + 1)}
	r.Connection, r.Protected, r.State, r.ReadOnly, r.Pos = d.connection, d.protected, d.state, d.readOnly, d.pos
	l.renamed(d, k, r)
	for _, ra := range d.dependsOn {
		r.DependsOn = append(r.DependsOn, ra.Ref)
	}
	own := map[string]any{}
	r.KeyPos.grow(len(es) + 1)
	l.convert(k, es, r, own)
	if id := k.Identity; id != "" && !contains(r.Remove, id) {
		// A written identity that is missing from Params was refused already.
		if _, set := r.Params.Lookup(id); !set && r.KeyPos.File(id) == "" {
			l.defaultIdentity(k, d, r)
		}
	}
	// An own key whose interpolation failed (nil) is reported already;
	// the others decode as their shapes were checked.
	keys, err := decodeKeys(k, setValues(own))
	if err != nil {
		l.errorf(d.pos, "internal error: %v", err)
	}
	r.Keys = keys
	l.report(r, requiredProblems(k, l.method(k), r))
	if k.Check != nil {
		l.report(r, checkWithSamples(r, k.Check))
	}
	return r
}

// report turns a kind's problems with r into diagnostics at their keys.
func (l *loader) report(r *Resource, ps []problem) {
	for _, p := range ps {
		pos := r.Pos
		if kp, ok := r.KeyPos.Get(p.key); ok && p.key != "" {
			pos = kp
		}
		l.errorf(pos, "%s: %s", r.Address(), p.msg)
	}
}

// resolve lets each resource take what it needs from the others of the
// specs it names (a VM's config drive), before the graph is built.
func (l *loader) resolve(rs []*Resource) {
	var ix *refIndex // built at the first resource that resolves anything
	for _, r := range rs {
		k := kindOf(r.Kind)
		if k == nil || k.Resolve == nil {
			continue
		}
		if ix == nil {
			ix = newRefIndex(rs, true)
		}
		find := func(kind, value string) []*Resource {
			return ix.byValue[refKey{r.Connection, kind, value}]
		}
		l.report(r, k.Resolve(r, find))
	}
}

// setValues drops the values whose interpolation failed (nil).
func setValues(own map[string]any) map[string]any {
	out := map[string]any{}
	for key, v := range own {
		if v != nil {
			out[key] = v
		}
	}
	return out
}

func (l *loader) defaultIdentity(k *kindInfo, d *document, r *Resource) {
	id := k.Identity
	if m := l.method(k); m != nil {
		if p, ok := m.Param(id); ok {
			if err := p.Check(d.name); err != nil {
				l.errorf(d.namePos, "name %q cannot be the %s's %s (%v): set spec.%s", d.name, k.Name, id, err, id)
				return
			}
		}
	}
	r.Params.Set(id, d.name)
	r.KeyPos.Set(id, d.namePos)
}

// connection builds a Connection from its own keys.
func (l *loader) connection(d *document, k *kindInfo, defaults []entry) *Connection {
	tmp := newResource(d.kind, d.name)
	own := map[string]any{}
	es := mergeDefaults(l.entries(d.file, d.spec, "spec"), defaults)
	l.convert(k, es, tmp, own)
	c := &Connection{}
	if keys, err := decodeKeys(k, setValues(own)); err != nil {
		l.errorf(d.pos, "internal error: %v", err)
	} else if keys != nil {
		c = keys.(*Connection)
	}
	c.Name, c.Pos = d.name, d.pos
	l.connectionSecrets(c, es)
	at := func(key string) Pos {
		if p, ok := tmp.KeyPos.Get(key); ok {
			return p
		}
		return d.pos
	}
	for _, key := range k.Required {
		// nil is a value whose interpolation failed (reported already).
		if v, ok := own[key]; !ok || v == "" {
			l.errorf(d.pos, "%s: spec.%s is required", d.ref(), key)
		}
	}
	l.checkConnectionValues(c, own, at)
	l.connectionToken(d, c, own, at)
	return c
}

// connectionSecrets records, per key of es written as a secret ${VAR},
// the variable (a saved plan keeps its name), and takes the variables a
// deferred load left unset.
func (l *loader) connectionSecrets(c *Connection, es []entry) {
	for _, e := range es {
		v := resolveAlias(e.val)
		ref, ok := l.secrets[v]
		if !ok {
			continue
		}
		if diag, unset := l.deferred[v]; unset {
			c.Unresolved = append(c.Unresolved, diag)
			delete(l.deferred, v)
		}
		if ref.env != "" {
			if c.SecretEnv == nil {
				c.SecretEnv = map[string]string{}
			}
			c.SecretEnv[e.key.Value] = ref.env
		}
	}
}

// checkConnectionValues checks the values that have a form of their own
// (own holds what the spec wrote; a nil value failed to interpolate and is
// reported already).
func (l *loader) checkConnectionValues(c *Connection, own map[string]any, at func(string) Pos) {
	if c.URL != "" && own["url"] != nil {
		if msg := checkURL(c.URL); msg != "" {
			l.errorf(at("url"), "%s", msg)
		}
	}
	if c.TLSFingerprint != "" && own["tlsFingerprint"] != nil {
		if msg := checkFingerprint(c.TLSFingerprint); msg != "" {
			l.errorf(at("tlsFingerprint"), "%s", msg)
		}
	}
	if c.Stack != "" && own["stack"] != nil {
		if err := CheckStack(c.Stack); err != nil {
			l.errorf(at("stack"), "spec.stack: %v", err)
		}
	}
	if c.CAFile != "" && own["caFile"] != nil {
		if msg := checkCAFile(c.CAFile); msg != "" {
			l.errorf(at("caFile"), "%s", msg)
		}
	}
}

// connectionToken checks the token's identity, tokenId or user and
// tokenName, and sets c.TokenID from the latter.
func (l *loader) connectionToken(d *document, c *Connection, own map[string]any, at func(string) Pos) {
	has := func(key string) bool { _, ok := own[key]; return ok }
	switch {
	case c.TokenID == "" && has("tokenId"):
		// tokenId failed to interpolate: reported already.
	case c.TokenID != "":
		user, name, ok := strings.Cut(c.TokenID, "!")
		if !ok || !strings.Contains(user, "@") || name == "" {
			l.errorf(at("tokenId"), "spec.tokenId must be user@realm!tokenname, got %q", c.TokenID)
		} else if (c.User != "" && c.User != user) || (c.TokenName != "" && c.TokenName != name) {
			l.errorf(at("tokenId"), "spec.tokenId %q disagrees with spec.user/spec.tokenName: set one or the other", c.TokenID)
		}
	case has("user") && has("tokenName") && (c.User == "" || c.TokenName == ""):
		// one of them failed to interpolate: reported already.
	case c.User != "" && c.TokenName != "":
		if !strings.Contains(c.User, "@") {
			l.errorf(at("user"), "spec.user must be user@realm, got %q", c.User)
		}
		c.TokenID = c.User + "!" + c.TokenName
	default:
		l.errorf(d.pos, "%s: set spec.tokenId (user@realm!tokenname) or spec.user and spec.tokenName", d.ref())
	}
}

// renamed takes a document's renamedFrom: only for kinds PVE can rename in
// place, and never naming the document's own identity.
func (l *loader) renamed(d *document, k *kindInfo, r *Resource) {
	if d.renamedFrom == "" {
		return
	}
	switch {
	case !k.Renamable:
		l.errorf(d.renamedPos, "%s cannot be renamed in place: PVE has no call that changes a %s's %s. Remove renamedFrom; the old object stays until it is destroyed (pvectl destroy --target %s/OLD with its old document)",
			d.kind, k.Noun, k.Identity, d.kind)
	case strings.Contains(d.renamedFrom, "/"):
		l.errorf(d.renamedPos, "renamedFrom %q: write the object's old name (what PVE calls it now), without a kind", d.renamedFrom)
	case d.renamedFrom == d.name:
		l.errorf(d.renamedPos, "renamedFrom %q is the document's own name: remove it", d.renamedFrom)
	default:
		r.rare().RenamedFrom = d.renamedFrom
	}
}

// checkRenames refuses a renamedFrom that names the identity of another
// document of the specs: both would claim one object.
func (l *loader) checkRenames(rs []*Resource) {
	for _, r := range rs {
		if r.RenamedFrom() == "" {
			continue
		}
		id := kindOf(r.Kind).Identity
		for _, o := range rs {
			if o != r && o.Kind == r.Kind && o.Connection == r.Connection && o.Params.Get(id) == r.RenamedFrom() {
				l.errorf(r.Pos, "%s: renamedFrom %q is also %s's %s: the rename would take that object; remove one of them", r.Address(), r.RenamedFrom(), o.Address(), id)
			}
		}
	}
}

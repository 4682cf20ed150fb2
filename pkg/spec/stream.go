package spec

import (
	"bytes"
)

// Documents are built as they are read (stream), so that the YAML tree of
// only one document is alive at a time: all of them at once were most of
// the memory of a big spec. Defaults documents apply to every resource of
// their kinds wherever they are written, so a Defaults document read after
// a document of a kind it sets defaults for makes Load start again the
// old way (build): every document read, then the Defaults merged, then the
// rest built. Layouts that put Defaults first (a 0-defaults.yaml, or the
// top of the file) never pay for that.

// builder turns accepted documents into a Set.
type builder struct {
	l        *loader
	set      *Set
	seen     map[Ref]filePos    // the documents accepted, for duplicates
	defaults map[string][]entry // the Defaults merged so far, per kind
	built    map[string]bool    // the kinds a document was built of
	links    map[*Resource]docLinks
	late     bool // a Defaults document came after a document it applies to
}

// docLinks is what link needs of a resource's document besides the
// resource: only documents that name a connection or dependencies have it.
type docLinks struct {
	connectionPos Pos
	dependsOn     []refAt
}

func newBuilder(l *loader) *builder {
	return &builder{l: l, set: &Set{Connections: map[string]*Connection{}}, seen: map[Ref]filePos{},
		defaults: map[string][]entry{}, built: map[string]bool{}, links: map[*Resource]docLinks{}}
}

// stream reads and builds every document of paths, or returns nil when a
// Defaults document came too late (see above).
func (l *loader) stream(paths []string) *Set {
	b := newBuilder(l)
	for _, f := range l.expand(paths) {
		l.eachDocument(f, func(d *document) {
			if b.late || !b.accept(d) {
				return
			}
			if kindOf(d.kind).Role != roleDefaults {
				b.construct(d)
				return
			}
			if b.late = b.appliesToBuilt(d); !b.late {
				b.addDefaults(d)
			}
		})
	}
	if b.late {
		return nil
	}
	return b.finish()
}

// build is the old way: every document is read before any is built.
func (l *loader) build(docs []*document) *Set {
	b := newBuilder(l)
	var valid []*document
	for _, d := range docs {
		if b.accept(d) {
			valid = append(valid, d)
		}
	}
	for _, d := range valid {
		if kindOf(d.kind).Role == roleDefaults {
			b.addDefaults(d)
		}
	}
	for _, d := range valid {
		if kindOf(d.kind).Role != roleDefaults {
			b.construct(d)
		}
	}
	return b.finish()
}

// readAll reads every document of paths.
func (l *loader) readAll(paths []string) []*document {
	var docs []*document
	for _, f := range l.expand(paths) {
		docs = append(docs, l.readFile(f)...)
	}
	return docs
}

// restart is a fresh loader for the same Load: the schema facts are kept,
// and stdin, which cannot be read twice, is read from what it held.
func (l *loader) restart(opts LoadOptions) *loader {
	n := newLoader(opts)
	n.table, n.tableCh, n.stdin = l.table, l.tableCh, l.stdin
	if l.stdinData != nil {
		n.stdin = bytes.NewReader(l.stdinData)
	}
	return n
}

// appliesToBuilt reports whether a Defaults document names a kind that a
// document was built of already.
func (b *builder) appliesToBuilt(d *document) bool {
	if d.spec == nil {
		return false
	}
	for i := 0; i < len(d.spec.Content); i += 2 {
		if b.built[d.spec.Content[i].Value] {
			return true
		}
	}
	return false
}

// accept reports whether d is a document to build: of a supported kind,
// not a duplicate, its header keys allowed for its kind.
func (b *builder) accept(d *document) bool {
	l := b.l
	if d.kind == "" || d.name == "" {
		return false // already reported by header
	}
	k := kindOf(d.kind)
	if k == nil {
		l.rejected[d.ref()] = true
		if isPlannedKind(d.kind) {
			l.errorf(d.pos, "kind %q is not supported yet by this pvectl%s", d.kind, kindsNote)
		} else {
			l.errorf(d.pos, "unknown kind %q%s%s", d.kind,
				didYouMean(d.kind, append(SupportedKinds(), plannedKinds...)), kindsNote)
		}
		return false
	}
	if k.Name == d.kind {
		d.kind = k.Name // one copy of the kind's name, not one per document
	}
	if prev, dup := b.seen[d.ref()]; dup {
		l.errorf(d.pos, "duplicate %s: also defined at %s", d.ref(), prev.pos())
		return false
	}
	b.seen[d.ref()] = newFilePos(d.pos)
	if k.Role != roleResource {
		for _, key := range topLevelKeys {
			if p, ok := d.set.at(key); ok && key != "kind" && key != "name" && key != "spec" {
				l.errorf(p, "%s documents take only kind, name and spec; %q does not apply", d.kind, key)
			}
		}
	}
	return true
}

// construct builds a Connection or a managed resource, with the defaults
// of its kind merged so far.
func (b *builder) construct(d *document) {
	k := kindOf(d.kind)
	b.built[d.kind] = true
	switch k.Role {
	case roleConnection:
		b.set.Connections[d.name] = b.l.connection(d, k, b.defaults[d.kind])
	case roleResource:
		r := b.l.resource(d, k, b.defaults[d.kind])
		if d.connection != "" || len(d.dependsOn) > 0 {
			b.links[r] = docLinks{d.connectionPos, d.dependsOn}
		}
		b.set.Resources = append(b.set.Resources, r)
	}
}

// finish checks what needs every resource, and links them.
func (b *builder) finish() *Set {
	l, set := b.l, b.set
	l.checkIdentities(set.Resources)
	l.checkRenames(set.Resources)
	l.resolve(set.Resources)
	l.link(set, b.links)
	// Unset variables in secrets outside a Connection are plain errors.
	for _, d := range l.deferred {
		l.diags = append(l.diags, d)
	}
	return set
}

package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// topLevelKeys are the keys a document may have, in the order the error
// message lists them.
var topLevelKeys = []string{"kind", "name", "renamedFrom", "connection", "dependsOn", "protected", "managed", "state", SecretKeysKey, "spec"}

// loader carries one Load call's state and the problems found so far.
type loader struct {
	getenv func(string) (string, bool)
	stdin  io.Reader
	table  *schema.Table
	diags  Diagnostics
	// tableCh delivers table when it is being decoded meanwhile.
	tableCh <-chan *schema.Table
	// stdinData is what stdin held, for a second reading (stream.go).
	stdinData []byte
	// methods caches the schema facts per kind.
	methods map[string]*schema.Method
	// unreadable is set when a file could not be read or parsed: references
	// into it cannot be checked, so "not defined" errors are not reported.
	unreadable bool
	// poisoned are values whose interpolation failed: already reported, so
	// they are not checked again (no cascade of "invalid URL ${X}").
	poisoned map[*yaml.Node]bool
	// rejected are documents of unsupported kinds: references to them are
	// not reported again as undefined.
	rejected map[Ref]bool
	// secrets are the values of secret keys (tokenSecret, …) as noted
	// before interpolation; deferred are their interpolation errors, which
	// a Connection takes over (Connection.Unresolved) and anything else
	// reports.
	secrets  map[*yaml.Node]secretRef
	deferred map[*yaml.Node]Diagnostic
	// deferUnset and unsetVars: LoadOptions.DeferUnset and the variables
	// it left unresolved.
	deferUnset bool
	unsetVars  map[string]bool
	flow       *secretFlow // where secrets go (secretflow.go)
	// keys holds one copy of each spec key read (intern), so that the
	// Params and KeyPos of many resources share their keys' bytes.
	keys map[string]string
}

func (l *loader) errorf(pos Pos, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func nodePos(file string, n *yaml.Node) Pos {
	return Pos{File: file, Line: n.Line, Col: n.Column}
}

// document is one YAML document with its header decoded.
type document struct {
	file    string
	pos     Pos // the "kind:" key, or the document start if kind is missing
	kind    string
	name    string
	namePos Pos

	connection    string
	connectionPos Pos
	dependsOn     []refAt
	protected     bool
	protectedPos  Pos
	readOnly      bool // managed: false
	managedPos    Pos
	state         State
	renamedFrom   string
	renamedPos    Pos
	spec          *yaml.Node // a mapping, or nil
	// set records which header keys were written (Connection and Defaults
	// documents accept only kind, name and spec): a few, so a list (a map
	// per document is most of the memory of many small documents).
	set headerKeys
}

// headerKeys are the header keys of a document and where each was written.
type headerKeys []headerKey

type headerKey struct {
	key string
	pos Pos
}

// at returns where key was written, and whether it was.
func (h headerKeys) at(key string) (Pos, bool) {
	for _, k := range h {
		if k.key == key {
			return k.pos, true
		}
	}
	return Pos{}, false
}

// refAt is a parsed dependsOn entry and where it was written.
type refAt struct {
	Ref
	Pos Pos
}

// StdinPath as a path makes Load read specs from LoadOptions.Stdin; their
// problems are reported at "stdin:LINE".
const (
	StdinPath = "-"
	stdinName = "stdin"
)

// Load reads files and directories (every *.yaml|*.yml in a directory,
// sorted), multi-document, strictly; interpolates ${VAR} and ${VAR:-default};
// merges Defaults; validates every document (PVE parameters against the
// schema facts, pvectl keys per kind); resolves references and builds the
// dependency graph. Every problem is collected: the error is Diagnostics,
// sorted by file and line, and the Set is nil.
func Load(paths []string, opts LoadOptions) (*Set, error) {
	l := newLoader(opts)
	// The schema facts are decoded (once per process) while the YAML is
	// read: two independent start-up costs overlap.
	if l.table == nil {
		table := make(chan *schema.Table, 1)
		go func() { table <- schema.Default() }()
		l.tableCh = table
	}
	if l.stdin == nil {
		l.stdin = os.Stdin
	}
	set := l.stream(paths)
	if set == nil {
		// A Defaults document came after documents it sets defaults for:
		// load again, every document read before any is built.
		l = l.restart(opts)
		set = l.build(l.readAll(paths))
	}
	l.checkSecretFlow(set)
	if len(l.diags) > 0 {
		return nil, l.sorted()
	}
	set.Unset = slices.Sorted(maps.Keys(l.unsetVars))
	return set, nil
}

func newLoader(opts LoadOptions) *loader {
	l := &loader{getenv: opts.Getenv, table: opts.Schema, stdin: opts.Stdin, poisoned: map[*yaml.Node]bool{}, rejected: map[Ref]bool{},
		secrets: map[*yaml.Node]secretRef{}, deferred: map[*yaml.Node]Diagnostic{},
		deferUnset: opts.DeferUnset, unsetVars: map[string]bool{}}
	if l.getenv == nil {
		l.getenv = os.LookupEnv
	}
	return l
}

// maxInterned bounds the keys interned: a spec has a few hundred distinct
// keys at most; a hostile one with more keeps its own copies.
const maxInterned = 4096

// intern returns the loader's copy of the key s.
func (l *loader) intern(s string) string {
	if v, ok := l.keys[s]; ok {
		return v
	}
	if l.keys == nil {
		l.keys = map[string]string{}
	}
	if len(l.keys) < maxInterned {
		l.keys[s] = s
	}
	return s
}

// sorted orders the diagnostics by file, line and column and drops exact
// duplicates (a bad Defaults value is seen once per resource it merges into).
func (l *loader) sorted() Diagnostics {
	ds := l.diags
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	out := ds[:0]
	for i, d := range ds {
		if i > 0 && d == ds[i-1] {
			continue
		}
		out = append(out, d)
	}
	// The list of supported kinds is said once, at the first message
	// that needs it.
	listed := false
	for i := range out {
		if !strings.Contains(out[i].Msg, kindsNote) {
			continue
		}
		note := ""
		if !listed {
			note, listed = " (supported: "+supportedList()+")", true
		}
		out[i].Msg = strings.ReplaceAll(out[i].Msg, kindsNote, note)
	}
	return out
}

// kindsNote marks where a message would list the supported kinds; sorted
// lists them at the first such message only.
const kindsNote = "\x00supported kinds\x00"

var (
	yamlLineRE      = lazyre.New(`^yaml: line (\d+): `)
	unknownAnchorRE = lazyre.New(`^yaml: unknown anchor '([^']*)' referenced`)
)

// lineOf returns the 1-based line of the first occurrence of s in data, or
// 0 when it does not occur.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// zeroBasedYAMLErrors are the yaml/v3 parser errors whose "line N" is
// 0-based (its scanner errors are 1-based).
var zeroBasedYAMLErrors = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected key":              true,
	"did not find expected '-' indicator":    true,
	"did not find expected node content":     true,
	"did not find expected <document start>": true,
}

// readFile decodes every document of a file, interpolates it and decodes its
// header. A syntax error ends the file: the YAML decoder cannot resume.
func (l *loader) readFile(file string) []*document {
	var docs []*document
	l.eachDocument(file, func(d *document) { docs = append(docs, d) })
	return docs
}

// eachDocument is readFile handing each document to use as soon as it is
// read (its YAML tree can then be dropped before the next is read).
func (l *loader) eachDocument(file string, use func(*document)) {
	if file == StdinPath {
		file = stdinName
	}
	data, err := l.read(file)
	if err != nil {
		l.unreadable = true
		l.errorf(Pos{File: file}, "%v", err)
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node // one for the file: only its Content is kept
	for {
		root = yaml.Node{}
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			l.unreadable = true
			pos, msg := Pos{File: file}, err.Error()
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				pos.Line, _ = strconv.Atoi(m[1])
				msg = msg[len(m[0]):]
				if zeroBasedYAMLErrors[msg] {
					pos.Line++
				}
			} else if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil {
				// yaml/v3 gives no line for this one: find the alias.
				pos.Line = lineOf(data, "*"+m[1])
			}
			l.errorf(pos, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
			return
		}
		if len(root.Content) == 0 {
			continue
		}
		if a := aliasBomb(&root, maxExpandedNodes); a != nil {
			l.unreadable = true
			l.errorf(nodePos(file, a), "YAML aliases expand this document to more than %d values (an alias bomb?): write the values out, or share them with a Defaults document", maxExpandedNodes)
			return
		}
		body := resolveAlias(root.Content[0])
		if body.Kind == yaml.ScalarNode && body.ShortTag() == "!!null" {
			continue // an empty document, e.g. a trailing "---" or only comments
		}
		if body.Kind != yaml.MappingNode {
			l.errorf(nodePos(file, body), "a document must be a mapping with kind, name and spec, got %s", describeNode(body))
			continue
		}
		l.noteSecretFlow(file, body)
		l.interpolateTree(file, body, map[*yaml.Node]bool{})
		use(l.header(file, body))
	}
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		}
		return "a string"
	}
	return "an alias"
}

// pairs returns a mapping's key/value nodes, reporting duplicate and
// non-string keys. what names the mapping in messages ("spec").
func (l *loader) pairs(file string, m *yaml.Node, what string) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	seen := map[string]Pos{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolveAlias(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			l.errorf(nodePos(file, k), "%s keys must be strings, got %s", what, describeNode(k))
			continue
		}
		if k.Value == "<<" {
			l.errorf(nodePos(file, k), "YAML merge keys (<<) are not supported in %s; use a Defaults document", what)
			continue
		}
		if p, dup := seen[k.Value]; dup {
			l.errorf(nodePos(file, k), "duplicate key %q in %s (first at %s)", k.Value, what, p)
			continue
		}
		seen[k.Value] = nodePos(file, k)
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out
}

// header decodes a document's top-level keys.
func (l *loader) header(file string, m *yaml.Node) *document {
	d := &document{file: file, pos: nodePos(file, m)}
	var unknown [][2]*yaml.Node
	for _, kv := range l.pairs(file, m, "document") {
		if !l.readHeaderKey(d, kv[0], kv[1]) {
			unknown = append(unknown, kv)
			continue
		}
		d.set = append(d.set, headerKey{kv[0].Value, nodePos(file, kv[0])})
	}
	if d.state == 0 {
		d.state = Present
	}
	l.checkHeader(d, unknown)
	return d
}

// readHeaderKey reads one top-level key k of d; false when k is none.
func (l *loader) readHeaderKey(d *document, k, v *yaml.Node) bool {
	file := d.file
	kp, vp := nodePos(file, k), nodePos(file, v)
	switch k.Value {
	case "kind":
		d.pos = kp
		d.kind = l.stringValue(file, "kind", v)
	case "name":
		d.namePos = vp
		d.name = l.stringValue(file, "name", v)
		if n := utf8.RuneCountInString(d.name); n > MaxNameLength {
			l.errorf(vp, "name is %d characters long, over pvectl's limit of %d (a DNS name's): shorten it", n, MaxNameLength)
			d.name = ""
		}
		if strings.Contains(d.name, "/") {
			l.errorf(vp, "name %q must not contain '/' (addresses are Kind/name)", d.name)
			d.name = ""
		}
	case "renamedFrom":
		d.renamedPos = vp
		if v.ShortTag() != "!!null" {
			d.renamedFrom = l.stringValue(file, "renamedFrom", v)
		}
	case "connection":
		d.connectionPos = vp
		if v.ShortTag() != "!!null" {
			d.connection = l.stringValue(file, "connection", v)
		}
	case "dependsOn":
		d.dependsOn = l.dependsOn(file, v)
	case "protected":
		d.protectedPos = vp
		if b, ok := boolValue(v); ok {
			d.protected = b
		} else {
			l.errorf(vp, "protected must be a boolean (true or false), got %s", describeNode(v))
		}
	case "managed":
		d.managedPos = vp
		if b, ok := boolValue(v); ok {
			d.readOnly = !b
		} else {
			l.errorf(vp, "managed must be a boolean (true or false), got %s", describeNode(v))
		}
	case "state":
		s := l.stringValue(file, "state", v)
		if st, ok := ParseState(s); ok {
			d.state = st
		} else if s != "" {
			l.errorf(vp, "state must be present or absent, got %q", s)
		}
	case "spec":
		switch {
		case v.Kind == yaml.MappingNode:
			d.spec = v
		case v.ShortTag() != "!!null":
			l.errorf(vp, "spec must be a map, got %s", describeNode(v))
		}
	default:
		return false
	}
	return true
}

// checkHeader reports what is wrong with d's top-level keys as a whole
// (after the loop, so that the message can name the resource).
func (l *loader) checkHeader(d *document, unknown [][2]*yaml.Node) {
	for _, kv := range unknown {
		l.errorf(nodePos(d.file, kv[0]), "unknown key %q in %s%s (allowed: %s)",
			kv[0].Value, d.describe(), didYouMean(kv[0].Value, topLevelKeys), strings.Join(topLevelKeys, ", "))
	}
	if _, ok := d.set.at("kind"); !ok {
		l.errorf(d.pos, "kind is required%s", kindsNote)
	}
	if _, ok := d.set.at("name"); !ok {
		l.errorf(d.pos, "name is required in %s", d.describe())
	}
	if d.readOnly && d.state == Absent {
		l.errorf(d.managedPos, "%s is managed: false and state: absent; pvectl never deletes what it does not manage (drop managed: false to let state: absent remove it)", d.describe())
	}
	if d.protected && d.state == Absent {
		l.errorf(d.protectedPos, "%s is protected: true and state: absent; a protected resource cannot be destroyed (remove one of them)", d.describe())
	}
}

func (d *document) describe() string {
	switch {
	case d.kind != "" && d.name != "":
		return d.kind + "/" + d.name
	case d.kind != "":
		return "this " + d.kind + " document"
	}
	return "this document"
}

func (d *document) ref() Ref { return Ref{d.kind, d.name} }

// stringValue reads a scalar that must be a non-empty string.
// Like every name and identity, it is one line of text (textProblem).
func (l *loader) stringValue(file, key string, v *yaml.Node) string {
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" || v.Value == "" {
		l.errorf(nodePos(file, v), "%s must be a non-empty string, got %s", key, describeNode(v))
		return ""
	}
	if l.checkText(file, key, v, false) {
		return ""
	}
	return v.Value
}

func boolValue(v *yaml.Node) (bool, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		return false, false
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, false
	}
	return b, true
}

// dependsOn accepts a list of "Kind/name" or one such string.
func (l *loader) dependsOn(file string, v *yaml.Node) []refAt {
	items := []*yaml.Node{v}
	switch v.Kind {
	case yaml.SequenceNode:
		items = v.Content
	case yaml.ScalarNode:
		if v.ShortTag() == "!!null" {
			return nil
		}
	default:
		l.errorf(nodePos(file, v), "dependsOn must be a list of Kind/name, got %s", describeNode(v))
		return nil
	}
	var out []refAt
	for _, it := range items {
		it = resolveAlias(it)
		if it.Kind != yaml.ScalarNode {
			l.errorf(nodePos(file, it), "dependsOn entries must be strings Kind/name, got %s", describeNode(it))
			continue
		}
		if l.checkText(file, "dependsOn", it, false) {
			continue
		}
		r, err := parseRef(it.Value)
		if err != nil {
			l.errorf(nodePos(file, it), "dependsOn: %v", err)
			continue
		}
		out = append(out, refAt{r, nodePos(file, it)})
	}
	return out
}

func parseRef(s string) (Ref, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("invalid reference %q: want Kind/name, e.g. LinuxBridge/vmbr1", s)
	}
	return Ref{kind, name}, nil
}

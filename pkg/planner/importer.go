package planner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Import turns live objects into spec documents (`pvectl import`). Each
// kind that can be imported has the importer capability (import_<kind>.go):
// it lists its live objects as resources whose identity is set, and turns
// an object that the kind's own observe read into a document. The engine
// here never names a kind: it selects, observes through the kinds'
// observe (the same reads a plan makes), lays the documents out, and
// checks that planning them against the live state is clean.

// importer kinds can write their live objects as spec documents.
type importer interface {
	// importable lists the kind's live objects on lc (only node's, for a
	// node-bound kind, when node is not ""), each as a resource with its
	// identity set, ready for observe.
	importable(ctx context.Context, ic *importCtx, node string) ([]importItem, error)
	// importDoc writes the document of r's object, which observe read
	// into lo; nil skips it (ic.warn says why).
	importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error)
}

// importAuditor kinds say which privileges listing them truthfully needs:
// PVE's lists hide what a token may not audit, so an import without them
// would be silently incomplete.
type importAuditor interface {
	importPerms(node string) []permNeed
}

// importRefuser kinds are not imported, for the reason notImported gives.
// The refusal wins over an importer the kind has through the kind it is
// built on (importerOf).
type importRefuser interface {
	notImported() string
}

// importerOf is k's importer, unless k refuses import: a kind that embeds
// another one has that one's methods, importer's among them, and says
// with notImported that they do not make its own objects' documents.
func importerOf(k kindOps) (importer, bool) {
	if _, refused := k.(importRefuser); refused {
		return nil, false
	}
	im, ok := k.(importer)
	return im, ok
}

// ImportableKinds lists the kinds Import can write, sorted.
func ImportableKinds() []string {
	var out []string
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		if _, ok := importerOf(kinds[kind]); ok {
			out = append(out, kind)
		}
	}
	return out
}

// importItem is one live object a kind can import.
type importItem struct {
	r *spec.Resource
	// ids are what a user may write after "Kind/" to select it ("100",
	// "app-vm-1"; "pve/vmbr1", "vmbr1").
	ids []string
}

// ImportOptions selects what Import reads.
type ImportOptions struct {
	// Refs are "Kind/id" selections (QemuVM/100, LinuxBridge/pve/vmbr1).
	Refs []string
	// All imports every importable object (of Node when set, for the
	// kinds that live on a node; cluster-wide kinds are all imported).
	All  bool
	Node string
	// Connection is the connection read ("" = the environment's).
	Connection string
	// WithGenerated keeps what PVE generates when it creates an object
	// (MAC addresses, a VM's vmgenid and SMBIOS UUID).
	WithGenerated bool
	// Schema holds the PVE parameter facts; nil means schema.Default().
	Schema *schema.Table
	// ReadConcurrency caps the reads in flight (0: DefaultReadConcurrency).
	ReadConcurrency int
}

// ImportResult is what Import read.
type ImportResult struct {
	Docs []*ImportedDoc
	// Warnings say what was left out and why.
	Warnings []string
}

// Vars are the environment variables every placeholder of the import
// names, sorted.
func (res *ImportResult) Vars() []string {
	var out []string
	for _, d := range res.Docs {
		out = append(out, d.Vars()...)
	}
	return sortedUnique(out)
}

// importCtx is what a kind's importer gets.
type importCtx struct {
	lc            *liveConn
	table         *schema.Table
	withGenerated bool
	warnings      []string
	// docs are the documents made so far, by address: kinds imported
	// after others (a node's network commit) look at them.
	docs map[string]*ImportedDoc
	// explicit are the resources a Kind/id selection named.
	explicit map[*spec.Resource]bool
	// stagedWarned are the nodes whose staged network was warned about.
	stagedWarned []string
}

// named reports whether r was selected by a Kind/id (not by --all).
func (ic *importCtx) named(r *spec.Resource) bool { return ic.explicit[r] }

func (ic *importCtx) warn(format string, args ...any) {
	ic.warnings = append(ic.warnings, fmt.Sprintf(format, args...))
}

// method finds a create method's schema facts (nil when unknown).
func (ic *importCtx) method(httpMethod, template string) *schema.Method {
	m, ok := ic.table.Lookup(httpMethod, template)
	if !ok {
		return nil
	}
	return m
}

// ImportError is an import that cannot be trusted: the selection names
// what does not exist, or planning the documents is not clean.
type ImportError struct {
	Problems []string
	// Invalid: the selection itself is wrong (found before any API call).
	Invalid bool
}

func (e *ImportError) Error() string { return strings.Join(e.Problems, "\n") }

// Import reads the selected live objects and makes them documents, in
// dependency order. It returns an *ImportError when a selection is wrong
// (Invalid: before any API call) or finds nothing, or an object cannot be
// read. CheckImport then says whether the documents plan clean.
func Import(ctx context.Context, clients Clients, opts ImportOptions) (*ImportResult, error) {
	if !opts.All && len(opts.Refs) == 0 {
		return nil, errors.New("nothing to import: name objects (Kind/id) or pass --all")
	}
	table := opts.Schema
	if table == nil {
		table = schema.Default()
	}
	sel, problems := selectRefs(opts.Refs)
	if len(problems) > 0 {
		return nil, &ImportError{Problems: problems, Invalid: true}
	}
	conc := opts.ReadConcurrency
	if conc <= 0 {
		conc = DefaultReadConcurrency
	}
	lc, err := openConn(ctx, clients, nil, opts.Connection, conc)
	if err != nil {
		return nil, err
	}
	if opts.Node != "" && !lc.hasNode(opts.Node) {
		return nil, fmt.Errorf("node %q is not in the cluster (nodes: %s)", opts.Node, strings.Join(lc.nodes, ", "))
	}
	ic := &importCtx{lc: lc, table: table, withGenerated: opts.WithGenerated, docs: map[string]*ImportedDoc{}, explicit: map[*spec.Resource]bool{}}

	// Kinds that commit others' changes come last: they look at what was
	// imported before them.
	order := slices.Sorted(maps.Keys(kinds))
	slices.SortStableFunc(order, func(a, b string) int {
		return boolInt(is[netCommitter](a)) - boolInt(is[netCommitter](b))
	})
	for _, kind := range order {
		k := kinds[kind]
		im, ok := importerOf(k)
		ids := sel[kind]
		if !opts.All && len(ids) == 0 {
			continue
		}
		if !ok {
			continue // selectRefs refused a selection of it
		}
		// With --all, a kind the token may not audit is imported as far as
		// PVE shows it, after a warning; what PVE refuses outright is
		// left out (the warning said why).
		lacking := false
		if ia, ok := k.(importAuditor); ok {
			if err := lc.checkPerms(kind, ia.importPerms(opts.Node)); err != nil {
				lacking = true
				msg := fmt.Sprintf("%v; what the token may not audit is not imported", err)
				if len(ids) > 0 {
					problems = append(problems, msg)
					continue
				}
				ic.warn("%s", msg)
			}
		}
		node := opts.Node
		if len(ids) > 0 {
			node = "" // a named object is found wherever it is
		}
		items, err := im.importable(ctx, ic, node)
		if err != nil {
			if lacking && forbidden(err) {
				continue
			}
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		picked := items
		if len(ids) > 0 {
			var missing []string
			picked, missing = ic.pick(kind, items, ids)
			problems = append(problems, missing...)
		}
		docs, errs := importKind(ctx, ic, k, im, picked)
		for _, err := range errs {
			if !lacking || !forbidden(err) {
				problems = append(problems, err.Error())
			}
		}
		for _, d := range docs {
			ic.docs[d.Address()] = d
		}
	}
	if len(problems) > 0 {
		return nil, &ImportError{Problems: problems}
	}
	res := &ImportResult{Warnings: ic.warnings}
	for _, addr := range slices.Sorted(maps.Keys(ic.docs)) {
		d := ic.docs[addr]
		// Only edges to documents of this import.
		d.DependsOn = slices.DeleteFunc(sortedUnique(d.DependsOn), func(a string) bool { return ic.docs[a] == nil || a == addr })
		res.Docs = append(res.Docs, d)
	}
	if err := res.order(table); err != nil {
		return nil, err
	}
	return res, nil
}

// pick finds the items that ids name; each id must name exactly one.
func (ic *importCtx) pick(kind string, items []importItem, ids []string) (picked []importItem, problems []string) {
	for _, id := range ids {
		var hit []importItem
		for _, it := range items {
			if slices.Contains(it.ids, id) {
				hit = append(hit, it)
			}
		}
		switch len(hit) {
		case 0:
			problems = append(problems, fmt.Sprintf("%s/%s: not found%s", kind, id, idHint(items)))
		case 1:
			if !ic.explicit[hit[0].r] {
				picked = append(picked, hit[0])
			}
			ic.explicit[hit[0].r] = true
		default:
			var which []string
			for _, it := range hit {
				which = append(which, kind+"/"+it.ids[0])
			}
			problems = append(problems, fmt.Sprintf("%s/%s: matches %d objects: name one of %s", kind, id, len(hit), strings.Join(which, ", ")))
		}
	}
	return picked, problems
}

// forbidden reports whether PVE refused a read for want of privileges.
func forbidden(err error) bool {
	var ae *pve.APIError
	return errors.As(err, &ae) && ae.Status == http.StatusForbidden
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func idHint(items []importItem) string {
	if len(items) == 0 {
		return " (there are none the token can see)"
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ids[0])
	}
	slices.Sort(ids)
	if len(ids) > 8 {
		ids = append(ids[:8], "…")
	}
	return " (there are: " + strings.Join(ids, ", ") + ")"
}

// selectRefs groups "Kind/id" selections by kind.
func selectRefs(refs []string) (map[string][]string, []string) {
	out := map[string][]string{}
	var problems []string
	for _, ref := range refs {
		kind, id, ok := strings.Cut(ref, "/")
		if !ok || id == "" {
			problems = append(problems, fmt.Sprintf("%q: write Kind/id (QemuVM/100, LinuxBridge/pve/vmbr1, Pool/lab)", ref))
			continue
		}
		k, known := kinds[kind]
		if !known {
			problems = append(problems, fmt.Sprintf("%q: unknown kind %s (kinds: %s)", ref, kind, strings.Join(slices.Sorted(maps.Keys(kinds)), ", ")))
			continue
		}
		if _, ok := importerOf(k); !ok {
			why := "not supported"
			if ir, ok := k.(importRefuser); ok {
				why = ir.notImported()
			}
			problems = append(problems, fmt.Sprintf("%q: %s is not imported: %s", ref, kind, why))
			continue
		}
		if !slices.Contains(out[kind], id) {
			out[kind] = append(out[kind], id)
		}
	}
	return out, problems
}

// importKind observes the picked objects with their kind's observe, as a
// plan would, runs their reads a few at a time (loadAll), and asks the
// kind for their documents, in order.
func importKind(ctx context.Context, ic *importCtx, k kindOps, im importer, picked []importItem) ([]*ImportedDoc, []error) {
	var errs []error
	objs := map[string]*liveObj{}
	keys := make([]string, len(picked))
	// later counts the items still to come at each address (one pass,
	// not a scan of the rest for every item).
	later := map[string]int{}
	for _, it := range picked {
		later[it.r.Address()]++
	}
	for i, it := range picked {
		r := it.r
		// Two guests of one name have one address: the id tells them apart.
		addr := r.Address()
		later[addr]--
		keys[i] = addr
		if _, dup := objs[addr]; dup || later[addr] > 0 {
			keys[i] = fmt.Sprintf("%s (%s)", addr, it.ids[0])
		}
		if p, ok := k.(permissioned); ok {
			if err := ic.lc.checkPerms(r.Address(), p.readPerms(r)); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		lo, err := k.observe(ctx, ic.lc, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", keys[i], err))
			continue
		}
		objs[keys[i]] = lo
	}
	loadErrs := loadAll(ctx, objs, ic.lc.readConc)
	var docs []*ImportedDoc
	for i, it := range picked {
		lo := objs[keys[i]]
		switch {
		case lo == nil:
			continue
		case loadErrs[keys[i]] != nil:
			errs = append(errs, loadErrs[keys[i]])
			continue
		case !lo.Exists:
			errs = append(errs, fmt.Errorf("%s: not found", keys[i]))
			continue
		}
		d, err := im.importDoc(ic, it.r, lo)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", keys[i], err))
			continue
		}
		if d != nil {
			docs = append(docs, d)
			// Later documents of the kind see the names taken.
			ic.docs[d.Address()] = d
		}
	}
	return docs, errs
}

// order sorts the documents so that each comes after what it depends
// on (the graph Load builds from them), by address otherwise.
func (res *ImportResult) order(table *schema.Table) error {
	set, err := res.load(table)
	if err != nil {
		return fmt.Errorf("internal error: the imported documents do not load: %w", err)
	}
	rank := map[string]int{}
	for i, addr := range set.Graph.Order() {
		rank[addr] = i
	}
	slices.SortStableFunc(res.Docs, func(a, b *ImportedDoc) int { return rank[a.Address()] - rank[b.Address()] })
	return nil
}

// load reads the documents back as specs, the placeholders resolved to
// the live values they stand for.
func (res *ImportResult) load(table *schema.Table) (*spec.Set, error) {
	var buf bytes.Buffer
	if err := res.Encode(&buf); err != nil {
		return nil, err
	}
	vals := map[string]string{}
	for _, d := range res.Docs {
		maps.Copy(vals, d.secrets)
	}
	getenv := func(name string) (string, bool) {
		v, ok := vals[name]
		return v, ok
	}
	return spec.Load([]string{spec.StdinPath}, spec.LoadOptions{Getenv: getenv, Schema: table, Stdin: &buf})
}

// CheckImport plans the documents against the live state and returns an
// *ImportError naming each one whose plan is not clean: what import
// writes must describe the objects as they are.
func CheckImport(ctx context.Context, clients Clients, res *ImportResult, opts Options) error {
	if len(res.Docs) == 0 {
		return nil
	}
	table := opts.Schema
	if table == nil {
		table = schema.Default()
	}
	set, err := res.load(table)
	if err != nil {
		return fmt.Errorf("internal error: the imported documents do not load: %w", err)
	}
	p, err := PlanLive(ctx, clients, set, opts)
	if err != nil {
		return fmt.Errorf("plan the imported documents: %w", err)
	}
	var problems []string
	for _, c := range p.Changes {
		if c.Action == NoOp {
			continue
		}
		// One line per change: a reason's first line (a staged network
		// diff follows it), and the keys that differ.
		var why []string
		for _, r := range c.Reasons {
			line, _, _ := strings.Cut(r, "\n")
			why = append(why, strings.TrimSuffix(strings.TrimSpace(line), ":"))
		}
		var paths []string
		for _, d := range c.Diff {
			paths = append(paths, d.Path)
		}
		msg := fmt.Sprintf("%s: the imported document does not plan clean: %s", c.Address, c.Action)
		if len(why) > 0 {
			msg += ": " + strings.Join(why, "; ")
		}
		if len(paths) > 0 {
			msg += " (" + strings.Join(paths, ", ") + ")"
		}
		problems = append(problems, msg)
	}
	if len(problems) > 0 {
		return &ImportError{Problems: problems}
	}
	return nil
}

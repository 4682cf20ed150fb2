package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/planner/importdoc"
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
type Importer interface {
	// importable lists the kind's live objects on lc (only node's, for a
	// node-bound kind, when node is not ""), each as a resource with its
	// identity set, ready for observe.
	Importable(ctx context.Context, ic *ImportCtx, node string) ([]ImportItem, error)
	// importDoc writes the document of r's object, which observe read
	// into lo; nil skips it (ic.warn says why).
	ImportDoc(ic *ImportCtx, r *spec.Resource, lo *LiveObj) (*ImportedDoc, error)
}

// importAuditor kinds say which privileges listing them truthfully needs:
// PVE's lists hide what a token may not audit, so an import without them
// would be silently incomplete.
type importAuditor interface {
	ImportPerms(node string) []PermNeed
}

// importRefuser kinds are not imported, for the reason notImported gives
// (the contract test asks a kind for an importer or this refusal).
type ImportRefuser interface {
	NotImported() string
}

// importerOf is k's importer; a kind that refuses import has none.
func importerOf(k KindOps) (Importer, bool) {
	if _, refused := k.(ImportRefuser); refused {
		return nil, false
	}
	im, ok := k.(Importer)
	return im, ok
}

// ImportableKinds lists the kinds Import can write, sorted.
func ImportableKinds() []string {
	var out []string
	for _, kind := range slices.Sorted(maps.Keys(Kinds)) {
		if _, ok := importerOf(Kinds[kind]); ok {
			out = append(out, kind)
		}
	}
	return out
}

// importItem is one live object a kind can import.
type ImportItem struct {
	R *spec.Resource
	// ids are what a user may write after "Kind/" to select it ("100",
	// "app-vm-1"; "pve/vmbr1", "vmbr1").
	Ids []string
	// lo, when set, is the object as the listing observed it (its reads
	// deferred, as observe's): the engine does not observe it again.
	Lo *LiveObj
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
	// (a VM's vmgenid and SMBIOS UUID, a container's ostype).
	WithGenerated bool
	// ManageInfrastructure imports the node's own infrastructure (the
	// bridge with its address, the installer's storages, templates
	// pvectl did not bake) as managed documents; without it they are
	// managed: false, so a destroy of the documents never removes them.
	ManageInfrastructure bool
	// WithPowerState writes a guest's power state (running: true|false);
	// without it an imported guest's power is left alone.
	WithPowerState bool
	// Schema holds the PVE parameter facts; nil means schema.Default().
	Schema *schema.Table
	// ReadConcurrency caps the reads in flight (0: DefaultReadConcurrency).
	ReadConcurrency int
}

// ImportResult is what Import read.
type ImportResult struct {
	// Docs plan clean against the live state, in dependency order.
	Docs []*ImportedDoc
	// Rejected are documents that do not plan clean (Problem says why):
	// Encode writes them commented out.
	Rejected []*ImportedDoc
	// Problems name, one line each, the objects that are not written as
	// documents (Rejected, or not read at all) and why.
	Problems []string
	// Warnings say what was left out and why.
	Warnings []string

	// live is what observe read of each document's object (Adopt writes
	// the owner mark with its digest).
	Live map[*ImportedDoc]*LiveObj
}

// Vars are the environment variables every placeholder of the import
// names, sorted.
func (res *ImportResult) Vars() []string {
	var out []string
	for _, d := range res.Docs {
		out = append(out, d.Vars()...)
	}
	return compare.SortedUnique(out)
}

// importCtx is what a kind's importer gets.
type ImportCtx struct {
	importdoc.Writer
	Lc                   *LiveConn
	Table                *schema.Table
	WithGenerated        bool
	ManageInfrastructure bool
	WithPowerState       bool
	warnings             []string
	// failures are the objects that could not be read, one line each.
	failures []string
	// live is what observe read of each document's object: the check
	// plans the document against it instead of reading it again.
	live map[*ImportedDoc]*LiveObj
	// docs are the documents made so far, by address: kinds imported
	// after others (a node's network commit) look at them.
	Docs map[string]*ImportedDoc
	// explicit are the resources a Kind/id selection named.
	explicit map[*spec.Resource]bool
	// stagedWarned are the nodes whose staged network was warned about.
	StagedWarned []string
}

// Named reports whether r was selected by a Kind/id (not by --all).
func (ic *ImportCtx) Named(r *spec.Resource) bool { return ic.explicit[r] }

func (ic *ImportCtx) Warn(format string, args ...any) {
	ic.warnings = append(ic.warnings, fmt.Sprintf(format, args...))
}

// Method finds a create method's schema facts (nil when unknown).
func (ic *ImportCtx) Method(httpMethod, template string) *schema.Method {
	m, ok := ic.Table.Lookup(httpMethod, template)
	if !ok {
		return nil
	}
	return m
}

// ImportError is an import that cannot be made at all: the selection
// names what does not exist (or what the token may not read). One object
// that cannot be read or does not plan clean is not one: it is in
// ImportResult.Problems.
type ImportError struct {
	Problems []string
	// Invalid: the selection itself is wrong (found before any API call).
	Invalid bool
}

func (e *ImportError) Error() string { return strings.Join(e.Problems, "\n") }

// kindPick is one kind's objects an import writes, observed.
type kindPick struct {
	kind    string
	im      Importer
	items   []ImportItem
	keys    []string // the items' keys in objs
	lacking bool     // the token may not audit all of the kind
}

// importAll is Import (api.go).
func importAll(ctx context.Context, clients Clients, opts ImportOptions) (*ImportResult, error) {
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
	if opts.Node != "" && !lc.HasNode(opts.Node) {
		return nil, fmt.Errorf("node %q is not in the cluster (nodes: %s)", opts.Node, strings.Join(lc.Nodes, ", "))
	}
	ic := &ImportCtx{Lc: lc, Table: table, WithGenerated: opts.WithGenerated, ManageInfrastructure: opts.ManageInfrastructure,
		WithPowerState: opts.WithPowerState, Docs: map[string]*ImportedDoc{}, explicit: map[*spec.Resource]bool{},
		live: map[*ImportedDoc]*LiveObj{}}

	// Kinds that commit others' changes come last: they look at what was
	// imported before them.
	order := slices.Sorted(maps.Keys(Kinds))
	slices.SortStableFunc(order, func(a, b string) int {
		return boolInt(TraitsOf(a).Commits != "") - boolInt(TraitsOf(b).Commits != "")
	})
	order = slices.DeleteFunc(order, func(kind string) bool {
		_, ok := importerOf(Kinds[kind])
		return !ok || (!opts.All && len(sel[kind]) == 0)
	})
	ic.prefetch(ctx, order, opts.Node)
	objs := map[string]*LiveObj{}
	var picks []*kindPick
	for _, kind := range order {
		kp, errs := ic.pickKind(ctx, kind, sel[kind], opts.Node, objs)
		problems = append(problems, errs...)
		if kp != nil {
			picks = append(picks, kp)
		}
	}
	if len(problems) > 0 {
		return nil, &ImportError{Problems: problems}
	}
	loadErrs := LoadAll(ctx, objs, ic.Lc.ReadConc)
	for _, kp := range picks {
		ic.importKind(kp, objs, loadErrs)
	}
	res := &ImportResult{Warnings: ic.warnings, Problems: ic.failures, Live: ic.live}
	for _, addr := range slices.Sorted(maps.Keys(ic.Docs)) {
		d := ic.Docs[addr]
		// Only edges to documents of this import.
		d.DependsOn = slices.DeleteFunc(compare.SortedUnique(d.DependsOn), func(a string) bool { return ic.Docs[a] == nil || a == addr })
		res.Docs = append(res.Docs, d)
	}
	if err := ic.check(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// pickKind lists kind's objects, picks those ids name (all of them with
// no ids), checks that the token may read them and observes them into
// objs, whose reads Import then runs all together. It returns the
// selection's problems; an object that cannot be observed is a failure
// of its own (ic.failures).
func (ic *ImportCtx) pickKind(ctx context.Context, kind string, ids []string, node string, objs map[string]*LiveObj) (*kindPick, []string) {
	k := Kinds[kind]
	im, _ := importerOf(k)
	kp := &kindPick{kind: kind, im: im}
	// With --all, a kind the token may not audit is imported as far as
	// PVE shows it, after a warning; what PVE refuses outright is left
	// out (the warning said why).
	if ia, ok := k.(importAuditor); ok {
		if err := ic.Lc.checkPerms(kind, ia.ImportPerms(node)); err != nil {
			msg := fmt.Sprintf("%v; what the token may not audit is not imported", err)
			if len(ids) > 0 {
				return nil, []string{msg}
			}
			kp.lacking = true
			ic.Warn("%s", msg)
		}
	}
	if len(ids) > 0 {
		node = "" // a named object is found wherever it is
	}
	items, err := im.Importable(ctx, ic, node)
	if err != nil {
		if kp.lacking && forbidden(err) {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("%s: %v", kind, err)}
	}
	var problems []string
	if len(ids) > 0 {
		items, problems = ic.pick(kind, items, ids)
	}
	kp.items = items
	kp.keys = itemKeys(items)
	for i, it := range items {
		if lo, err := ic.Observe(ctx, k, it); err != nil {
			ic.fail(kp, err)
		} else {
			objs[kp.keys[i]] = lo
		}
	}
	return kp, problems
}

// Observe reads one object as a plan would, unless its listing did.
func (ic *ImportCtx) Observe(ctx context.Context, k KindOps, it ImportItem) (*LiveObj, error) {
	r := it.R
	if needs, ok := ReadNeeds(k, r); ok {
		needs = rewriteNeeds(nil, ic.Lc, r.Connection, needs)
		if err := ic.Lc.checkPerms(r.Address(), needs); err != nil {
			return nil, &notAudited{err}
		}
	}
	if it.Lo != nil {
		return it.Lo, nil
	}
	lo, err := k.Observe(ctx, ic.Lc, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Address(), err)
	}
	return lo, nil
}

// fail records an object that could not be read, unless the token may
// not audit its kind and PVE said so (the warning said it already).
func (ic *ImportCtx) fail(kp *kindPick, err error) {
	if !kp.lacking || !forbidden(err) {
		ic.failures = append(ic.failures, err.Error())
	}
}

// itemKeys are the items' addresses, unique: objects of one address
// (two guests of one name, one file on two nodes' storages) are told
// apart by the first of their ids that does.
func itemKeys(items []ImportItem) []string {
	count := map[string]int{}
	for _, it := range items {
		count[it.R.Address()]++
	}
	keys := make([]string, len(items))
	used := map[string]bool{}
	for i, it := range items {
		addr := it.R.Address()
		key := addr
		for j := 0; count[addr] > 1 && (key == addr || used[key]); j++ {
			if j < len(it.Ids) {
				key = fmt.Sprintf("%s (%s)", addr, it.Ids[j])
			} else {
				key = fmt.Sprintf("%s (#%d)", addr, i)
			}
		}
		used[key] = true
		keys[i] = key
	}
	return keys
}

// pick finds the items that ids name; each id must name exactly one.
func (ic *ImportCtx) pick(kind string, items []ImportItem, ids []string) (picked []ImportItem, problems []string) {
	for _, id := range ids {
		var hit []ImportItem
		for _, it := range items {
			if slices.Contains(it.Ids, id) {
				hit = append(hit, it)
			}
		}
		switch len(hit) {
		case 0:
			problems = append(problems, fmt.Sprintf("%s/%s: not found%s", kind, id, idHint(items)))
		case 1:
			if !ic.explicit[hit[0].R] {
				picked = append(picked, hit[0])
			}
			ic.explicit[hit[0].R] = true
		default:
			var which []string
			for _, it := range hit {
				which = append(which, kind+"/"+it.Ids[0])
			}
			problems = append(problems, fmt.Sprintf("%s/%s: matches %d objects: name one of %s", kind, id, len(hit), strings.Join(which, ", ")))
		}
	}
	return picked, problems
}

// forbidden reports whether PVE refused a read for want of privileges.
func forbidden(err error) bool {
	var ae *pve.APIError
	var na *notAudited
	return errors.As(err, &na) || errors.As(err, &ae) && ae.Status == http.StatusForbidden
}

// notAudited is a read the permission preflight refuses: what PVE would
// answer with a 403, found before asking.
type notAudited struct{ err error }

func (e *notAudited) Error() string { return e.err.Error() }
func (e *notAudited) Unwrap() error { return e.err }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func idHint(items []ImportItem) string {
	if len(items) == 0 {
		return " (there are none the token can see)"
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.Ids[0])
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
		k, known := Kinds[kind]
		if !known {
			problems = append(problems, fmt.Sprintf("%q: unknown kind %s (kinds: %s)", ref, kind, strings.Join(slices.Sorted(maps.Keys(Kinds)), ", ")))
			continue
		}
		if _, ok := importerOf(k); !ok {
			why := "not supported"
			if ir, ok := k.(ImportRefuser); ok {
				why = ir.NotImported()
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

// importKind asks the kind for the documents of its objects that were
// read, in order.
func (ic *ImportCtx) importKind(kp *kindPick, objs map[string]*LiveObj, loadErrs map[string]error) {
	for i, it := range kp.items {
		key := kp.keys[i]
		lo := objs[key]
		switch {
		case lo == nil:
			continue // ic.fail said why
		case loadErrs[key] != nil:
			ic.fail(kp, loadErrs[key])
			continue
		case !lo.Exists:
			ic.fail(kp, fmt.Errorf("%s: not found", key))
			continue
		}
		d, err := kp.im.ImportDoc(ic, it.R, lo)
		if err != nil {
			ic.fail(kp, fmt.Errorf("%s: %w", key, err))
			continue
		}
		if d != nil {
			ic.live[d] = lo
			// Later documents of the kind see the names taken.
			ic.Docs[d.Address()] = d
		}
	}
}

// order sorts the documents so that each comes after what it depends
// on (the graph of set, Load's of them), by address otherwise.
func (res *ImportResult) order(set *spec.Set) {
	rank := map[string]int{}
	for i, addr := range set.Order() {
		rank[addr] = i
	}
	slices.SortStableFunc(res.Docs, func(a, b *ImportedDoc) int { return rank[a.Address()] - rank[b.Address()] })
}

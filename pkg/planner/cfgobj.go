package planner

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// cfgKind manages an object of one of PVE's cluster-wide configuration
// files that the API serves as a list plus create, read, update and
// delete by id (roles, groups, realms, metric servers, realm-sync jobs).
// What differs between them is data in the value, not code: one value per
// kind (role.go, group.go, realm.go, metricserver.go, realmsync.go).
type cfgKind struct {
	kind    string // the spec kind
	noun    string // "role", in messages
	idParam string // the identity parameter ("roleid")
	// listPath is the GET that lists every object, listID the member of a
	// row that holds the id.
	listPath, listID string
	// itemPath is an object's path (GET, PUT, DELETE; POST too with
	// createOnItem).
	itemPath     string // template, "{id}" stands for the id
	createPath   string // the POST that creates, as the schema names it
	createOnItem bool   // the id is in the POST's path, not a parameter
	// readItem: the list does not carry every option (realms, metric
	// servers): each object is read (GET item; a realm's answer carries
	// the file's digest, which its update sends back, a metric server's
	// none).
	readItem bool
	// dropped are members of PVE's answers that are not settings.
	dropped []string
	// sets are list-valued settings compared as sets (a role's privs).
	sets []string
	// fixed settings cannot change in place: the object is replaced.
	fixed []string
	// secrets are write-only settings PVE never answers: sent at create,
	// and again only under secretUpdate: always.
	secrets []string
	// noDelete kinds have no delete parameter: a setting is cleared by
	// sending it empty (groups).
	noDelete bool
	// always are settings every update carries (the schema requires them
	// in a PUT, or PVE refuses an update that only deletes), with
	// alwaysDefault's value when neither the spec nor PVE has one.
	always        []string
	alwaysDefault map[string]string
	// isBuiltin says which listed objects PVE has built in: not imported.
	isBuiltin func(row *pve.Config) bool
	// importSecret names the secret an object's document gets as a
	// ${VAR} placeholder ("" for none), from its settings.
	importSecret func(cfg *pve.Config) string
	// listNeeds are the checks of the list's handler when its rule is
	// open to all (a list that shows only what the caller may see); the
	// calls' rules come from the apidoc (permcalls.go).
	listNeeds func(id string) []engine.PermNeed
}

func (k *cfgKind) id(r *spec.Resource) string {
	if id := r.Params.Get(k.idParam); id != "" {
		return id
	}
	return r.Name
}

func (k *cfgKind) path(id string) string {
	return strings.ReplaceAll(k.itemPath, "{id}", url.PathEscape(id))
}

// list reads the kind's list once per connection.
func (k *cfgKind) list(ctx context.Context, lc *engine.LiveConn) ([]*pve.Config, error) {
	if rows, ok := lc.CfgLists[k.listPath]; ok {
		return rows, nil
	}
	rows, err := k.readList(ctx, lc.Client)
	if err != nil {
		return nil, err
	}
	if lc.CfgLists == nil {
		lc.CfgLists = map[string][]*pve.Config{}
	}
	lc.CfgLists[k.listPath] = rows
	return rows, nil
}

func (k *cfgKind) readList(ctx context.Context, cl *pve.Client) ([]*pve.Config, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, k.listPath, nil, &rows); err != nil {
		return nil, fmt.Errorf("list %ss: %w", k.noun, err)
	}
	return rows, nil
}

// settings is a PVE answer as the object's settings: what is not a
// setting dropped, sets sorted.
func (k *cfgKind) settings(row *pve.Config) *pve.Config {
	cfg := pve.NewConfig(0)
	for key, v := range row.All() {
		if key == k.listID || key == k.idParam || key == "digest" || slices.Contains(k.dropped, key) {
			continue
		}
		if slices.Contains(k.sets, key) {
			v = strings.Join(compare.SplitSet(v), ",")
		}
		cfg.Set(key, v)
	}
	return cfg
}

// find is the object with id among rows, without reading it.
func (k *cfgKind) find(rows []*pve.Config, id string) *engine.LiveObj {
	for _, row := range rows {
		if row.Get(k.listID) == id {
			cfg := k.settings(row)
			return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}
		}
	}
	return &engine.LiveObj{}
}

// readOne reads one object (GET item): its settings and the file's digest.
func (k *cfgKind) readOne(ctx context.Context, cl *pve.Client, id string) (*engine.LiveObj, error) {
	var cfg *pve.Config
	if err := cl.Do(ctx, http.MethodGet, k.path(id), nil, &cfg); err != nil {
		if pve.IsNotFound(err) {
			return &engine.LiveObj{}, nil
		}
		return nil, fmt.Errorf("read %s %s: %w", k.noun, id, err)
	}
	set := k.settings(cfg)
	return &engine.LiveObj{Exists: true, Config: set, Digest: cfg.Get("digest")}, nil
}

func (k *cfgKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	rows, err := k.list(ctx, lc)
	if err != nil {
		return nil, err
	}
	lo := k.find(rows, k.id(r))
	if lo.Exists && k.readItem {
		cl, id := lc.Client, k.id(r)
		lo.Load = func(ctx context.Context) error {
			got, err := k.readOne(ctx, cl, id)
			if err == nil {
				*lo = *got
			}
			return err
		}
	}
	return lo, nil
}

func (k *cfgKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	id := k.id(c.Resource)
	if k.readItem {
		return k.readOne(ctx, cl, id)
	}
	rows, err := k.readList(ctx, cl)
	if err != nil {
		return nil, err
	}
	return k.find(rows, id), nil
}

// skipped are the desired keys compare leaves alone: the identity, and
// the secrets unless the spec wants them sent on every apply.
func (k *cfgKind) skipped(r *spec.Resource) map[string]bool {
	skip := map[string]bool{k.idParam: true, "id": true}
	if spec.Secrets(r).SecretUpdate != spec.SecretAlways {
		for _, s := range k.secrets {
			skip[s] = true
		}
	}
	return skip
}

func (k *cfgKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	cmp := compare.Comparer{M: b.Method("POST", k.createPath)}
	skip := k.skipped(r)
	var diffs []engine.FieldDiff
	for _, d := range cmp.DiffParams(r.Params.Map(), r.Remove, lo.Config, skip) {
		if slices.Contains(k.sets, d.Path) && d.Before != nil && d.After != nil && compare.EqualSet(fmt.Sprint(d.Before), fmt.Sprint(d.After)) {
			continue
		}
		diffs = append(diffs, d)
	}
	for _, s := range k.secrets {
		if _, want := r.Params.Lookup(s); want && !skip[s] {
			diffs = append(diffs, compare.Diff(s, "", r.Params.Get(s)))
		}
	}
	c.Diff = diffs
	if len(diffs) == 0 {
		c.Action = engine.NoOp
		return nil
	}
	c.Reasons = compare.Reasons(diffs)
	for _, s := range k.secrets {
		if _, want := r.Params.Lookup(s); want && !skip[s] {
			c.Reasons = append(c.Reasons, s+" is sent again (secretUpdate: always): PVE never shows it, so it cannot be compared")
		}
	}
	var changed []string
	for _, d := range diffs {
		if f := compare.TopKey(d.Path); slices.Contains(k.fixed, f) && !slices.Contains(changed, f) {
			changed = append(changed, f)
		}
	}
	if len(changed) > 0 {
		return b.Replace(r, c, fmt.Sprintf("PVE cannot change a %s's %s once it exists: the replace deletes it and creates it again",
			k.noun, strings.Join(changed, ", ")))
	}
	c.Action = engine.Update
	c.Params = k.updateParams(cmp, diffs, r, lo.Config)
	return nil
}

// updateParams is what the PUT carries: the changed settings, deleted ones
// in delete (or sent empty where the kind has no delete), and what every
// update must carry.
func (k *cfgKind) updateParams(cmp compare.Comparer, diffs []engine.FieldDiff, r *spec.Resource, live *pve.Config) map[string]string {
	out := cmp.UpdateParams(diffs, r.Params.Map(), live, nil)
	if del, ok := out["delete"]; ok && k.noDelete {
		delete(out, "delete")
		for _, key := range strings.Split(del, ",") {
			out[key] = ""
		}
	}
	for _, key := range k.always {
		if _, set := out[key]; !set {
			if v, ok := r.Params.Lookup(key); ok {
				out[key] = v
			} else if v, ok := live.Lookup(key); ok {
				out[key] = v
			} else if v, ok := k.alwaysDefault[key]; ok {
				out[key] = v
			}
		}
	}
	return out
}

func (k *cfgKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := k.id(c.Resource)
	params := toValues(c.Resource.Params.Map())
	path := k.createPath
	if k.createOnItem {
		params.Del(k.idParam)
		path = k.path(id)
	} else {
		params.Set(k.idParam, id)
	}
	if err := x.Client.Do(ctx, http.MethodPost, path, params, nil); err != nil {
		return fmt.Errorf("create %s %s: %w", k.noun, id, err)
	}
	return nil
}

func (k *cfgKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := k.id(c.Resource)
	params := toValues(c.Params)
	if k.readItem && c.Digest != "" {
		params.Set("digest", c.Digest)
	}
	if err := x.Client.Do(ctx, http.MethodPut, k.path(id), params, nil); err != nil {
		return fmt.Errorf("update %s %s: %w", k.noun, id, err)
	}
	return nil
}

func (k *cfgKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := k.id(c.Resource)
	if err := x.Client.Do(ctx, http.MethodDelete, k.path(id), nil, nil); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", k.noun, id, err)
	}
	return nil
}

// tmpl is the apidoc's template of a path of the kind ("{id}" named as
// the identity parameter).
func (k *cfgKind) tmpl(path string) string {
	return strings.ReplaceAll(path, "{id}", "{"+k.idParam+"}")
}

// ReadCalls: the list, with what its handler filters by, and each object
// when the list does not carry every option.
func (k *cfgKind) ReadCalls(r *spec.Resource) []engine.APICall {
	id := k.id(r)
	list := engine.Call("GET", k.listPath, "to see the "+k.noun+"s")
	if k.listNeeds != nil {
		list = list.With(k.listNeeds(id)...)
	}
	calls := []engine.APICall{list}
	if k.readItem {
		calls = append(calls, engine.Call("GET", k.tmpl(k.itemPath), "to read the "+k.noun+"'s settings", k.idParam, id))
	}
	return calls
}

// ChangeCalls: POST, PUT and DELETE as create, update and remove make
// them, with the resource's parameters (a rule may read one: a realm sync
// job's realm).
func (k *cfgKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	id := k.id(c.Resource)
	why := "to " + c.Action.String() + " " + k.noun + " " + id
	// The parameters each call sends: a create the resource's, an update
	// what changed (a realm sync job's realm is not among them, so PVE
	// checks its rule on /access/realm/-).
	mk := func(method, path string, sent map[string]string) engine.APICall {
		a := engine.Call(method, k.tmpl(path), why, k.idParam, id)
		for key, v := range sent {
			if _, ok := a.Params[key]; !ok {
				a.Params[key] = v
			}
		}
		return a
	}
	create := mk("POST", k.createPath, c.Resource.Params.Map())
	del := mk("DELETE", k.itemPath, nil)
	switch c.Action {
	case engine.Create:
		return []engine.APICall{create}
	case engine.Update:
		return []engine.APICall{mk("PUT", k.itemPath, c.Params)}
	case engine.Delete:
		return []engine.APICall{del}
	case engine.Replace:
		return []engine.APICall{del, create}
	}
	return nil
}

// Traits: a cluster-wide object of a section config.
func (*cfgKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// sectionKind manages one entry of a cluster-wide section config that
// PVE lists in one call, creates with a POST, changes with a PUT on the
// entry (changed keys, delete for removed ones) and removes with a
// DELETE on it: HA resources and rules, backup jobs, replication jobs
// (jobkinds.go has each kind's facts). One list per connection is read
// for all the kind's resources.
type sectionKind struct {
	kind     string
	noun     string
	list     string // GET path that lists every entry; also the POST path
	item     string // path of one entry, with %s for its escaped id
	idKey    string // the entry's id in a list row ("sid", "rule", "id")
	newIDKey string // the POST parameter naming the id ("" when id is filled by newID)
	// id is r's entry id from its (resolved) params; "" when not known.
	id func(p map[string]string) string
	// match finds r's row; nil: the row whose idKey is id.
	match func(row *pve.Config, p map[string]string) bool
	// skip are live keys compare leaves alone (ids, types, PVE's own).
	skip []string
	// notSent are params of the spec the create call does not take (a
	// replication job's guest: its id names it).
	notSent []string
	// fixed are keys PVE never changes on an entry: a change replaces.
	fixed []string
	// updateKeys are keys every update must send with the live value
	// (an HA rule's type: the PUT requires it).
	updateKeys []string
	// objects are keys PVE gives as JSON objects that the create call
	// takes as property strings (a backup job's prune-backups).
	objects []string
	// newID picks the id of an entry to create (a replication job's
	// <vmid>-<n>), from the live rows; nil: the id is r's.
	newID func(rows []*pve.Config, p map[string]string) string
	// check finds what PVE would refuse for r at plan time (a rule's
	// nodes that do not exist), from the live state.
	check func(ctx context.Context, lc *engine.LiveConn, p map[string]string, row *pve.Config) error
	// note says what else a create or a change does, for the plan (an
	// HA resource's state moves its guest's power); live is nil for a
	// create.
	note func(p map[string]string, live *pve.Config) []string
	// importKeys are the keys of a live row an imported document keeps
	// whatever skip says (a replication job's target).
	importKeys []string
	// listNeeds are the checks of the list's handler when its rule is
	// open to all (a list that shows only what the caller may audit);
	// changeNeeds those of the create, update and delete handlers beyond
	// their rules. The rules themselves come from the apidoc
	// (permcalls.go).
	listNeeds   func(p map[string]string) []engine.PermNeed
	changeNeeds func(c *engine.Change, p map[string]string, live *pve.Config) []engine.PermNeed
}

// sectionLive is what observe read beside the row: r's params with the
// guests' vmids put in (output references resolved).
type sectionLive struct {
	Params map[string]string `json:"params"`
}

// fixedChanged are the keys of fixed (those PVE cannot change in place)
// that diffs change, each once, in diff order.
func fixedChanged(diffs []engine.FieldDiff, fixed []string) []string {
	var changed []string
	for _, d := range diffs {
		if key := compare.TopKey(d.Path); slices.Contains(fixed, key) && !slices.Contains(changed, key) {
			changed = append(changed, key)
		}
	}
	return changed
}

// find is r's live entry among rows, as the create call's parameters
// would write it.
func (k *sectionKind) find(rows []*pve.Config, p map[string]string) *engine.LiveObj {
	id := k.id(p)
	for _, row := range rows {
		hit := row.Get(k.idKey) == id && id != ""
		if k.match != nil {
			hit = k.match(row, p)
		}
		if !hit {
			continue
		}
		cfg := row.Clone()
		cfg.Delete("digest")
		for _, key := range k.objects {
			if v, ok := cfg.Lookup(key); ok {
				cfg.Set(key, objectToPropertyString(v))
			}
		}
		return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}
	}
	return &engine.LiveObj{}
}

// objectToPropertyString turns a JSON object PVE answers for a property
// string ({"keep-last":3}) back into the string ("keep-last=3").
func objectToPropertyString(v string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(v), &obj); err != nil {
		return v
	}
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		parts = append(parts, fmt.Sprintf("%s=%v", key, obj[key]))
	}
	return strings.Join(parts, ",")
}

func (k *sectionKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	p, known, err := resolveGuests(lc, ctx, r.Params.Map())
	if err != nil {
		return nil, err
	}
	if !known {
		// It names a guest not made yet: the entry cannot exist.
		return &engine.LiveObj{State: &sectionLive{Params: p}}, nil
	}
	rows, err := lc.SectionRows(ctx, k.list)
	if err != nil {
		return nil, err
	}
	lo := k.find(rows, p)
	lo.State = &sectionLive{Params: p}
	if k.check != nil && r.State == spec.Present {
		var row *pve.Config
		if lo.Exists {
			row = lo.Config
		}
		if err := k.check(ctx, lc, p, row); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Address(), err)
		}
	}
	return lo, nil
}

// params are r's params as observe resolved them.
func sectionParams(r *spec.Resource, lo *engine.LiveObj) map[string]string {
	if sl, ok := lo.State.(*sectionLive); ok && sl != nil {
		return sl.Params
	}
	return r.Params.Map()
}

func (k *sectionKind) skipSet() map[string]bool {
	out := map[string]bool{k.idKey: true, "digest": true}
	for _, key := range k.skip {
		out[key] = true
	}
	return out
}

func (k *sectionKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	p := sectionParams(r, lo)
	cmp := compare.Comparer{M: b.Method("POST", k.list)}
	c.Diff = cmp.DiffParams(p, r.Remove, lo.Config, k.skipSet())
	if len(c.Diff) == 0 {
		c.Action = engine.NoOp
		return nil
	}
	c.Reasons = compare.Reasons(c.Diff)
	if changed := fixedChanged(c.Diff, k.fixed); len(changed) > 0 {
		return b.Replace(r, c, fmt.Sprintf("PVE cannot change a %s's %s: the replace deletes it and creates it anew", k.noun, strings.Join(changed, ", ")))
	}
	c.Action = engine.Update
	if k.note != nil {
		c.Reasons = append(c.Reasons, k.note(p, lo.Config)...)
	}
	c.Params = cmp.UpdateParams(c.Diff, p, lo.Config, nil)
	for _, key := range k.updateKeys {
		c.Params[key] = lo.Config.Get(key)
	}
	c.Params[k.idKey] = lo.Config.Get(k.idKey)
	return nil
}

// CheckCreate adds what the create does besides (note).
func (k *sectionKind) CheckCreate(_ *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if k.note != nil {
		c.Reasons = append(c.Reasons, k.note(sectionParams(r, lo), nil)...)
	}
	return nil
}

// liveID is the id of c's live entry: the one compare read, else r's.
func (k *sectionKind) liveID(ctx context.Context, cl *pve.Client, c *engine.Change) (string, error) {
	if id := c.Params[k.idKey]; id != "" {
		return id, nil
	}
	p, known, err := resolveGuestsLive(ctx, cl, c.Resource.Params.Map())
	if err != nil || !known {
		return "", err
	}
	rows, err := engine.ReadSection(ctx, cl, k.list)
	if err != nil {
		return "", err
	}
	lo := k.find(rows, p)
	if !lo.Exists {
		return "", nil
	}
	return lo.Config.Get(k.idKey), nil
}

func (k *sectionKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	p, known, err := resolveGuestsLive(ctx, x.Client, c.Resource.Params.Map())
	if err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("create %s: a guest it names does not exist (yet): %s", k.noun, unresolvedRefs(c.Resource.Params.Map()))
	}
	params := toValues(p)
	for _, key := range k.notSent {
		params.Del(key)
	}
	if k.newID != nil && k.newIDKey != "" && params.Get(k.newIDKey) == "" {
		rows, err := engine.ReadSection(ctx, x.Client, k.list)
		if err != nil {
			return err
		}
		params.Set(k.newIDKey, k.newID(rows, p))
	}
	if err := x.Client.Do(ctx, http.MethodPost, k.list, params, nil); err != nil {
		return fmt.Errorf("create %s %s: %w", k.noun, params.Get(k.newIDKey), err)
	}
	return nil
}

func (k *sectionKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := c.Params[k.idKey]
	params := url.Values{}
	for key, v := range c.Params {
		if key != k.idKey {
			params.Set(key, v)
		}
	}
	if err := x.Client.Do(ctx, http.MethodPut, fmt.Sprintf(k.item, url.PathEscape(id)), params, nil); err != nil {
		return fmt.Errorf("update %s %s: %w", k.noun, id, err)
	}
	return nil
}

func (k *sectionKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id, err := k.liveID(ctx, x.Client, c)
	if err != nil || id == "" {
		return err // gone already
	}
	if err := x.Client.Do(ctx, http.MethodDelete, fmt.Sprintf(k.item, url.PathEscape(id)), nil, nil); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", k.noun, id, err)
	}
	return nil
}

func (k *sectionKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	p, known, err := resolveGuestsLive(ctx, cl, c.Resource.Params.Map())
	if err != nil || !known {
		return &engine.LiveObj{}, err
	}
	rows, err := engine.ReadSection(ctx, cl, k.list)
	if err != nil {
		return nil, err
	}
	lo := k.find(rows, p)
	lo.State = &sectionLive{Params: p}
	return lo, nil
}

// itemTmpl is the apidoc's template of an entry's path.
func (k *sectionKind) itemTmpl() string { return strings.Replace(k.item, "%s", "{"+k.idKey+"}", 1) }

// ReadCalls: the list (GET), with what its handler filters by.
func (k *sectionKind) ReadCalls(r *spec.Resource) []engine.APICall {
	c := engine.Call("GET", k.list, "to see the "+k.noun+"s")
	if k.listNeeds != nil {
		c = c.With(k.listNeeds(r.Params.Map())...)
	}
	return []engine.APICall{c}
}

// ChangeCalls: POST on the list, PUT and DELETE on the entry, as create,
// update and remove make them, with their handlers' own checks.
func (k *sectionKind) ChangeCalls(c *engine.Change, lo *engine.LiveObj) []engine.APICall {
	p := c.Resource.Params
	if lo != nil {
		p = spec.ParamsOf(sectionParams(c.Resource, lo))
	}
	why, id := "to "+c.Action.String()+" the "+k.noun, k.id(p.Map())
	post := engine.Call("POST", k.list, why, k.idKey, id)
	put := engine.Call("PUT", k.itemTmpl(), why, k.idKey, id)
	del := engine.Call("DELETE", k.itemTmpl(), why, k.idKey, id)
	var calls []engine.APICall
	switch c.Action {
	case engine.Create:
		calls = []engine.APICall{post}
	case engine.Update:
		calls = []engine.APICall{put}
	case engine.Delete:
		calls = []engine.APICall{del}
	case engine.Replace:
		calls = []engine.APICall{del, post}
	}
	if k.changeNeeds != nil && len(calls) > 0 {
		var live *pve.Config
		if lo != nil {
			live = lo.Config
		}
		calls[len(calls)-1] = calls[len(calls)-1].With(k.changeNeeds(c, p.Map(), live)...)
	}
	return calls
}

// Traits: a cluster-wide entry of a section config.
func (*sectionKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

package planner

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// poolKind manages Pool: identity is poolid. Guests join with their own
// `pool` key (guest.go); a Pool's `storages` key manages its storage
// members as a set.
type poolKind struct{}

// Traits: a pool is the cluster's.
func (poolKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

// poolLive is a pool's storage members, read only when the spec manages
// them (GET /pools?poolid=, one call per such pool).
type poolLive struct{ Storages []string }

// poolStorages is the spec's storage member set, ok false when the spec
// does not manage storage members.
func poolStorages(r *spec.Resource) (want []string, ok bool) {
	k, isPool := r.Keys.(*spec.PoolKeys)
	if !isPool || k == nil || k.Storages == nil {
		return nil, false
	}
	return compare.SplitSet(strings.Join(*k.Storages, ",")), true
}

const poolCreatePath = "/pools"

var poolIdentity = map[string]bool{"poolid": true}

func poolID(r *spec.Resource) string {
	if id := r.Params.Get("poolid"); id != "" {
		return id
	}
	return r.Name
}

func poolObj(pools []pve.Pool, id string) *engine.LiveObj {
	for _, p := range pools {
		if p.PoolID == id {
			cfg := pve.ConfigOf(map[string]string{"poolid": p.PoolID})
			if p.Comment != "" {
				cfg.Set("comment", p.Comment)
			}
			return &engine.LiveObj{Exists: true, Config: cfg, Digest: engine.FieldsDigest(cfg)}
		}
	}
	return &engine.LiveObj{}
}

func (poolKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	pools, err := lc.PoolList(ctx)
	if err != nil {
		return nil, err
	}
	lo := poolObj(pools, poolID(r))
	if _, managed := poolStorages(r); managed && lo.Exists {
		cl, id := lc.Client, poolID(r)
		lo.Load = func(ctx context.Context) error {
			st, err := readPoolStorages(ctx, cl, id)
			lo.State = st
			return err
		}
	}
	return lo, nil
}

func readPoolStorages(ctx context.Context, cl *pve.Client, id string) (*poolLive, error) {
	p, err := cl.Pool(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read members of pool %s: %w", id, err)
	}
	var ids []string
	for _, m := range p.Members {
		if m.Type == "storage" && m.Storage != "" {
			ids = append(ids, m.Storage) // one row per node: a set
		}
	}
	return &poolLive{Storages: compare.SplitSet(strings.Join(ids, ","))}, nil
}

func (poolKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	cmp := compare.Comparer{M: b.Method("POST", poolCreatePath)}
	c.Diff = cmp.DiffParams(r.Params.Map(), r.Remove, lo.Config, poolIdentity)
	if len(c.Diff) > 0 {
		c.Params = map[string]string{"poolid": poolID(r)}
		for _, d := range c.Diff {
			if d.After == nil {
				c.Params[d.Path] = "" // PUT /pools clears a field by sending it empty
			} else {
				c.Params[d.Path] = r.Params.Get(d.Path)
			}
		}
	}
	if want, managed := poolStorages(r); managed {
		var have []string
		if pl, ok := lo.State.(*poolLive); ok {
			have = pl.Storages
		}
		if !slices.Equal(have, want) {
			c.Diff = append(c.Diff, engine.FieldDiff{Path: "storages", Before: listAny(have), After: listAny(want)})
		}
	}
	engine.UpdateForDiff(c)
	return nil
}

func (poolKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := poolID(c.Resource)
	params := toValues(c.Resource.Params.Map())
	params.Set("poolid", id)
	if err := x.Client.CreatePool(ctx, params); err != nil {
		return fmt.Errorf("create pool %s: %w", id, err)
	}
	if want, managed := poolStorages(c.Resource); managed {
		return setPoolStorages(ctx, x, id, nil, want)
	}
	return nil
}

// setPoolStorages adds the storages of want that have lacks and takes out
// those it has that want lacks (PUT /pools storage=…, delete=1 to remove;
// pve-manager PVE/API2/Pool.pm update_pool).
func setPoolStorages(ctx context.Context, x *engine.Execution, id string, have, want []string) error {
	var add, del []string
	for _, s := range want {
		if !slices.Contains(have, s) {
			add = append(add, s)
		}
	}
	for _, s := range have {
		if !slices.Contains(want, s) {
			del = append(del, s)
		}
	}
	if len(add) > 0 {
		x.Msg("adding storage %s to pool %s", strings.Join(add, ", "), id)
		if err := x.Client.UpdatePool(ctx, url.Values{"poolid": {id}, "storage": {strings.Join(add, ",")}}); err != nil {
			return fmt.Errorf("add storage to pool %s: %w", id, err)
		}
	}
	if len(del) > 0 {
		x.Msg("taking storage %s out of pool %s", strings.Join(del, ", "), id)
		if err := x.Client.UpdatePool(ctx, url.Values{"poolid": {id}, "storage": {strings.Join(del, ",")}, "delete": {"1"}}); err != nil {
			return fmt.Errorf("take storage out of pool %s: %w", id, err)
		}
	}
	return nil
}

// listAny is a diff's value for a list (nil stays nil: "none").
func listAny(xs []string) []any {
	out := []any{}
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}

// anyStrings reads listAny back, also after a plan file round trip.
func anyStrings(v any) []string {
	var out []string
	switch xs := v.(type) {
	case []any:
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = xs
	}
	return out
}

func (poolKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := poolID(c.Resource)
	if len(c.Params) > 0 {
		if err := x.Client.UpdatePool(ctx, toValues(c.Params)); err != nil {
			return fmt.Errorf("update pool %s: %w", id, err)
		}
	}
	for _, d := range c.Diff {
		if d.Path == "storages" {
			return setPoolStorages(ctx, x, id, anyStrings(d.Before), anyStrings(d.After))
		}
	}
	return nil
}

func (poolKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := poolID(c.Resource)
	// PVE deletes only an empty pool: storage members the spec manages go
	// first (guests leave through their own changes, which come first).
	if _, managed := poolStorages(c.Resource); managed {
		pl, err := readPoolStorages(ctx, x.Client, id)
		if err != nil && !pve.IsNotFound(err) {
			return err
		}
		if err == nil {
			if err := setPoolStorages(ctx, x, id, pl.Storages, nil); err != nil {
				return err
			}
		}
	}
	if err := x.Client.DeletePool(ctx, id); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete pool %s: %w", id, err)
	}
	return nil
}

func (poolKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	pools, err := cl.Pools(ctx)
	if err != nil {
		return nil, err
	}
	lo := poolObj(pools, poolID(c.Resource))
	if _, managed := poolStorages(c.Resource); managed && lo.Exists {
		if lo.State, err = readPoolStorages(ctx, cl, poolID(c.Resource)); err != nil {
			return nil, err
		}
	}
	return lo, nil
}

// ReadCalls: GET /pools is open to all but lists only the pools the
// caller may audit (pve-manager API2/Pool.pm index).
func (poolKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/pools", "to see the pool").
		With(engine.NeedPriv("/pool/"+poolID(r), "to see the pool (PVE lists only the pools a token may audit)", "Pool.Audit"))}
}

// ChangeCalls: POST, PUT and DELETE /pools as create, update and remove
// make them; a storage member moved in or out is a PUT whose handler also
// checks the right to change the storage's permissions (check_perm_modify
// on /storage/ID, pve-manager PVE/API2/Pool.pm update_pool).
func (poolKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	id := poolID(c.Resource)
	why := "to " + c.Action.String() + " the pool"
	var calls []engine.APICall
	switch c.Action {
	case engine.Create, engine.Replace:
		calls = append(calls, engine.Call("POST", "/pools", why, "poolid", id))
	case engine.Update:
		calls = append(calls, engine.Call("PUT", "/pools", why, "poolid", id))
	}
	var touched []string
	for _, d := range c.Diff {
		if d.Path == "storages" {
			before, after := anyStrings(d.Before), anyStrings(d.After)
			for _, s := range append(before, after...) {
				if slices.Contains(before, s) != slices.Contains(after, s) {
					touched = append(touched, s)
				}
			}
		}
	}
	if c.Action != engine.Update {
		touched, _ = poolStorages(c.Resource)
	}
	for _, sid := range compare.SortedUnique(touched) {
		calls = append(calls, engine.Call("PUT", "/pools", why, "poolid", id).
			With(engine.NeedAny("/storage/"+sid, "to change the pool membership of storage "+sid, acl.PermModifyPrivs("/storage/"+sid)...)))
	}
	if c.Action == engine.Delete || c.Action == engine.Replace {
		calls = append(calls, engine.Call("DELETE", "/pools", why, "poolid", id))
	}
	return calls
}

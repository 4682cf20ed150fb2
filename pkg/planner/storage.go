package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// storageKind manages Storage: one entry of the cluster's storage.cfg
// (pve-storage API2/Storage/Config.pm: POST /storage, PUT and DELETE
// /storage/{storage}), found by its storage ID.
type storageKind struct{}

// Traits: a storage definition is the cluster's (storage.cfg).
func (storageKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeCluster} }

const (
	storageCreatePath = "/storage"
	storageUpdatePath = "/storage/{storage}"
)

func storageID(r *spec.Resource) string {
	if id := r.Params.Get("storage"); id != "" {
		return id
	}
	return r.Name
}

// storageObj finds id among the rows. The digest PVE gives is the whole
// storage.cfg's: it changes with every storage, so it is kept as the
// object's Digest (sent with an update, see update) while the fingerprint
// (the engine's, over this storage's fields only) decides whether this
// storage changed.
func storageObj(rows []*pve.Config, id string) *engine.LiveObj {
	for _, row := range rows {
		if row.Get("storage") != id {
			continue
		}
		cfg := row.Clone()
		cfg.Delete("digest")
		return &engine.LiveObj{Exists: true, Config: cfg, Digest: row.Get("digest")}
	}
	return &engine.LiveObj{}
}

func (storageKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	rows, err := lc.StorageList(ctx)
	if err != nil {
		return nil, err
	}
	return storageObj(rows, storageID(r)), nil
}

// fixedParams are the options PVE never changes on a storage of type t:
// what POST /storage takes and PUT /storage/{storage} does not (the
// schema's own account of fixed options, pve-common SectionConfig.pm
// updateSchema), and the type's fixed ones that another type lets change
// (an NFS server, a ZFS pool: the merged update schema has them).
func storageFixed(b *engine.Builder, t *schema.StorageType) map[string]bool {
	out := map[string]bool{}
	create, update := b.Method("POST", storageCreatePath), b.Method("PUT", storageUpdatePath)
	if create != nil && update != nil {
		for k := range create.Params {
			if _, ok := update.Params[k]; !ok {
				out[k] = true
			}
		}
	}
	if t != nil {
		for _, k := range t.FixedOptions() {
			out[k] = true
		}
	}
	return out
}

// storageSkip are the desired keys compare leaves alone: the identity,
// and the secrets PVE will not show (pve-storage Plugin.pm
// sensitive_properties, kept in /etc/pve/priv). A secret PVE marks as set
// in storage.cfg (a PBS encryption key's fingerprint) is compared by that
// mark only: added when the mark is missing, never compared by value.
// Removals (key: null) are not skipped: a mark that is there goes.
func storageSkip(t *schema.StorageType, desired map[string]string, live *pve.Config) map[string]bool {
	skip := map[string]bool{"storage": true}
	if t == nil {
		return skip
	}
	for _, k := range t.Sensitive {
		if _, want := desired[k]; !want {
			continue
		}
		if _, marked := live.Lookup(k); marked || !t.IsMarked(k) {
			skip[k] = true
		}
	}
	return skip
}

func (storageKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	t, _ := schema.LookupStorageType(lo.Config.Get("type"))
	cmp := compare.Comparer{M: b.Method("POST", storageCreatePath)}
	c.Diff = cmp.DiffParams(r.Params.Map(), r.Remove, lo.Config, storageSkip(t, r.Params.Map(), lo.Config))
	if len(c.Diff) == 0 {
		c.Action = engine.NoOp
		return nil
	}
	fixed := storageFixed(b, t)
	var changed []string
	for _, d := range c.Diff {
		if k := compare.TopKey(d.Path); fixed[k] && !slices.Contains(changed, k) {
			changed = append(changed, k)
		}
	}
	if len(changed) > 0 {
		c.Reasons = compare.Reasons(c.Diff)
		return b.Replace(r, c, fmt.Sprintf("PVE cannot change a storage's %s once it exists: the replace deletes the storage "+
			"configuration and adds it again (DELETE /storage/%s removes no data; volumes on it are found again)",
			strings.Join(changed, ", "), storageID(r)))
	}
	c.Action, c.Reasons = engine.Update, compare.Reasons(c.Diff)
	c.Params = cmp.UpdateParams(c.Diff, r.Params.Map(), lo.Config, nil)
	return nil
}

func (storageKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := storageID(c.Resource)
	params := toValues(c.Resource.Params.Map())
	params.Set("storage", id)
	if err := x.Client.CreateStorage(ctx, params); err != nil {
		return fmt.Errorf("create storage %s: %w", id, err)
	}
	return nil
}

// storageUpdateTries bounds the writes of one update that PVE refuses for
// a digest another storage's change made stale.
const storageUpdateTries = 5

// Update sends the changed options with the digest PVE has then. PVE's
// digest covers the whole storage.cfg, so the one read at plan time is
// stale as soon as any storage changed — another change of this very
// apply, running beside this one, say. So the storage is read again and
// must still be as planned (its fingerprint), and the write goes out with
// the digest of that read; when PVE refuses it as modified meanwhile
// (nothing was written), the read and the write are repeated, a few times.
func (storageKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := storageID(c.Resource)
	var err error
	for range storageUpdateTries {
		var rows []*pve.Config
		if rows, err = x.Client.Storages(ctx); err != nil {
			return fmt.Errorf("read storage %s: %w", id, err)
		}
		lo := storageObj(rows, id)
		switch {
		case !lo.Exists:
			return fmt.Errorf("storage %s is gone since the plan was made: run plan again", id)
		case c.Fingerprint != "" && engine.Fingerprint(lo) != c.Fingerprint:
			return fmt.Errorf("storage %s changed since the plan was made: run plan again", id)
		}
		params := toValues(c.Params)
		if lo.Digest != "" {
			params.Set("digest", lo.Digest)
		}
		if err = x.Client.UpdateStorage(ctx, id, params); !pve.IsDigestMismatch(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update storage %s: %w", id, err)
	}
	return nil
}

// Remove deletes the storage's configuration (and the secrets PVE keeps
// for it); the data it points at is left where it is.
func (storageKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	id := storageID(c.Resource)
	if err := x.Client.DeleteStorage(ctx, id); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete storage %s: %w", id, err)
	}
	return nil
}

func (storageKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	rows, err := cl.Storages(ctx)
	if err != nil {
		return nil, err
	}
	return storageObj(rows, storageID(c.Resource)), nil
}

// ReadCalls: GET /storage is open to all but lists only the storages on
// whose path the caller holds Datastore.Audit or Datastore.AllocateSpace
// (pve-storage API2/Storage/Config.pm index).
func (storageKind) ReadCalls(r *spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/storage", "to see the storage").
		With(engine.NeedAny("/storage/"+storageID(r), "to see the storage (PVE lists only the storages a token may audit)",
			"Datastore.Audit", "Datastore.AllocateSpace"))}
}

// ChangeCalls: POST /storage, PUT and DELETE /storage/{storage}.
func (storageKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	id, why := storageID(c.Resource), "to "+c.Action.String()+" the storage"
	switch c.Action {
	case engine.Create:
		return []engine.APICall{engine.Call("POST", "/storage", why, "storage", id)}
	case engine.Update:
		return []engine.APICall{engine.Call("PUT", "/storage/{storage}", why, "storage", id)}
	case engine.Delete:
		return []engine.APICall{engine.Call("DELETE", "/storage/{storage}", why, "storage", id)}
	case engine.Replace:
		return []engine.APICall{engine.Call("DELETE", "/storage/{storage}", why, "storage", id), engine.Call("POST", "/storage", why, "storage", id)}
	}
	return nil
}

package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// storageKind manages Storage: one entry of the cluster's storage.cfg
// (pve-storage API2/Storage/Config.pm: POST /storage, PUT and DELETE
// /storage/{storage}), found by its storage ID.
type storageKind struct{}

// traits: a storage definition is the cluster's (storage.cfg).
func (storageKind) traits() kindTraits { return kindTraits{Scope: scopeCluster} }

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
func storageObj(rows []*pve.Config, id string) *liveObj {
	for _, row := range rows {
		if row.Get("storage") != id {
			continue
		}
		cfg := row.Clone()
		cfg.Delete("digest")
		return &liveObj{Exists: true, Config: cfg, Digest: row.Get("digest")}
	}
	return &liveObj{}
}

func (storageKind) observe(ctx context.Context, lc *liveConn, r *spec.Resource) (*liveObj, error) {
	rows, err := lc.storageList(ctx)
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
func (b *builder) storageFixed(t *schema.StorageType) map[string]bool {
	out := map[string]bool{}
	create, update := b.method("POST", storageCreatePath), b.method("PUT", storageUpdatePath)
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

func (storageKind) compare(b *builder, r *spec.Resource, lo *liveObj, c *Change) error {
	t, _ := schema.LookupStorageType(lo.Config.Get("type"))
	cmp := compare.Comparer{M: b.method("POST", storageCreatePath)}
	c.Diff = cmp.DiffParams(r.Params.Map(), r.Remove, lo.Config, storageSkip(t, r.Params.Map(), lo.Config))
	if len(c.Diff) == 0 {
		c.Action = NoOp
		return nil
	}
	fixed := b.storageFixed(t)
	var changed []string
	for _, d := range c.Diff {
		if k := compare.TopKey(d.Path); fixed[k] && !slices.Contains(changed, k) {
			changed = append(changed, k)
		}
	}
	if len(changed) > 0 {
		c.Reasons = compare.Reasons(c.Diff)
		return b.replace(r, c, fmt.Sprintf("PVE cannot change a storage's %s once it exists: the replace deletes the storage "+
			"configuration and adds it again (DELETE /storage/%s removes no data; volumes on it are found again)",
			strings.Join(changed, ", "), storageID(r)))
	}
	c.Action, c.Reasons = Update, compare.Reasons(c.Diff)
	c.Params = cmp.UpdateParams(c.Diff, r.Params.Map(), lo.Config, nil)
	return nil
}

func (storageKind) create(ctx context.Context, x *execution, c *Change) error {
	id := storageID(c.Resource)
	params := toValues(c.Resource.Params.Map())
	params.Set("storage", id)
	if err := x.client.CreateStorage(ctx, params); err != nil {
		return fmt.Errorf("create storage %s: %w", id, err)
	}
	return nil
}

// storageUpdateTries bounds the writes of one update that PVE refuses for
// a digest another storage's change made stale.
const storageUpdateTries = 5

// update sends the changed options with the digest PVE has then. PVE's
// digest covers the whole storage.cfg, so the one read at plan time is
// stale as soon as any storage changed — another change of this very
// apply, running beside this one, say. So the storage is read again and
// must still be as planned (its fingerprint), and the write goes out with
// the digest of that read; when PVE refuses it as modified meanwhile
// (nothing was written), the read and the write are repeated, a few times.
func (storageKind) update(ctx context.Context, x *execution, c *Change) error {
	id := storageID(c.Resource)
	var err error
	for range storageUpdateTries {
		var rows []*pve.Config
		if rows, err = x.client.Storages(ctx); err != nil {
			return fmt.Errorf("read storage %s: %w", id, err)
		}
		lo := storageObj(rows, id)
		switch {
		case !lo.Exists:
			return fmt.Errorf("storage %s is gone since the plan was made: run plan again", id)
		case c.Fingerprint != "" && fingerprint(lo) != c.Fingerprint:
			return fmt.Errorf("storage %s changed since the plan was made: run plan again", id)
		}
		params := toValues(c.Params)
		if lo.Digest != "" {
			params.Set("digest", lo.Digest)
		}
		if err = x.client.UpdateStorage(ctx, id, params); !pve.IsDigestMismatch(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update storage %s: %w", id, err)
	}
	return nil
}

// remove deletes the storage's configuration (and the secrets PVE keeps
// for it); the data it points at is left where it is.
func (storageKind) remove(ctx context.Context, x *execution, c *Change) error {
	id := storageID(c.Resource)
	if err := x.client.DeleteStorage(ctx, id); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete storage %s: %w", id, err)
	}
	return nil
}

func (storageKind) current(ctx context.Context, cl *pve.Client, c *Change) (*liveObj, error) {
	rows, err := cl.Storages(ctx)
	if err != nil {
		return nil, err
	}
	return storageObj(rows, storageID(c.Resource)), nil
}

// readCalls: GET /storage is open to all but lists only the storages on
// whose path the caller holds Datastore.Audit or Datastore.AllocateSpace
// (pve-storage API2/Storage/Config.pm index).
func (storageKind) readCalls(r *spec.Resource) []apiCall {
	return []apiCall{call("GET", "/storage", "to see the storage").
		with(needAny("/storage/"+storageID(r), "to see the storage (PVE lists only the storages a token may audit)",
			"Datastore.Audit", "Datastore.AllocateSpace"))}
}

// changeCalls: POST /storage, PUT and DELETE /storage/{storage}.
func (storageKind) changeCalls(c *Change, _ *liveObj) []apiCall {
	id, why := storageID(c.Resource), "to "+c.Action.String()+" the storage"
	switch c.Action {
	case Create:
		return []apiCall{call("POST", "/storage", why, "storage", id)}
	case Update:
		return []apiCall{call("PUT", "/storage/{storage}", why, "storage", id)}
	case Delete:
		return []apiCall{call("DELETE", "/storage/{storage}", why, "storage", id)}
	case Replace:
		return []apiCall{call("DELETE", "/storage/{storage}", why, "storage", id), call("POST", "/storage", why, "storage", id)}
	}
	return nil
}

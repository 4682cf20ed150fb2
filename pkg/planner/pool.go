package planner

import (
	"context"
	"fmt"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// poolKind manages Pool: identity is poolid. Members are not managed here.
type poolKind struct{}

const poolCreatePath = "/pools"

var poolIdentity = map[string]bool{"poolid": true}

func poolID(r *spec.Resource) string {
	if id := r.Params["poolid"]; id != "" {
		return id
	}
	return r.Name
}

func poolObj(pools []pve.Pool, id string) *liveObj {
	for _, p := range pools {
		if p.PoolID == id {
			cfg := pve.Config{"poolid": p.PoolID}
			if p.Comment != "" {
				cfg["comment"] = p.Comment
			}
			return &liveObj{Exists: true, Config: cfg, Digest: fieldsDigest(cfg)}
		}
	}
	return &liveObj{}
}

func (poolKind) observe(ctx context.Context, lc *liveConn, r *spec.Resource) (*liveObj, error) {
	pools, err := lc.poolList(ctx)
	if err != nil {
		return nil, err
	}
	return poolObj(pools, poolID(r)), nil
}

func (poolKind) compare(b *builder, r *spec.Resource, lo *liveObj, c *Change) error {
	cmp := comparer{m: b.method("POST", poolCreatePath)}
	c.Diff = cmp.diffParams(r.Params, r.Remove, lo.Config, poolIdentity)
	if len(c.Diff) == 0 {
		c.Action = NoOp
		return nil
	}
	c.Action, c.Reasons = Update, reasons(c.Diff)
	c.Params = map[string]string{"poolid": poolID(r)}
	for _, d := range c.Diff {
		if d.After == nil {
			c.Params[d.Path] = "" // PUT /pools clears a field by sending it empty
		} else {
			c.Params[d.Path] = r.Params[d.Path]
		}
	}
	return nil
}

func (poolKind) create(ctx context.Context, x *execution, c *Change) error {
	id := poolID(c.Resource)
	params := toValues(c.Resource.Params)
	params.Set("poolid", id)
	if err := x.client.CreatePool(ctx, params); err != nil {
		return fmt.Errorf("create pool %s: %w", id, err)
	}
	return nil
}

func (poolKind) update(ctx context.Context, x *execution, c *Change) error {
	if err := x.client.UpdatePool(ctx, toValues(c.Params)); err != nil {
		return fmt.Errorf("update pool %s: %w", poolID(c.Resource), err)
	}
	return nil
}

func (poolKind) remove(ctx context.Context, x *execution, c *Change) error {
	id := poolID(c.Resource)
	if err := x.client.DeletePool(ctx, id); err != nil && !pve.IsNotFound(err) {
		return fmt.Errorf("delete pool %s: %w", id, err)
	}
	return nil
}

func (poolKind) current(ctx context.Context, cl *pve.Client, c *Change) (*liveObj, error) {
	pools, err := cl.Pools(ctx)
	if err != nil {
		return nil, err
	}
	return poolObj(pools, poolID(c.Resource)), nil
}

// readPerms: GET /pools lists only pools the token may audit (pve-manager
// API2/Pool.pm index).
func (poolKind) readPerms(r *spec.Resource) []permNeed {
	return []permNeed{need("/pool/"+poolID(r), "to see the pool (PVE lists only the pools a token may audit)", "Pool.Audit")}
}

// changePerms: POST, PUT and DELETE /pools check Pool.Allocate on the pool.
func (poolKind) changePerms(c *Change, _ *liveObj) []permNeed {
	if c.Action == NoOp {
		return nil
	}
	return []permNeed{need("/pool/"+poolID(c.Resource), "to "+c.Action.String()+" the pool", "Pool.Allocate")}
}

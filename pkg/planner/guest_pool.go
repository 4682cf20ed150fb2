package planner

import (
	"context"
	"net/url"
	"strconv"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/spec"
)

// A guest's pool membership: a create parameter that PVE keeps in the
// pool, not in the config, compared apart and changed through /pools.

// poolDiff compares the guest's pool membership (a create parameter that
// PVE keeps in the pool, not in the config) with the spec's `pool`.
func poolDiff(r *spec.Resource, live string) (engine.FieldDiff, bool) {
	want, set := r.Params.Lookup("pool")
	removing := false
	for _, k := range r.Remove {
		removing = removing || k == "pool"
	}
	switch {
	case set && want != live:
		var before any
		if live != "" {
			before = live
		}
		return engine.FieldDiff{Path: "pool", Before: before, After: want}, true
	case removing && live != "":
		return engine.FieldDiff{Path: "pool", Before: live, After: nil}, true
	}
	return engine.FieldDiff{}, false
}

// movePool puts the guest into the pool d.After, or takes it out of d.Before.
func movePool(ctx context.Context, x *engine.Execution, noun string, vmid int, d engine.FieldDiff) error {
	id := strconv.Itoa(vmid)
	if to, ok := d.After.(string); ok && to != "" {
		x.Msg("moving %s %d into pool %s", noun, vmid, to)
		return x.Client.UpdatePool(ctx, url.Values{"poolid": {to}, "vms": {id}, "allow-move": {"1"}})
	}
	from, _ := d.Before.(string)
	x.Msg("taking %s %d out of pool %s", noun, vmid, from)
	return x.Client.UpdatePool(ctx, url.Values{"poolid": {from}, "vms": {id}, "delete": {"1"}})
}

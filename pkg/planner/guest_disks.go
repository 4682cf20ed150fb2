package planner

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A guest's disks: a disk that grows is resized in place, one that
// shrinks is refused (PVE cannot), one whose storage changes is moved
// there — POST …/qemu/{vmid}/move_disk, also while the VM runs, or
// …/lxc/{vmid}/move_volume for a container, which PVE moves only while
// it is stopped — with delete=1, so the old volume goes. The guest keeps
// its vmid and everything else.

// isMove reports whether d is a disk moving to another storage.
func isMove(d engine.FieldDiff) bool { return strings.HasSuffix(d.Path, ".storage") }

// diskMove is one disk to move.
type diskMove struct{ key, storage string }

// moves lists the disks c moves, in the order of its diff.
func moves(c *engine.Change) []diskMove {
	var out []diskMove
	for _, d := range c.Diff {
		if to, ok := d.After.(string); ok && isMove(d) {
			out = append(out, diskMove{key: compare.TopKey(d.Path), storage: to})
		}
	}
	return out
}

// checkDisks refuses a disk that would shrink and notes what a move
// takes: a running container is shut down for it and started again.
func (g guest) checkDisks(r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	for _, d := range c.Diff {
		if !isResize(d) {
			continue
		}
		before, _ := d.Before.(string)
		after, _ := d.After.(string)
		x, ok1 := compare.ParseSize(before)
		y, ok2 := compare.ParseSize(after)
		if ok1 && ok2 && y < x {
			return fmt.Errorf("%s: %s: PVE cannot shrink a disk (%s → %s); keep %s or grow it, or move the data to a new, smaller disk yourself",
				r.Address(), compare.TopKey(d.Path), before, after, before)
		}
	}
	ms := moves(c)
	if len(ms) == 0 {
		return nil
	}
	var what []string
	for _, m := range ms {
		what = append(what, m.key+" → "+m.storage)
	}
	note := fmt.Sprintf("moves %s (old volumes deleted)", strings.Join(what, ", "))
	if g.stopsToMove && liveOf(lo).Status == "running" {
		note += "; PVE moves a container's volumes only while it is stopped: it is shut down for the move"
		if want := spec.Guest(r).Running; want == nil || *want {
			note += " and started again"
		}
	}
	c.Reasons = append(c.Reasons, note)
	return nil
}

// moveDisks moves c's disks to their new storages. The first move sends
// the plan's digest (nothing changed since the plan); each move changes
// the config, so the config as it is after them is returned (nil when
// nothing moved) for the rest of the update. A running container is shut
// down first; stopped reports that.
func (g guest) moveDisks(ctx context.Context, x *engine.Execution, c *engine.Change) (after *pve.Config, stopped bool, err error) {
	ms := moves(c)
	if len(ms) == 0 {
		return nil, false, nil
	}
	vmid := stateOf(c).VMID
	if g.stopsToMove {
		st, err := x.Client.GuestStatus(ctx, g.typ, c.Node, vmid)
		if err != nil {
			return nil, false, fmt.Errorf("status of %s %d: %w", g.noun, vmid, err)
		}
		if st.Status == "running" {
			x.Msg("shutting %s %d down to move its volumes", g.noun, vmid)
			if err := g.shutdown(ctx, x, c.Node, vmid); err != nil {
				return nil, false, err
			}
			stopped = true
		}
	}
	digest := c.Digest
	for _, m := range ms {
		params := url.Values{"delete": {"1"}}
		if digest != "" {
			params.Set("digest", digest)
		}
		if f := driveFormat(c.Resource.Params.Get(m.key)); f != "" && g.moveFormat {
			params.Set("format", f)
		}
		x.Msg("moving %s of %s %d to storage %s", m.key, g.noun, vmid, m.storage)
		if err := x.Client.MoveGuestVolume(ctx, g.typ, c.Node, vmid, m.key, m.storage, params); err != nil {
			return nil, stopped, fmt.Errorf("move %s of %s %d to %s: %w", m.key, g.noun, vmid, m.storage, err)
		}
		if after, err = x.Client.GuestConfig(ctx, g.typ, c.Node, vmid); err != nil {
			return nil, stopped, fmt.Errorf("read config of %s %d: %w", g.noun, vmid, err)
		}
		digest = after.Get("digest")
	}
	return after, stopped, nil
}

// driveFormat is a drive value's format= ("" for none).
func driveFormat(val string) string {
	for _, kv := range splitProps(val) {
		if kv.Key == "format" {
			return kv.Value
		}
	}
	return ""
}

// remerge rebuilds c's update parameters of moved disks over the config
// as it is after the moves (their new volumes), so that the update does
// not point them back at the old ones.
func (g guest) remerge(c *engine.Change, after *pve.Config) map[string]string {
	cmp := compare.Comparer{}
	if m, ok := schema.Default().Lookup("POST", g.createPath); ok {
		cmp.M = m
	}
	params := make(map[string]string, len(c.Params))
	for k, v := range c.Params {
		params[k] = v
	}
	for _, m := range moves(c) {
		if _, ok := params[m.key]; ok {
			params[m.key] = cmp.UpdateValue(m.key, c.Resource.Params.Get(m.key), after.Get(m.key))
		}
	}
	return params
}

// shutdown asks a guest to shut down and stops it hard when it has not
// within shutdownTimeout, as an operator would.
func (g guest) shutdown(ctx context.Context, x *engine.Execution, node string, vmid int) error {
	params := url.Values{"timeout": {strconv.Itoa(shutdownTimeout)}, "forceStop": {"1"}}
	if err := x.Client.GuestPower(ctx, g.typ, node, vmid, "shutdown", params); err != nil {
		return fmt.Errorf("shutdown %s %d: %w", g.noun, vmid, err)
	}
	return nil
}

// grownSizes writes the new size into the update's value of a disk that
// also grows: the value carries the live size= along, and on a running VM
// PVE may keep the value pending, to be written over the grown size at
// the next start. params is not changed.
func grownSizes(c *engine.Change, params map[string]string) map[string]string {
	var out map[string]string
	for _, d := range c.Diff {
		size, _ := d.After.(string)
		key := compare.TopKey(d.Path)
		val, ok := params[key]
		if !isResize(d) || !ok || size == "" {
			continue
		}
		items, err := schema.SplitPropertyString(val)
		if err != nil {
			continue
		}
		if _, has := schema.PropValue(items, "size"); !has {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(params))
			for k, v := range params {
				out[k] = v
			}
		}
		out[key] = schema.FormatPropertyString(schema.SetProp(items, "size", size), nil)
	}
	if out == nil {
		return params
	}
	return out
}

// hasResize reports whether a disk of the change grows.
func hasResize(c *engine.Change) bool {
	return slices.ContainsFunc(c.Diff, isResize)
}

// resize grows the disks that grew; the first resize carries digest
// (when not "").
func (g guest) resize(ctx context.Context, x *engine.Execution, c *engine.Change, digest string) error {
	vmid := stateOf(c).VMID
	for _, d := range c.Diff {
		if !isResize(d) {
			continue
		}
		size, _ := d.After.(string)
		disk := compare.TopKey(d.Path)
		err := x.Client.ResizeGuestIf(ctx, g.typ, c.Node, vmid, disk, size, digest)
		if pve.IsDigestMismatch(err) {
			return &engine.StaleError{Address: c.Address, Why: "digest", Err: err}
		}
		if err != nil {
			return fmt.Errorf("resize %s of %s %d: %w", disk, g.noun, vmid, err)
		}
		digest = ""
	}
	return nil
}

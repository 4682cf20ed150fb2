package planner

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Guests carry their owner in two fields PVE keeps and a clone copies
// (qemu-server src/PVE/API2/Qemu.pm clone_vm copies every key but the
// disks and a few, description and tags among those it copies): the
// owner tag, which /cluster/resources lists for every guest (pve-manager
// PVE/API2/Cluster.pm resources reads lock and tags from the config), and
// the owner block in the description naming the stack and the vmid (a
// hand-made clone has another vmid, so it is not owned).

// MarkOwner records the stack on a change that makes a guest: its create
// writes the mark (ownerParams).
func (g guest) MarkOwner(c *engine.Change, stack string) { stateOf(c).Owner = stack }

// ownerParams adds the owner mark of the change's stack to a create's (or
// a clone's first update's) parameters, over what the guest has (live:
// the clone's config, nil for a create): the owner tag merged into the
// tags, the owner block after the description's text.
func ownerParams(c *engine.Change, params map[string]string, live *pve.Config, vmid int) {
	stack := stateOf(c).Owner
	if stack == "" {
		return
	}
	desc, set := params["description"]
	if !set {
		desc = live.Get("description")
	}
	params["description"] = marks.WithOwnerMark(desc, stack, vmid)
	tags, set := params["tags"]
	if !set {
		tags = live.Get("tags")
	}
	params["tags"] = marks.WithOwnerTag(tags)
}

// ownerPerms is what writing the owner mark at create needs: the owner
// tag is checked as any tag (pve-guest-common PVE/GuestHelpers.pm
// assert_tag_permissions, VM.Config.Options on the guest).
func (g guest) ownerPerms(c *engine.Change) []engine.PermNeed {
	if stateOf(c).Owner == "" {
		return nil
	}
	id, _ := specVMID(c.Resource)
	n := engine.NeedPriv(vmPath(id), "to tag the "+guestNoun(string(g.typ))+" with its owner (pvectl)", "VM.Config.Options")
	if pool := c.Resource.Params.Get("pool"); pool != "" {
		n.Or = "/pool/" + pool
	}
	return []engine.PermNeed{n}
}

// FindOwned finds the guests of the kind's type on lc that carry the owner
// tag and no document of set names (by vmid, as observed or pinned, or by
// name), reads their configs and keeps those whose owner block names their
// own vmid. Templates are never owned: other guests are cloned from them;
// nor are guests still being created or cloned.
func (g guest) FindOwned(ctx context.Context, lc *engine.LiveConn, kind string, obs *engine.Observed, set *spec.Set) ([]*engine.OwnedObj, error) {
	vmids, names := claimedGuests(obs, set)
	var cands []pve.ClusterResource
	for _, row := range lc.Resources {
		if row.Type != string(g.typ) || row.Template || !marks.HasOwnerTag(row.Tags) || vmids[row.VMID] || lc.Down[row.Node] != "" {
			continue
		}
		if row.Lock == "create" || row.Lock == "clone" {
			continue // still being made, maybe by another run's document
		}
		cands = append(cands, row)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	ix, err := guestIndexOf(lc, ctx, g.typ)
	if err != nil {
		return nil, err
	}
	objs := map[string]*engine.LiveObj{}
	for _, row := range cands {
		gl := &guestLive{VMID: row.VMID, Status: row.Status, Pool: row.Pool}
		if cur := ix.vmid(row.VMID); cur != nil {
			gl.Status = cur.Status
		}
		lo := &engine.LiveObj{Exists: true, Node: row.Node, State: gl}
		lo.Load = func(ctx context.Context) error {
			cfg, err := lc.Client.GuestConfig(ctx, g.typ, row.Node, row.VMID)
			if pve.IsNotFound(err) {
				lo.Exists = false // deleted since the list: nothing to prune
				return nil
			}
			if err != nil {
				return fmt.Errorf("read config of %s %d: %w", g.noun, row.VMID, err)
			}
			lo.Config, lo.Digest = cfg, cfg.Get("digest")
			return nil
		}
		objs[strconv.Itoa(row.VMID)] = lo
	}
	var errs []error
	for _, err := range engine.LoadAll(ctx, objs, lc.ReadConc) {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	var out []*engine.OwnedObj
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		lo := objs[key]
		if !lo.Exists {
			continue
		}
		vmid := liveOf(lo).VMID
		stack, markVMID, ok := marks.ParseOwnerMark(lo.Config.Get("description"))
		name := lo.Config.Get(g.nameParam)
		if !ok || markVMID != vmid || names[name] {
			continue
		}
		if name == "" {
			name = fmt.Sprintf("%s-%d", g.noun, vmid)
		}
		r := &spec.Resource{Kind: kind, Name: name, Connection: lc.Name, State: spec.Present,
			Params: spec.ParamsOf(map[string]string{"vmid": strconv.Itoa(vmid), "node": lo.Node, g.nameParam: name})}
		out = append(out, &engine.OwnedObj{Res: r, Stack: stack, What: "vmid " + strconv.Itoa(vmid),
			Protected: lo.Config.Get("protection") == "1", Lo: lo})
	}
	return out, nil
}

// claimedGuests are the vmids and names the documents of set name, for
// any guest kind: the vmids found (observed) or pinned, the names and the
// names renamed from. A guest one of them may be is never taken for an
// orphan, even when its document could not be read. Every connection's
// documents count: two connections may reach one cluster.
func claimedGuests(obs *engine.Observed, set *spec.Set) (map[int]bool, map[string]bool) {
	vmids, names := map[int]bool{}, map[string]bool{}
	for _, r := range set.Resources {
		t := engine.TraitsOf(r.Kind)
		if !t.ClaimsVMID {
			continue
		}
		if id := t.PinnedVMIDOf(r); id != 0 {
			vmids[id] = true
		}
		if lo := obs.Objs[r.Address()]; lo != nil && lo.Exists {
			if gl, ok := lo.State.(*guestLive); ok && gl.VMID != 0 {
				vmids[gl.VMID] = true
			}
		}
		for _, k := range []string{"name", "hostname"} {
			if n := r.Params.Get(k); n != "" {
				names[n] = true
			}
		}
		names[r.Name] = true
		if r.RenamedFrom() != "" {
			names[r.RenamedFrom()] = true
		}
	}
	return vmids, names
}

// MarkOwner and findOwned: a Template is never owned (guests are cloned
// from it; a forgotten one is removed with destroy or by hand).
func (templateKind) MarkOwner(*engine.Change, string) {}

func (templateKind) FindOwned(context.Context, *engine.LiveConn, string, *engine.Observed, *spec.Set) ([]*engine.OwnedObj, error) {
	return nil, nil
}

// ownerValues is ownerParams for a create's url.Values.
func ownerValues(c *engine.Change, params url.Values, vmid int) {
	m := map[string]string{}
	for _, k := range []string{"description", "tags"} {
		if params.Has(k) {
			m[k] = params.Get(k)
		}
	}
	ownerParams(c, m, nil, vmid)
	for k, v := range m {
		params.Set(k, v)
	}
}

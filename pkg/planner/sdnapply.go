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
	"sync"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// sdnApplyKind commits the cluster's pending SDN configuration
// (SdnApply): pve-network src/PVE/API2/Network/SDN.pm reload, a task
// that makes the files the running config and reloads every node's
// network. As NetworkApply for a node, it is planned after every SDN
// change, commits only what the plan showed plus what it wrote, and
// refuses pending changes by others unless they are allowed.
type sdnApplyKind struct{ engine.NeverCreated }

// Traits: the cluster has one SDN configuration (a singleton), and the
// commit makes live what the SDN kinds wrote.
func (sdnApplyKind) Traits() engine.KindTraits {
	return engine.KindTraits{Scope: engine.ScopeCluster, Singleton: true, Commits: engine.SDNScope}
}

// sdnPending is one pending entry of the SDN files: its key
// ("zones/lan", "subnets/v1/10.0.0.0/24") and how the plan shows it.
type sdnPending struct {
	Key  string `json:"key"`
	Text string `json:"text"`
}

// sdnCommitState is what an SdnApply change carries from plan to apply:
// the pending entries the plan found (none of them this plan's: it had
// written nothing yet) and the entries the plan's own changes write.
type sdnCommitState struct {
	Pending []sdnPending      `json:"pending,omitempty"`
	Ours    map[string]string `json:"ours,omitempty"` // address → key
}

func (sdnApplyKind) NewState(lo *engine.LiveObj) any {
	st := &sdnCommitState{}
	if p, ok := lo.State.([]sdnPending); ok {
		st.Pending = p
	}
	return st
}

func (sdnApplyKind) DecodeState(raw json.RawMessage) (any, error) {
	return engine.DecodeNew[sdnCommitState](raw)
}

// sdnKey is the pending key of an SDN kind's resource ("" for others).
func sdnKey(r *spec.Resource) string {
	k, ok := engine.Kinds[r.Kind].(*sdnObjKind)
	if !ok {
		return ""
	}
	if k.file == "subnets" {
		return "subnets/" + r.Params.Get("vnet") + "/" + r.Params.Get("subnet")
	}
	return k.file + "/" + r.Params.Get(k.idKey)
}

// readPending lists the pending entries of the four files (their
// pending=1 views: an entry with a state), subnets by the vnets of the
// files.
func readPending(read func(path string) ([]*pve.Config, error)) ([]sdnPending, error) {
	var out []sdnPending
	add := func(key, noun, id string, row *pve.Config) {
		if row.Get("state") == "" {
			return
		}
		text := noun + " " + id + ": " + row.Get("state")
		var pend map[string]any
		if row.Get("state") == "changed" && json.Unmarshal([]byte(row.Get("pending")), &pend) == nil && len(pend) > 0 {
			text += " (" + strings.Join(slices.Sorted(maps.Keys(pend)), ", ") + ")"
		}
		out = append(out, sdnPending{Key: key, Text: text})
	}
	for _, k := range []*sdnObjKind{sdnControllerKind, sdnZoneKind, sdnVnetKind} {
		rows, err := read("/cluster/sdn/" + k.file)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			add(k.file+"/"+row.Get(k.idKey), strings.TrimPrefix(spec.Noun(k.kind), "SDN "), row.Get(k.idKey), row)
		}
	}
	vnets, err := read("/cluster/sdn/vnets")
	if err != nil {
		return nil, err
	}
	for _, v := range vnets {
		if v.Get("state") == "deleted" {
			continue // its subnets cannot be listed any more (nor be left: PVE refuses to delete a vnet with subnets)
		}
		rows, err := read(sdnSubnetKind.listPath(map[string]string{"vnet": v.Get("vnet")}))
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			add("subnets/"+row.Get("vnet")+"/"+row.Get("cidr"), "subnet", row.Get("cidr")+" on vnet "+row.Get("vnet"), row)
		}
	}
	slices.SortFunc(out, func(a, b sdnPending) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Observe reads the pending set as a deferred load: the vnets' subnet
// lists, one per vnet, are read several at once (and shared with the
// subnets' own reads), not one after another.
func (sdnApplyKind) Observe(ctx context.Context, lc *engine.LiveConn, _ *spec.Resource) (*engine.LiveObj, error) {
	lo := &engine.LiveObj{Exists: true}
	lo.Load = func(ctx context.Context) error {
		read := func(path string) ([]*pve.Config, error) { return lc.SDNRows(ctx, path) }
		vnets, err := read("/cluster/sdn/vnets")
		if err != nil {
			return err
		}
		var paths []string
		for _, v := range vnets {
			if v.Get("state") != "deleted" {
				paths = append(paths, sdnSubnetKind.listPath(map[string]string{"vnet": v.Get("vnet")}))
			}
		}
		readEach(ctx, paths, lc.ReadConc, read)
		pend, err := readPending(read)
		lo.State = pend
		return err
	}
	return lo, nil
}

// readEach calls read for every path, conc at a time; what it read or
// failed to read is found again by the caller's reads (sharedRows).
func readEach(ctx context.Context, paths []string, conc int, read func(string) ([]*pve.Config, error)) {
	if conc < 1 {
		conc = 1
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, _ = read(p)
		}()
	}
	wg.Wait()
}

// PlanCommit decides whether the cluster's SDN needs a commit: entries
// are pending already (made by others: the plan lists them, and apply
// commits them only when allowed), or an SDN change of this plan will
// write one (a destroy's removals too).
func (sdnApplyKind) PlanCommit(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if !engine.StartCommit(r, c) {
		return nil
	}
	st := engine.ChangeState[sdnCommitState](c)
	if st == nil {
		st = &sdnCommitState{}
		c.State = st
	}
	st.Ours = nil
	if len(st.Pending) > 0 {
		c.Reasons = append(c.Reasons, "the cluster has pending SDN changes that pvectl did not make; apply commits them only with --allow-foreign-sdn-changes:")
		for _, p := range st.Pending {
			c.Reasons = append(c.Reasons, "  "+p.Text)
		}
	}
	st.Ours = stagedBy(b, c, r, lo, "will write a pending change", sdnKey)
	return nil
}

func (sdnApplyKind) Foreign(c *engine.Change) string {
	if st := engine.ChangeState[sdnCommitState](c); st != nil && len(st.Pending) > 0 {
		var names []string
		for _, p := range st.Pending {
			names = append(names, p.Text)
		}
		return "the cluster has pending SDN changes that pvectl did not make: " + strings.Join(names, "; ")
	}
	return ""
}

// Compare is planCommit: the engine calls planCommit in every mode.
func (k sdnApplyKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	return k.PlanCommit(b, r, lo, c)
}

// Update commits, under SDN's lock, once the pending entries are what
// the plan saw (when allowed) plus what the plan wrote; then it waits
// until every node runs the new configuration.
func (sdnApplyKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	var vnets []*pve.Config // kept: the zones the commit touches are theirs too
	read := func(path string) ([]*pve.Config, error) {
		rows, err := engine.ReadSDN(ctx, x.Client, path)
		if path == "/cluster/sdn/"+sdnVnetKind.file {
			vnets = rows
		}
		return rows, err
	}
	token, err := sdnToken(ctx, x) // no one else writes from here on
	if err != nil {
		return err
	}
	pend, err := readPending(read)
	if err != nil {
		return err
	}
	if len(pend) == 0 {
		x.Msg("nothing pending in SDN: no commit needed")
		return nil
	}
	if err := engine.ChangeState[sdnCommitState](c).check(pend, x.Plan, x.AllowForeign); err != nil {
		return err
	}
	x.Msg("committing the cluster's SDN configuration")
	params := url.Values{"lock-token": {token}, "release-lock": {"1"}}
	if err := x.Client.RunTask(ctx, http.MethodPut, "/cluster/sdn", params); err != nil {
		return fmt.Errorf("commit SDN configuration: %w", err)
	}
	x.Locks.Released(sdnLockKey(x))
	return waitSDNNodes(ctx, x, touchedZones(pend, vnets))
}

// touchedZones are the zones a commit of pend changes: pending zones and
// the zones of pending vnets and subnets; nil (every zone) when a
// controller is pending, which any EVPN zone may use.
func touchedZones(pend []sdnPending, vnets []*pve.Config) map[string]bool {
	zoneOf := map[string]string{}
	for _, v := range vnets {
		zoneOf[v.Get("vnet")] = v.Get("zone")
	}
	out := map[string]bool{}
	for _, p := range pend {
		kind, rest, _ := strings.Cut(p.Key, "/")
		id, _, _ := strings.Cut(rest, "/")
		switch kind {
		case "controllers":
			return nil
		case "zones":
			out[id] = true
		case "vnets", "subnets":
			out[zoneOf[id]] = true
		}
	}
	return out
}

// check refuses a commit that would make live what the plan did not
// show: pending entries by others (unless allowed, and then only those
// the plan listed) and entries that became pending since the plan.
func (st *sdnCommitState) check(pend []sdnPending, plan *engine.Plan, allow bool) error {
	if st == nil {
		return fmt.Errorf("the plan does not record SDN's pending changes as it found them: run plan again")
	}
	ok := map[string]bool{}
	for addr, key := range st.Ours {
		if plan == nil {
			ok[key] = true
		} else if c := plan.Change(addr); c != nil && c.Action != engine.NoOp {
			ok[key] = true
		}
	}
	seen := map[string]bool{}
	for _, p := range st.Pending {
		seen[p.Key] = true
	}
	if len(st.Pending) > 0 && !allow {
		return fmt.Errorf("the cluster has pending SDN changes that pvectl did not make: not committing them without --allow-foreign-sdn-changes")
	}
	var unexpected []string
	for _, p := range pend {
		if !ok[p.Key] && !seen[p.Key] {
			unexpected = append(unexpected, p.Text)
		}
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("SDN's pending changes are not those the plan showed (someone edited them since): %s; not committing (this plan's changes stay pending): review them, then run plan again",
			strings.Join(unexpected, "; "))
	}
	return nil
}

// sdnNodeWait bounds the wait for the nodes' network reloads.
const sdnNodeWait = 2 * time.Minute

// waitSDNNodes waits until every online node runs the committed
// configuration: reload's worker starts each node's network reload and
// does not wait for it (SDN.pm reload), and a guest on a vnet starts
// only where the vnet is up. A node's zones say "pending" until then
// (Nodes/Zones.pm status), "error" when a vnet could not be made there.
// It waits for the zones the commit touched (touched; nil: every zone):
// a zone it did not touch that is in error, or stays pending, is said,
// not waited for and not a failure of this apply (the node lists every
// zone, whoever made it).
func waitSDNNodes(ctx context.Context, x *engine.Execution, touched map[string]bool) error {
	var nodes []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := x.Client.Do(ctx, http.MethodGet, "/nodes", nil, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	deadline := time.Now().Add(sdnNodeWait)
	for _, n := range nodes {
		if n.Status != "" && n.Status != "online" {
			x.Msg("node %s is %s: it gets the SDN configuration at its next network reload", n.Node, n.Status)
			continue
		}
		said := false // the zones this commit did not change, once a node
		for {
			var zones []*pve.Config
			if err := x.Client.Do(ctx, http.MethodGet, "/nodes/"+url.PathEscape(n.Node)+"/sdn/zones", nil, &zones); err != nil {
				return fmt.Errorf("read SDN status of node %s: %w", n.Node, err)
			}
			pending, failed, others := zoneStates(zones, touched)
			if len(others) > 0 && !said {
				said = true
				x.Msg("node %s: zone(s) %s, which this commit did not change, report %s", n.Node, strings.Join(slices.Sorted(maps.Keys(others)), ", "), strings.Join(sortedValues(others), ", "))
			}
			if len(failed) > 0 {
				return fmt.Errorf("committed, but node %s could not bring up zone(s) %s: see the node's network reload task log", n.Node, strings.Join(failed, ", "))
			}
			if len(pending) == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("committed, but node %s still runs the old SDN configuration of zone(s) %s after %s", n.Node, strings.Join(pending, ", "), durfmt.Format(sdnNodeWait))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// zoneStates sorts a node's zones: the touched ones (nil: all) still
// pending or failed, and the others not available, by zone.
func zoneStates(zones []*pve.Config, touched map[string]bool) (pending, failed []string, others map[string]string) {
	for _, z := range zones {
		id, st := z.Get("zone"), z.Get("status")
		switch {
		case st != "pending" && st != "error":
		case touched != nil && !touched[id]:
			if others == nil {
				others = map[string]string{}
			}
			others[id] = st
		case st == "pending":
			pending = append(pending, id)
		default:
			failed = append(failed, id)
		}
	}
	return pending, failed, others
}

// sortedValues are m's values in the order of its sorted keys.
func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

func (sdnApplyKind) Current(context.Context, *pve.Client, *engine.Change) (*engine.LiveObj, error) {
	return &engine.LiveObj{Exists: true}, nil
}

// ReadCalls: the pending lists are open to all but show only what the
// token may audit (SDN's API2 index handlers).
func (sdnApplyKind) ReadCalls(*spec.Resource) []engine.APICall {
	return []engine.APICall{engine.Call("GET", "/cluster/sdn/zones", "to see every pending SDN change").
		With(engine.NeedAny("/sdn", "to see every pending SDN change (PVE lists only what a token may audit)", "SDN.Audit", "SDN.Allocate"))}
}

// ChangeCalls: the lock, then PUT /cluster/sdn commits.
func (sdnApplyKind) ChangeCalls(c *engine.Change, _ *engine.LiveObj) []engine.APICall {
	if c.Action != engine.ApplyNet {
		return nil
	}
	return []engine.APICall{engine.Call("POST", "/cluster/sdn/lock", "to commit the cluster's SDN configuration"),
		engine.Call("PUT", "/cluster/sdn", "to commit the cluster's SDN configuration")}
}

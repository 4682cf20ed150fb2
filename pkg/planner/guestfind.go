package planner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Finding guests: by vmid, else by name, among the guests as they are now.

// guestIndex is a connection's guest rows of one type (guestRows) indexed
// once, so that finding each of many guests is a map lookup, not a scan
// of every row (a plan of N guests would be quadratic).
type guestIndex struct {
	typ  pve.GuestType
	rows []pve.ClusterResource
	// byVMID is the first row of each vmid (qemu and lxc rows share one
	// vmid space).
	byVMID map[int]int
	// byName are the rows of typ of each name, in row order.
	byName map[string][]int
	// stubs are the vmids of rows of typ that a create or clone holds
	// (guestbusy.go), sorted.
	stubs []int
	// templates are the QEMU templates, by vmid (qemu_clone.go).
	templates []*pve.ClusterResource
}

func newGuestIndex(typ pve.GuestType, rows []pve.ClusterResource) *guestIndex {
	ix := &guestIndex{typ: typ, rows: rows, byVMID: make(map[int]int, len(rows)), byName: make(map[string][]int, len(rows))}
	for i := range rows {
		row := &rows[i]
		if row.Type != "qemu" && row.Type != "lxc" {
			continue
		}
		if _, ok := ix.byVMID[row.VMID]; !ok {
			ix.byVMID[row.VMID] = i
		}
		if row.Type == string(pve.QEMU) && row.Template {
			ix.templates = append(ix.templates, row)
		}
		if row.Type != string(typ) {
			continue
		}
		ix.byName[row.Name] = append(ix.byName[row.Name], i)
		if row.Lock == "create" || row.Lock == "clone" {
			ix.stubs = append(ix.stubs, row.VMID)
		}
	}
	slices.Sort(ix.stubs)
	sort.SliceStable(ix.templates, func(i, j int) bool { return ix.templates[i].VMID < ix.templates[j].VMID })
	return ix
}

// vmid is the guest row of vmid, of any guest type (nil: none).
func (ix *guestIndex) vmid(id int) *pve.ClusterResource {
	if i, ok := ix.byVMID[id]; ok {
		return &ix.rows[i]
	}
	return nil
}

// named are the rows of the index's type named name, templates among
// them only when withTemplates.
func (ix *guestIndex) named(name string, withTemplates bool) []*pve.ClusterResource {
	var out []*pve.ClusterResource
	for _, i := range ix.byName[name] {
		if !ix.rows[i].Template || withTemplates {
			out = append(out, &ix.rows[i])
		}
	}
	return out
}

// find picks r's row: by vmid, else by name among guests of its type
// that are not templates. The index holds the current rows of the
// guest's type (guestRows) and any rows of other guest types, which only
// a vmid can hit.
func (g guest) find(ix *guestIndex, r *spec.Resource, vmid int) (*pve.ClusterResource, error) {
	name := g.name(r)
	if vmid != 0 {
		row := ix.vmid(vmid)
		switch {
		case row == nil:
			return nil, nil
		case row.Type == string(g.typ):
			return row, g.holder(row, name)
		}
		return nil, fmt.Errorf("vmid %d is a %s, not a %s", vmid, guestNoun(row.Type), g.noun)
	}
	// A template is found by name only for a spec that makes one: a VM
	// converted into a template by hand is another object.
	found := ix.named(name, r.Params.Get("template") == "1")
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].VMID < found[j].VMID })
	ids := make([]string, len(found))
	for i, f := range found {
		ids[i] = strconv.Itoa(f.VMID)
	}
	return nil, fmt.Errorf("name %s matches %ss %s and %s: set vmid", name, guestNoun(string(g.typ)),
		strings.Join(ids[:len(ids)-1], ", "), ids[len(ids)-1])
}

// holder checks that the guest holding a spec's vmid is the spec's own:
// one of another name is someone else's, and taking it over would
// rewrite (or replace) it. A guest under a lock is not judged here: a
// task may still be making it (a clone's temporary config has no name:
// PVE lists it as "VM N"), and the comparison reports it as in progress.
// Neither is a row without a name (/cluster/resources before pvestatd
// has seen the guest).
func (g guest) holder(row *pve.ClusterResource, name string) error {
	if row.Name == name || row.Lock != "" || row.Name == "" {
		return nil
	}
	return fmt.Errorf("vmid %d is held by %s %q on node %s, not by %q: refusing to take it over; if it is this %s, set spec.%s to %q (or rename it in PVE), otherwise choose another vmid",
		row.VMID, guestNoun(row.Type), row.Name, row.Node, name, g.noun, g.nameParam, row.Name)
}

func guestNoun(typ string) string {
	if typ == string(pve.LXC) {
		return "container"
	}
	return "VM"
}

// guestRows are the guests of type typ as they are now, for finding and
// judging guests. /cluster/resources knows every guest's vmid, node and
// type (and pool) at once, but its name, status and template come from
// pvestatd's status data, refreshed every ~10 s: a guest made a moment
// ago is listed with status "unknown" and no name (pve-manager
// API2/Cluster.pm resources, API2Tools.pm extract_vm_stats). Finding it by
// that name would create it twice, judging its power state by that status
// would start it twice. So the rows come from the per-node lists (one per
// node that /cluster/resources places such a guest on), which read the
// guests themselves, with the pool from /cluster/resources. A node that
// /cluster/resources reports offline cannot be listed; its guests keep
// their /cluster/resources rows (they cannot be changed there anyway).
// Rows of the other guest types come along from /cluster/resources, for
// the vmid checks of find.
//
// A node whose list pveproxy cannot get (595: it cannot reach the node)
// is down as well: its guests keep their /cluster/resources rows, and
// down (when not nil) hears of it (degraded.go).
func guestRows(ctx context.Context, cl *pve.Client, resources []pve.ClusterResource, typ pve.GuestType, down func(node, why string)) ([]pve.ClusterResource, error) {
	online := map[string]bool{}
	pools := map[int]string{}
	var nodes []string
	var out []pve.ClusterResource
	listed := map[string]bool{}
	for _, row := range resources {
		switch {
		case row.Type == "node":
			online[row.Node] = row.Status == "online"
		case row.Type == string(typ):
			pools[row.VMID] = row.Pool
			if !listed[row.Node] {
				listed[row.Node] = true
				nodes = append(nodes, row.Node)
			}
		case row.Type == "qemu" || row.Type == "lxc":
			out = append(out, row)
		}
	}
	sort.Strings(nodes)
	// The nodes' lists go out at once (a cluster has few nodes); their rows
	// are put together in node order.
	perNode := make([][]pve.ClusterResource, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	fromResources := func(node string) []pve.ClusterResource {
		var rows []pve.ClusterResource
		for _, row := range resources {
			if row.Type == string(typ) && row.Node == node {
				rows = append(rows, row)
			}
		}
		return rows
	}
	for i, node := range nodes {
		if up, known := online[node]; known && !up {
			perNode[i] = fromResources(node)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, err := cl.NodeGuests(ctx, typ, node)
			if err != nil {
				errs[i] = fmt.Errorf("list %ss of node %s: %w", guestNoun(string(typ)), node, err)
				return
			}
			for j := range rows {
				rows[j].Pool = pools[rows[j].VMID]
			}
			perNode[i] = rows
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if down != nil && engine.IsUnreachable(err) {
			down(nodes[i], engine.UnreachableWhy(err))
			perNode[i], errs[i] = fromResources(nodes[i]), nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, rows := range perNode {
		out = append(out, rows...)
	}
	return out, nil
}

// guestRows reads the connection's current guest rows of type typ once.
func currentGuestRows(lc *engine.LiveConn, ctx context.Context, typ pve.GuestType) ([]pve.ClusterResource, error) {
	ix, err := guestIndexOf(lc, ctx, typ)
	if err != nil {
		return nil, err
	}
	return ix.rows, nil
}

// guestIndex reads the connection's current guest rows of type typ once
// and indexes them.
func guestIndexOf(lc *engine.LiveConn, ctx context.Context, typ pve.GuestType) (*guestIndex, error) {
	if ix, ok := lc.KeptValue(guestsKey(typ)).(*guestIndex); ok {
		return ix, nil
	}
	rows, err := guestRows(ctx, lc.Client, lc.Resources, typ, lc.MarkDown)
	if err != nil {
		return nil, err
	}
	ix := newGuestIndex(typ, rows)
	lc.Keep(guestsKey(typ), ix)
	return ix, nil
}

func (g guest) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	vmid, err := specVMID(r)
	if err != nil {
		return nil, err
	}
	ix, err := guestIndexOf(lc, ctx, g.typ)
	if err != nil {
		return nil, err
	}
	row, err := g.find(ix, r, vmid)
	if err != nil {
		return nil, err
	}
	renamed := ""
	if row == nil && vmid == 0 && r.RenamedFrom() != "" {
		if row, err = g.find(ix, g.renamedFrom(r), 0); err != nil {
			return nil, fmt.Errorf("renamedFrom: %w", err)
		}
		if row != nil {
			renamed = r.RenamedFrom()
		}
	}
	if err := g.guestUnknown(lc, r, ix.rows, row, vmid); err != nil {
		return nil, err
	}
	if row == nil || engine.ParamNode(r) != "" {
		// The desired node must exist even when the guest does (a move).
		node, err := lc.Node(r)
		if err != nil {
			return nil, err
		}
		if row == nil {
			// A create: what the token cannot see must not be taken for absent.
			if err := g.checkCreateVisible(ctx, lc, r, vmid); err != nil {
				return nil, err
			}
			gl := &guestLive{VMID: vmid}
			if vmid == 0 {
				gl.setMore().Stubs = ix.stubs
			}
			return &engine.LiveObj{Node: node, State: gl}, nil
		}
	}
	lo := &engine.LiveObj{Exists: true, Node: row.Node, State: &guestLive{VMID: row.VMID, Status: row.Status, Pool: row.Pool, RenamedFrom: renamed}}
	cl := lc.Client
	lo.Load = func(ctx context.Context) error {
		cfg, err := cl.GuestConfig(ctx, g.typ, lo.Node, row.VMID)
		if err != nil {
			return fmt.Errorf("read config of %s %d: %w", g.noun, row.VMID, err)
		}
		lo.Config, lo.Digest = cfg, cfg.Get("digest")
		return g.loadPlacement(ctx, cl, r, lo)
	}
	return lo, nil
}

// loadPlacement reads, beside a guest's config, what its change may
// need: the keys PVE keeps pending for a running guest with
// rebootOnPending, and for a VM the spec puts on another node what PVE
// says would keep it from migrating there. A token that may not ask the
// latter (VM.Migrate) is told so by the permission check.
func (g guest) loadPlacement(ctx context.Context, cl *pve.Client, r *spec.Resource, lo *engine.LiveObj) error {
	gl := liveOf(lo)
	if lo.Config.Get("lock") != "" {
		return nil // a task is in progress: nothing is planned
	}
	if rop := spec.Guest(r).RebootOnPending; rop != nil && *rop && gl.Status == "running" {
		keys, err := cl.GuestPendingKeys(ctx, g.typ, lo.Node, gl.VMID)
		if err != nil {
			return fmt.Errorf("read pending changes of %s %d: %w", g.noun, gl.VMID, err)
		}
		gl.setMore().Pending = keys
	}
	if want := engine.ParamNode(r); g.checksMigration && want != "" && want != lo.Node {
		mc, err := cl.MigrationCheck(ctx, lo.Node, gl.VMID, want)
		var ae *pve.APIError
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		case err != nil:
			return fmt.Errorf("ask whether %s %d can migrate to %s: %w", g.noun, gl.VMID, want, err)
		default:
			gl.setMore().Migration = mc
		}
	}
	return nil
}

// Current re-reads the guest for Verify. A guest the plan found is read
// where it was (its config, or its absence); a guest the plan creates is
// looked for across the cluster, by vmid in /cluster/resources (current
// for ids) or by name in the current guest rows.
func (g guest) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	st := stateOf(c)
	if c.Action == engine.Create {
		// By vmid in /cluster/resources, by name in the guest rows; both
		// read once per Verify (verifycache.go).
		ix, err := currentGuests(ctx, cl, g.typ, st.VMID == 0)
		if err != nil {
			return nil, err
		}
		row, err := g.find(ix, c.Resource, st.VMID)
		if err != nil {
			return &engine.LiveObj{}, err
		}
		if row == nil {
			if st.VMID == 0 {
				// A guest being created now may be this one: the plan
				// cannot tell yet.
				lo := &engine.LiveObj{State: &guestLive{rare: &guestMore{Stubs: ix.stubs}}}
				if b := g.busy(c.Resource, lo); b != nil {
					return nil, errors.New(b.What + ": " + b.Hint)
				}
			}
			return &engine.LiveObj{}, nil
		}
		return &engine.LiveObj{Exists: true, Node: row.Node}, nil
	}
	node := c.Node
	if st.PrevNode != "" {
		node = st.PrevNode
	}
	if st.VMID == 0 {
		return &engine.LiveObj{}, nil
	}
	cfg, err := cl.GuestConfig(ctx, g.typ, node, st.VMID)
	if pve.IsNotFound(err) {
		return &engine.LiveObj{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &engine.LiveObj{Exists: true, Node: node, Config: cfg, Digest: cfg.Get("digest"), State: &guestLive{VMID: st.VMID}}, nil
}

// guestUnknown judges a guest found (row) or not (nil) while nodes are
// down. A guest on a down node is unknown. One not found is unknown when
// it would be made on a down node, or when it is found by name and a down
// node holds guests of its type whose names PVE no longer has (its
// status data expired: they are listed with status "unknown" only, or
// it was taken before they had one), any of which may be it. Names a down node's guests still have are their
// last known ones: they cannot change while the node is away (every
// config change goes through the node).
func (g guest) guestUnknown(lc *engine.LiveConn, r *spec.Resource, rows []pve.ClusterResource, row *pve.ClusterResource, vmid int) error {
	if len(lc.Down) == 0 {
		return nil
	}
	if row != nil {
		if why := lc.Down[row.Node]; why != "" {
			return engine.Unknown("on node %s, %s", row.Node, why)
		}
		return nil
	}
	if node, err := lc.Node(r); err == nil && lc.Down[node] != "" {
		return engine.Unknown("would be created on node %s, %s", node, lc.Down[node])
	}
	if vmid != 0 {
		return nil // /cluster/resources lists every vmid, down nodes' too
	}
	var nodes []string
	for _, x := range rows {
		if x.Type == string(g.typ) && engine.StaleName(x) && lc.Down[x.Node] != "" && !slices.Contains(nodes, x.Node) {
			nodes = append(nodes, x.Node)
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	slices.Sort(nodes)
	return engine.Unknown("may be on node %s, %s: PVE no longer has the names of the guests there, so a %s named %s may exist already",
		strings.Join(nodes, ", "), lc.Down[nodes[0]], guestNoun(string(g.typ)), g.name(r))
}

// cloneSourceDown: a guest to clone from a template on a down node cannot
// be made (the clone call goes to the template's node).
func cloneSourceDown(lc *engine.LiveConn, src *guestRef, exists bool) error {
	if src == nil || exists {
		return nil
	}
	if why := lc.Down[src.Node]; why != "" {
		return engine.Unknown("would be cloned from VM %d on node %s, %s", src.VMID, src.Node, why)
	}
	return nil
}

func guestRowsRead(lc *engine.LiveConn, typ pve.GuestType) engine.ListRead {
	return engine.ListRead{Key: "guests/" + string(typ), Fetch: func(ctx context.Context) (func(), error) {
		// Reads run at once; what they learn is applied one at a time.
		var down [][2]string
		rows, err := guestRows(ctx, lc.Client, lc.Resources, typ, func(node, why string) { down = append(down, [2]string{node, why}) })
		return func() {
			for _, d := range down {
				lc.MarkDown(d[0], d[1])
			}
			lc.Keep(guestsKey(typ), newGuestIndex(typ, rows))
		}, err
	}}
}

// currentGuests indexes cl's guest rows of typ: with listed, the per-node
// lists (guestRows: current names), else /cluster/resources' rows
// (current vmids). Once per Verify under ctx's cache, else now.
func currentGuests(ctx context.Context, cl *pve.Client, typ pve.GuestType, listed bool) (*guestIndex, error) {
	v, err := engine.VerifyMemo(ctx, guestsRead{cl, typ, listed}, func() (any, error) {
		rows, err := engine.ClusterResources(ctx, cl)
		if err != nil {
			return nil, err
		}
		if listed {
			if rows, err = guestRows(ctx, cl, rows, typ, nil); err != nil {
				return nil, err
			}
		}
		return newGuestIndex(typ, rows), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*guestIndex), nil
}

// guestsRead names one guest index a Verify reads once: cl's guests of
// typ; listed: from the per-node guest lists (guestRows), else from
// /cluster/resources as it is.
type guestsRead struct {
	cl     *pve.Client
	typ    pve.GuestType
	listed bool
}

// guestsKey is where a connection keeps its guest index of typ.
func guestsKey(typ pve.GuestType) string { return "guests/" + string(typ) }

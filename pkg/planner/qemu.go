package planner

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// qemuKind manages QemuVM: identity is vmid if set, else the VM name.
type qemuKind struct{}

const qemuCreatePath = "/nodes/{node}/qemu"

// qemuNotInConfig are create parameters PVE does not keep in the VM config:
// they steer the create call only (pool membership is read from
// /cluster/resources and compared apart).
var qemuNotInConfig = map[string]bool{
	"node": true, "vmid": true, "pool": true, "start": true, "storage": true,
	"unique": true, "archive": true, "live-restore": true, "bwlimit": true,
	"import-working-storage": true, "force": true, "ha-managed": true,
}

// createIDTries bounds how often a create retries with a fresh vmid when
// /cluster/nextid raced with someone else.
const createIDTries = 5

// shutdownTimeout is how long (seconds) a guest gets to shut down before
// PVE stops it hard.
const shutdownTimeout = 180

func (qemuKind) role() kindRole { return roleOther }

func specVMID(r *spec.Resource) (int, error) {
	v := r.Params["vmid"]
	if v == "" {
		return 0, nil
	}
	id, err := strconv.Atoi(v)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("vmid %q is not a positive integer", v)
	}
	return id, nil
}

func vmName(r *spec.Resource) string {
	if n := r.Params["name"]; n != "" {
		return n
	}
	return r.Name
}

// findQemu picks r's row from /cluster/resources: by vmid, else by name
// among VMs that are not templates.
func findQemu(rows []pve.ClusterResource, r *spec.Resource, vmid int) (*pve.ClusterResource, error) {
	if vmid != 0 {
		for i := range rows {
			if rows[i].VMID != vmid {
				continue
			}
			switch rows[i].Type {
			case "qemu":
				return &rows[i], nil
			case "lxc":
				return nil, fmt.Errorf("vmid %d is a container, not a VM", vmid)
			}
		}
		return nil, nil
	}
	name := vmName(r)
	var found []*pve.ClusterResource
	for i := range rows {
		if rows[i].Type == "qemu" && !rows[i].Template && rows[i].Name == name {
			found = append(found, &rows[i])
		}
	}
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
	return nil, fmt.Errorf("name %s matches VMs %s and %s: set vmid", name, strings.Join(ids[:len(ids)-1], ", "), ids[len(ids)-1])
}

func (qemuKind) observe(ctx context.Context, lc *liveConn, r *spec.Resource) (*liveObj, error) {
	vmid, err := specVMID(r)
	if err != nil {
		return nil, err
	}
	row, err := findQemu(lc.resources, r, vmid)
	if err != nil {
		return nil, err
	}
	if row == nil || paramNode(r) != "" {
		// The desired node must exist even when the VM does (a move).
		node, err := lc.node(r)
		if err != nil {
			return nil, err
		}
		if row == nil {
			return &liveObj{Node: node, VMID: vmid}, nil
		}
	}
	lo := &liveObj{Exists: true, Node: row.Node, VMID: row.VMID, Status: row.Status, Pool: row.Pool}
	cl := lc.client
	lo.load = func(ctx context.Context) error {
		cfg, err := cl.QemuConfig(ctx, lo.Node, lo.VMID)
		if err != nil {
			return fmt.Errorf("read config of vm %d: %w", lo.VMID, err)
		}
		lo.Config, lo.Digest = cfg, cfg["digest"]
		return nil
	}
	return lo, nil
}

// qemuOwnKeys are the pvectl keys this planner carries out; the others
// (image, ip, provision…) are refused rather than silently ignored.
var qemuOwnKeys = map[string]bool{"running": true}

func (qemuKind) plan(b *builder, r *spec.Resource, lo *liveObj) (*Change, error) {
	c := &Change{Node: lo.Node, VMID: lo.VMID, Digest: lo.Digest}
	if !b.opts.Destroy && r.State != spec.Absent {
		for _, k := range slices.Sorted(maps.Keys(r.Own)) {
			if !qemuOwnKeys[k] {
				return nil, fmt.Errorf("%s: spec key %s is not supported by the planner yet", r.Address(), k)
			}
		}
	}
	if handled, err := b.lifecycle(r, lo, c); handled {
		return c, err
	}
	if lock := lo.Config["lock"]; lock != "" {
		c.Action, c.Reasons = NoOp, []string{"locked (" + lock + "): a task is in progress"}
		return c, nil
	}
	if want := paramNode(r); want != "" && want != lo.Node {
		c.PrevNode, c.Node = lo.Node, want
		c.Diff = []FieldDiff{{Path: "node", Before: lo.Node, After: want}}
		return c, b.replace(r, c, fmt.Sprintf("node changed: %s → %s", lo.Node, want))
	}
	cmp := comparer{m: b.method("POST", qemuCreatePath)}
	c.Diff = cmp.diffParams(r.Params, r.Remove, lo.Config, qemuNotInConfig)
	for _, d := range c.Diff {
		if strings.HasSuffix(d.Path, ".storage") {
			return c, b.replace(r, c, topKey(d.Path)+" moves to another storage")
		}
		if strings.HasSuffix(d.Path, ".size") {
			before, _ := d.Before.(string)
			after, _ := d.After.(string)
			x, ok1 := parseSize(before)
			y, ok2 := parseSize(after)
			if ok1 && ok2 && y < x {
				return nil, fmt.Errorf("%s: %s: PVE cannot shrink a disk (%s → %s)", r.Address(), topKey(d.Path), before, after)
			}
		}
	}
	c.Params = cmp.updateParams(c.Diff, r.Params, lo.Config, isResize)
	if len(c.Params) == 0 {
		c.Params = nil
	}
	if d, ok := poolDiff(r, lo.Pool); ok {
		c.Diff = append(c.Diff, d)
	}
	c.Reasons = reasons(c.Diff)
	if want, ok := ownBool(r, "running"); ok {
		if got := lo.Status == "running"; got != want {
			c.Diff = append(c.Diff, FieldDiff{Path: "running", Before: got, After: want})
			c.Reasons = append(c.Reasons, fmt.Sprintf("power state %s, wanted %s", lo.Status, powerWord(want)))
		}
	}
	if len(c.Diff) > 0 {
		c.Action = Update
	} else {
		c.Action = NoOp
	}
	return c, nil
}

func isResize(d FieldDiff) bool { return strings.HasSuffix(d.Path, ".size") }

// poolDiff compares the VM's pool membership (a create parameter that PVE
// keeps in the pool, not in the config) with the spec's `pool`.
func poolDiff(r *spec.Resource, live string) (FieldDiff, bool) {
	want, set := r.Params["pool"]
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
		return FieldDiff{Path: "pool", Before: before, After: want}, true
	case removing && live != "":
		return FieldDiff{Path: "pool", Before: live, After: nil}, true
	}
	return FieldDiff{}, false
}

// movePool puts the VM into the pool d.After, or takes it out of d.Before.
func movePool(ctx context.Context, x *execution, vmid int, d FieldDiff) error {
	id := strconv.Itoa(vmid)
	if to, ok := d.After.(string); ok && to != "" {
		x.msg("moving vm %d into pool %s", vmid, to)
		return x.client.UpdatePool(ctx, url.Values{"poolid": {to}, "vms": {id}, "allow-move": {"1"}})
	}
	from, _ := d.Before.(string)
	x.msg("taking vm %d out of pool %s", vmid, from)
	return x.client.UpdatePool(ctx, url.Values{"poolid": {from}, "vms": {id}, "delete": {"1"}})
}

func powerWord(running bool) string {
	if running {
		return "running"
	}
	return "stopped"
}

func (k qemuKind) apply(ctx context.Context, x *execution, c *Change) error {
	switch c.Action {
	case Create:
		return k.create(ctx, x, c)
	case Update:
		return k.update(ctx, x, c)
	case Delete:
		return k.destroy(ctx, x, c.Node, c.VMID)
	case Replace:
		from := c.PrevNode
		if from == "" {
			from = c.Node
		}
		if err := k.destroy(ctx, x, from, c.VMID); err != nil {
			return err
		}
		return k.create(ctx, x, c)
	}
	return nil
}

func (qemuKind) create(ctx context.Context, x *execution, c *Change) error {
	r := c.Resource
	params := url.Values{}
	for k, v := range r.Params {
		if k != "node" {
			params.Set(k, v)
		}
	}
	fixed, err := specVMID(r)
	if err != nil {
		return err
	}
	if fixed == 0 && c.VMID != 0 { // a replace keeps the vmid it frees
		fixed = c.VMID
	}
	for try := 1; ; try++ {
		vmid := fixed
		if vmid == 0 {
			if vmid, err = freeVMID(ctx, x); err != nil {
				return fmt.Errorf("next free vmid: %w", err)
			}
		}
		params.Set("vmid", strconv.Itoa(vmid))
		x.msg("creating vm %d on node %s", vmid, c.Node)
		err = x.client.CreateQemu(ctx, c.Node, params)
		if err == nil {
			c.VMID = vmid
			break
		}
		if fixed != 0 || try >= createIDTries || !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("create vm %d: %w", vmid, err)
		}
		x.msg("vmid %d was taken meanwhile, retrying with a new one", vmid)
	}
	if want, ok := ownBool(r, "running"); ok && want {
		x.msg("starting vm %d", c.VMID)
		if err := x.client.QemuPower(ctx, c.Node, c.VMID, "start", nil); err != nil {
			return fmt.Errorf("start vm %d: %w", c.VMID, err)
		}
	}
	return nil
}

// freeVMID asks PVE for the next free vmid, stepping over the ones other
// VMs of the plan are pinned to (they may not exist yet). Bounded.
func freeVMID(ctx context.Context, x *execution) (int, error) {
	id, err := x.client.NextID(ctx)
	if err != nil {
		return 0, err
	}
	for n := 0; n < 1000; n, id = n+1, id+1 {
		if x.reserved[id] {
			continue
		}
		if n == 0 {
			return id, nil // NextID said it is free
		}
		free, err := x.client.VMIDFree(ctx, id)
		if err != nil {
			return 0, err
		}
		if free {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no free vmid found after %d", id)
}

func (qemuKind) update(ctx context.Context, x *execution, c *Change) error {
	if len(c.Params) > 0 {
		params := url.Values{}
		for k, v := range c.Params {
			params.Set(k, v)
		}
		if c.Digest != "" {
			params.Set("digest", c.Digest)
		}
		if err := x.client.UpdateQemu(ctx, c.Node, c.VMID, params); err != nil {
			return fmt.Errorf("update vm %d: %w", c.VMID, err)
		}
		// On a running VM PVE keeps what it cannot hot-plug pending; say so
		// rather than reboot the VM behind the user's back.
		if keys, err := x.client.QemuPendingKeys(ctx, c.Node, c.VMID); err == nil && len(keys) > 0 {
			x.msg("pending until vm %d restarts: %s", c.VMID, strings.Join(keys, ", "))
		}
	}
	for _, d := range c.Diff {
		if d.Path != "pool" {
			continue
		}
		if err := movePool(ctx, x, c.VMID, d); err != nil {
			return fmt.Errorf("pool of vm %d: %w", c.VMID, err)
		}
	}
	for _, d := range c.Diff {
		if !isResize(d) {
			continue
		}
		size, _ := d.After.(string)
		disk := topKey(d.Path)
		path := fmt.Sprintf("/nodes/%s/qemu/%d/resize", url.PathEscape(c.Node), c.VMID)
		if err := x.client.RunTask(ctx, "PUT", path, url.Values{"disk": {disk}, "size": {size}}); err != nil {
			return fmt.Errorf("resize %s of vm %d: %w", disk, c.VMID, err)
		}
	}
	for _, d := range c.Diff {
		if d.Path != "running" {
			continue
		}
		// running: false asks the guest to shut down (ACPI), and stops it
		// hard only if it has not within the timeout, as an operator would.
		action, params := "shutdown", url.Values{"timeout": {strconv.Itoa(shutdownTimeout)}, "forceStop": {"1"}}
		if want, _ := d.After.(bool); want {
			action, params = "start", nil
		}
		x.msg("%s vm %d", action, c.VMID)
		if err := x.client.QemuPower(ctx, c.Node, c.VMID, action, params); err != nil {
			return fmt.Errorf("%s vm %d: %w", action, c.VMID, err)
		}
	}
	return nil
}

func (qemuKind) destroy(ctx context.Context, x *execution, node string, vmid int) error {
	st, err := x.client.QemuStatus(ctx, node, vmid)
	if pve.IsNotFound(err) {
		x.msg("vm %d is already gone", vmid)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read status of vm %d: %w", vmid, err)
	}
	if st.Status == "running" {
		x.msg("stopping vm %d", vmid)
		if err := x.client.QemuPower(ctx, node, vmid, "stop", nil); err != nil {
			return fmt.Errorf("stop vm %d: %w", vmid, err)
		}
	}
	x.msg("deleting vm %d", vmid)
	if err := x.client.DeleteQemu(ctx, node, vmid); err != nil {
		return fmt.Errorf("delete vm %d: %w", vmid, err)
	}
	return nil
}

func (qemuKind) current(ctx context.Context, cl *pve.Client, c *Change) (*liveObj, error) {
	rows, err := cl.ClusterResources(ctx, "vm")
	if err != nil {
		return nil, err
	}
	row, err := findQemu(rows, c.Resource, c.VMID)
	if err != nil || row == nil {
		return &liveObj{}, err
	}
	cfg, err := cl.QemuConfig(ctx, row.Node, row.VMID)
	if pve.IsNotFound(err) {
		return &liveObj{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &liveObj{Exists: true, Node: row.Node, VMID: row.VMID, Config: cfg, Digest: cfg["digest"], Pool: row.Pool}, nil
}

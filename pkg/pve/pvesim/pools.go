package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func (s *Server) poolRoutes() []route {
	// PUT and DELETE /pools (poolid a parameter) serve as those of /pools/{poolid}.
	return append(crudRoutes("/pools", "/{poolid}", s.listPools, s.createPool, s.getPool, s.updatePool, s.deletePool),
		r("PUT /pools", s.updatePool),
		r("DELETE /pools", s.deletePool))
}

func poolID(q *request) string {
	if id, ok := q.vars["poolid"]; ok {
		return id
	}
	return q.get("poolid")
}

func (s *Server) poolByID(id string) (*pool, error) {
	p, ok := s.st.Pools[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "pool '%s' does not exist", id)
	}
	return p, nil
}

// poolMembers is the members list of Pool.pm index: guests in the order
// of Perl's string sort of their VMIDs ("100" before "99"), then each
// storage once (API2Tools.pm extract_storage_stats), on the node answering
// the call unless the storage's nodes leave it out; then on the first of
// those in name order.
func (s *Server) poolMembers(p *pool, typ string) []map[string]any {
	out := []map[string]any{}
	for _, id := range perlSortedVMIDs(p.VMs) {
		v, ok := s.st.VMs[id]
		if !ok {
			continue
		}
		if row := poolVMRow(s.vmResource(v)); typ == "" || row["type"] == typ {
			out = append(out, row)
		}
	}
	if typ != "" && typ != "storage" {
		return out
	}
	for _, sid := range slices.Sorted(slices.Values(p.Storages)) {
		st, ok := s.st.Storages[sid]
		if !ok {
			continue
		}
		node := ""
		if len(s.st.Nodes) > 0 {
			node = s.st.Nodes[0]
		}
		if len(st.Nodes) > 0 && !slices.Contains(st.Nodes, node) {
			node = slices.Min(st.Nodes)
		}
		row := map[string]any{
			"id": "storage/" + node + "/" + sid, "type": "storage", "node": node, "storage": sid,
			"status": "unknown", "content": joinContent(st.Content), "plugintype": st.Type, "shared": b2i(st.Shared),
		}
		if s.st.hasNode(node) {
			// Only a node that reports the storage has its RRD data.
			row["status"], row["disk"], row["maxdisk"] = "available", s.storageUsed(sid), st.Total
		}
		out = append(out, row)
	}
	return out
}

// vmStatKeys are the keys of pve-manager API2Tools.pm extract_vm_stats:
// the vmlist's and the RRD's, none of a guest's config (tags, lock, pool)
// that /cluster/resources adds.
var vmStatKeys = []string{"id", "vmid", "node", "type", "status", "uptime", "name", "template",
	"maxcpu", "cpu", "maxmem", "mem", "maxdisk", "disk", "netin", "netout", "diskread", "diskwrite", "memhost"}

func poolVMRow(res map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range vmStatKeys {
		if v, ok := res[k]; ok {
			out[k] = v
		}
	}
	return out
}

// perlSortedVMIDs orders VMIDs as Perl's `sort keys` does: as strings.
func perlSortedVMIDs(ids []int) []int {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	return out
}

func (s *Server) listPools(q *request) (any, error) {
	out := []map[string]any{}
	if id := q.get("poolid"); id != "" {
		p, err := s.poolByID(id)
		if err != nil {
			return nil, err
		}
		row := map[string]any{"poolid": p.ID, "members": s.poolMembers(p, q.get("type"))}
		if p.Comment != "" {
			row["comment"] = p.Comment
		}
		return append(out, row), nil
	}
	for _, id := range slices.Sorted(maps.Keys(s.st.Pools)) {
		// pve-manager API2/Pool.pm index: only pools the caller may audit
		// (with a poolid it checks, but ignores the answer).
		if !s.can(q.user, "/pool/"+id, "Pool.Audit") {
			continue
		}
		p := s.st.Pools[id]
		row := map[string]any{"poolid": p.ID}
		if p.Comment != "" {
			row["comment"] = p.Comment
		}
		out = append(out, row)
	}
	return out, nil
}

func (s *Server) getPool(q *request) (any, error) {
	p, err := s.poolByID(poolID(q))
	if err != nil {
		return nil, err
	}
	// Pool.pm read_pool answers index's row, poolid included, against its
	// own return schema (additionalProperties 0).
	m := map[string]any{"poolid": p.ID, "members": s.poolMembers(p, q.get("type"))}
	if p.Comment != "" {
		m["comment"] = p.Comment
	}
	return m, nil
}

// createPool is pve-manager PVE/API2/Pool.pm create_pool.
func (s *Server) createPool(q *request) (any, error) {
	id := q.get("poolid")
	if id == "" {
		return nil, paramErr1("poolid", "property is missing and it is not optional")
	}
	failed := func(format string, args ...any) error {
		return fail(http.StatusInternalServerError, "create pool failed: "+format, args...)
	}
	if _, exists := s.st.Pools[id]; exists {
		return nil, failed("pool '%s' already exists", id)
	}
	leaf := id
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		parent := id[:i]
		if _, ok := s.st.Pools[parent]; !ok {
			return nil, failed("parent '%s' of pool '%s' does not exist", parent, id)
		}
		leaf = id[i+1:]
	}
	if c := leaf[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return nil, failed("pool name must start with a letter")
	}
	s.st.Pools[id] = &pool{ID: id, Comment: poolComment(q.get("comment"))}
	return nil, nil
}

// updatePool is Pool.pm update_pool: all of it under the user.cfg lock, so
// the first refusal ("update pools failed: …") leaves the pool unchanged.
// PVE does not check that a VM or storage exists (only the permission to
// modify its path); it refuses a member added twice, a VM of another pool
// without allow-move, and removing what is not a member.
func (s *Server) updatePool(q *request) (any, error) {
	failed := func(format string, args ...any) error {
		return fail(http.StatusInternalServerError, "update pools failed: "+format, args...)
	}
	p, ok := s.st.Pools[poolID(q)]
	if !ok {
		return nil, failed("pool '%s' does not exist", poolID(q))
	}
	del := q.bool("delete")
	vms := slices.Clone(p.VMs)
	moved := map[int]string{} // vmid -> the pool it leaves
	for _, x := range schema.SplitList(q.get("vms")) {
		id, err := strconv.Atoi(x)
		if err != nil {
			return nil, paramErr1("vms", "invalid format - value does not look like a valid VM ID")
		}
		// Pool.pm update_pool: the caller must be allowed to change the
		// member's permissions, and to take it out of its old pool.
		if err := s.checkPermModify(q.user, "/vms/"+x); err != nil {
			return nil, err
		}
		if other := s.st.vmPool(id); !del && other != "" && other != p.ID && q.bool("allow-move") {
			if err := s.check(q.user, "/pool/"+other, "Pool.Allocate"); err != nil {
				return nil, err
			}
		}
		member := slices.Contains(vms, id)
		switch {
		case del && !member:
			return nil, failed("VM %d is not a pool member", id)
		case del:
			vms = removeValue(vms, id)
		case member:
			return nil, failed("VM %d is already a pool member", id)
		default:
			if other := s.st.vmPool(id); other != "" && other != p.ID {
				if !q.bool("allow-move") {
					return nil, failed("VM %d belongs already to pool '%s' and 'allow-move' is not set", id, other)
				}
				moved[id] = other
			}
			vms = append(vms, id)
		}
	}
	storages := slices.Clone(p.Storages)
	for _, sid := range schema.SplitList(q.get("storage")) {
		if err := s.checkPermModify(q.user, "/storage/"+sid); err != nil {
			return nil, err
		}
		member := slices.Contains(storages, sid)
		switch {
		case del && !member:
			return nil, failed("Storage '%s' is not a pool member", sid)
		case del:
			storages = removeValue(storages, sid)
		case member:
			return nil, failed("Storage '%s' is already a pool member", sid)
		default:
			storages = append(storages, sid)
		}
	}
	if q.has("comment") {
		p.Comment = poolComment(q.get("comment"))
	}
	for id, from := range moved {
		s.st.Pools[from].VMs = removeValue(s.st.Pools[from].VMs, id)
	}
	p.VMs, p.Storages = vms, storages
	return nil, nil
}

// poolComment is a comment as user.cfg keeps it: AccessControl.pm
// parse_user_config (and Pool.pm create_pool) take it only when Perl
// holds it true, so "0" is no comment, like "".
func poolComment(c string) string {
	if c == "0" {
		return ""
	}
	return c
}

// deletePool is Pool.pm delete_pool: a pool with sub-pools, guests that
// still exist or storages still configured is not empty.
func (s *Server) deletePool(q *request) (any, error) {
	id := poolID(q)
	failed := func(format string, args ...any) error {
		return fail(http.StatusInternalServerError, "delete pool failed: "+format, args...)
	}
	p, ok := s.st.Pools[id]
	if !ok {
		return nil, failed("pool '%s' does not exist", id)
	}
	for _, sub := range slices.Sorted(maps.Keys(s.st.Pools)) {
		if strings.HasPrefix(sub, id+"/") && !strings.Contains(sub[len(id)+1:], "/") {
			return nil, failed("pool '%s' is not empty (contains pool '%s')", id, sub)
		}
	}
	// Like pve-access-control, name the first member that is in the way.
	for _, vmid := range perlSortedVMIDs(p.VMs) {
		if _, exists := s.st.VMs[vmid]; exists {
			return nil, failed("pool '%s' is not empty (contains VM %d)", id, vmid)
		}
	}
	storages := slices.Clone(p.Storages)
	slices.Sort(storages)
	for _, sid := range storages {
		if _, exists := s.st.Storages[sid]; exists {
			return nil, failed("pool '%s' is not empty (contains storage '%s')", id, sid)
		}
	}
	delete(s.st.Pools, id)
	// AccessControl.pm delete_pool_acl drops the ACL node of a top-level
	// pool only: it looks "a/b" up as one child of /pool, where the ACL
	// tree has "a" then "b", so a nested pool's ACLs stay behind.
	if !strings.Contains(id, "/") {
		s.dropACLTree("/pool/" + id)
	}
	return nil, nil
}

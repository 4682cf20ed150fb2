package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func (s *Server) poolRoutes() []route {
	return []route{
		r("GET /pools", s.listPools),
		r("POST /pools", s.createPool),
		r("PUT /pools", s.updatePool),
		r("DELETE /pools", s.deletePool),
		r("GET /pools/{poolid}", s.getPool),
		r("PUT /pools/{poolid}", s.updatePool),
		r("DELETE /pools/{poolid}", s.deletePool),
	}
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

func (s *Server) poolMembers(p *pool, typ string) []map[string]any {
	out := []map[string]any{}
	ids := append([]int(nil), p.VMs...)
	sort.Ints(ids)
	for _, id := range ids {
		v, ok := s.st.VMs[id]
		if !ok {
			continue
		}
		if row := s.vmResource(v); typ == "" || row["type"] == typ {
			out = append(out, row)
		}
	}
	if typ == "" || typ == "storage" {
		for _, sid := range p.Storages {
			st, ok := s.st.Storages[sid]
			if !ok {
				continue
			}
			for _, n := range s.st.Nodes {
				if st.onNode(n) {
					out = append(out, map[string]any{
						"id": "storage/" + n + "/" + sid, "type": "storage", "node": n, "storage": sid,
						"status": "available", "content": joinContent(st.Content), "plugintype": st.Type,
						"shared": b2i(st.Shared), "disk": s.storageUsed(sid), "maxdisk": st.Total,
					})
				}
			}
		}
	}
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
	m := map[string]any{"members": s.poolMembers(p, q.get("type"))}
	if p.Comment != "" {
		m["comment"] = p.Comment
	}
	return m, nil
}

func (s *Server) createPool(q *request) (any, error) {
	id := q.get("poolid")
	if id == "" {
		return nil, paramErr1("poolid", "property is missing and it is not optional")
	}
	if _, exists := s.st.Pools[id]; exists {
		return nil, fail(http.StatusInternalServerError, "create pool failed: pool '%s' already exists", id)
	}
	s.st.Pools[id] = &pool{ID: id, Comment: q.get("comment")}
	return nil, nil
}

func (s *Server) updatePool(q *request) (any, error) {
	p, err := s.poolByID(poolID(q))
	if err != nil {
		return nil, err
	}
	del := q.bool("delete")
	var vmids []int
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
		if _, ok := s.st.VMs[id]; !ok && !del {
			return nil, fail(http.StatusInternalServerError, "update pool failed: VM %d does not exist", id)
		}
		if other := s.st.vmPool(id); !del && other != "" && other != p.ID && !q.bool("allow-move") {
			return nil, fail(http.StatusInternalServerError, "update pool failed: VM %d belongs already to pool '%s'", id, other)
		}
		vmids = append(vmids, id)
	}
	storages := schema.SplitList(q.get("storage"))
	for _, sid := range storages {
		if err := s.checkPermModify(q.user, "/storage/"+sid); err != nil {
			return nil, err
		}
		if _, ok := s.st.Storages[sid]; !ok && !del {
			return nil, fail(http.StatusInternalServerError, "update pool failed: storage '%s' does not exist", sid)
		}
	}
	if q.has("comment") {
		p.Comment = q.get("comment")
	}
	for _, id := range vmids {
		if del {
			p.VMs = removeInt(p.VMs, id)
			continue
		}
		s.st.removeFromPools(id)
		p.VMs = append(p.VMs, id)
	}
	for _, sid := range storages {
		p.Storages = removeString(p.Storages, sid)
		if !del {
			p.Storages = append(p.Storages, sid)
		}
	}
	return nil, nil
}

func (s *Server) deletePool(q *request) (any, error) {
	p, err := s.poolByID(poolID(q))
	if err != nil {
		return nil, err
	}
	// Like pve-access-control, name the first member that is in the way.
	if len(p.VMs) > 0 {
		return nil, fail(http.StatusInternalServerError, "delete pool failed: pool '%s' is not empty (contains VM %d)", p.ID, slices.Min(p.VMs))
	}
	if len(p.Storages) > 0 {
		return nil, fail(http.StatusInternalServerError, "delete pool failed: pool '%s' is not empty (contains storage '%s')", p.ID, slices.Min(p.Storages))
	}
	delete(s.st.Pools, p.ID)
	return nil, nil
}

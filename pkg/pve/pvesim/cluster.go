package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

const (
	nodeCPUs = 8
	nodeMem  = 32 * gib
)

func (s *Server) clusterRoutes() []route {
	return []route{
		r("GET /version", s.getVersion),
		r("GET /nodes", s.listNodes),
		r("GET /nodes/{node}/status", s.nodeStatus),
		r("GET /cluster/resources", s.clusterResources),
		r("GET /cluster/nextid", s.nextID),
	}
}

func (s *Server) getVersion(q *request) (any, error) {
	return map[string]any{"version": "9.1.1", "release": "9.1", "repoid": "42db4a6cf33dac83", "console": "xtermjs"}, nil
}

func (s *Server) nodeUptime(node string) int64 {
	return time.Now().Unix() - s.st.Boot[node]
}

// nodeMemUsed is a plausible figure: a base plus the running guests.
func (s *Server) nodeMemUsed(node string) int64 {
	used := 2 * gib
	for _, v := range s.st.VMs {
		if v.Node == node && v.Running {
			used += vmMaxMem(v.Conf)
		}
	}
	return min(used, nodeMem)
}

func (s *Server) listNodes(q *request) (any, error) {
	out := []map[string]any{}
	for _, n := range s.st.Nodes {
		out = append(out, map[string]any{
			"node": n, "status": "online", "cpu": 0.02, "maxcpu": nodeCPUs,
			"mem": s.nodeMemUsed(n), "maxmem": nodeMem, "uptime": s.nodeUptime(n), "level": "",
		})
	}
	return out, nil
}

func (s *Server) nodeStatus(q *request) (any, error) {
	n := q.vars["node"]
	used := s.nodeMemUsed(n)
	return map[string]any{
		"boot-info": map[string]any{"mode": "efi", "secureboot": 0},
		"cpu":       0.02,
		"cpuinfo":   map[string]any{"cores": nodeCPUs / 2, "cpus": nodeCPUs, "model": "Simulated CPU", "sockets": 1},
		"current-kernel": map[string]any{"machine": "x86_64", "release": "6.17.2-1-pve",
			"sysname": "Linux", "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1"},
		"loadavg":    []string{"0.10", "0.08", "0.05"},
		"memory":     map[string]any{"total": nodeMem, "used": used, "free": nodeMem - used, "available": nodeMem - used},
		"pveversion": "pve-manager/9.1.1/42db4a6cf33dac83",
		"rootfs":     map[string]any{"total": 100 * gib, "used": 10 * gib, "free": 90 * gib, "avail": 85 * gib},
		"uptime":     s.nodeUptime(n),
	}, nil
}

func (s *Server) clusterResources(q *request) (any, error) {
	typ := q.get("type")
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		for _, id := range s.st.vmIDs() {
			out = append(out, s.vmResource(s.st.VMs[id]))
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range s.st.Nodes {
			out = append(out, map[string]any{
				"id": "node/" + n, "type": "node", "node": n, "status": "online", "cpu": 0.02,
				"maxcpu": nodeCPUs, "mem": s.nodeMemUsed(n), "maxmem": nodeMem, "disk": 10 * gib,
				"maxdisk": 100 * gib, "uptime": s.nodeUptime(n), "level": "", "cgroup-mode": 2,
			})
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.st.Nodes {
			for _, id := range slices.Sorted(maps.Keys(s.st.Storages)) {
				st := s.st.Storages[id]
				if !st.onNode(n) {
					continue
				}
				out = append(out, map[string]any{
					"id": "storage/" + n + "/" + id, "type": "storage", "node": n, "storage": id,
					"status": "available", "content": joinContent(st.Content), "plugintype": st.Type,
					"shared": b2i(st.Shared), "disk": s.storageUsed(id), "maxdisk": st.Total,
				})
			}
		}
	}
	if typ == "" {
		for _, id := range slices.Sorted(maps.Keys(s.st.Pools)) {
			out = append(out, map[string]any{"id": "/pool/" + id, "type": "pool", "pool": id})
		}
	}
	return out, nil
}

func (s *Server) nextID(q *request) (any, error) {
	if q.has("vmid") {
		id, err := strconv.Atoi(q.get("vmid"))
		if err != nil || id < 100 || id > 999999999 {
			return nil, paramErr1("vmid", "invalid format - value must be a valid VM ID")
		}
		if _, taken := s.st.VMs[id]; taken {
			return nil, paramErr1("vmid", "VM %d already exists", id)
		}
		// Real PVE answers the id as a JSON string although its schema says
		// integer; the simulator follows the schema (the client takes both).
		return id, nil
	}
	for id := 100; id <= 999999999; id++ {
		if _, taken := s.st.VMs[id]; !taken {
			return id, nil
		}
	}
	return nil, fail(http.StatusInternalServerError, "unable to get any free VMID in range [100, 999999999]")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

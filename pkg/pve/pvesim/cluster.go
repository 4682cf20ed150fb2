package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

const (
	nodeCPUs     = 8
	nodeMem      = 32 * gib
	nodeDisk     = 100 * gib // the root file system
	nodeDiskUsed = 10 * gib
)

func (s *Server) clusterRoutes() []route {
	return []route{
		r("GET /version", s.getVersion),
		r("GET /nodes", s.listNodes),
		r("GET /nodes/{node}/status", s.nodeStatus),
		r("GET /cluster/resources", s.clusterResources),
		r("GET /cluster/nextid", s.nextID),
		r("GET /cluster/status", s.clusterStatus),
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

// listNodes is pve-manager PVE/API2/Nodes.pm index: API2Tools.pm
// extract_node_stats (id, type, the usage figures from the node's status
// data) and the node certificate's fingerprint.
func (s *Server) listNodes(q *request) (any, error) {
	out := []map[string]any{}
	for _, n := range s.st.Nodes {
		row := s.offlineNodeStats(n, s.nodeStats(n))
		row["ssl_fingerprint"] = s.nodeFingerprint(n)
		out = append(out, s.hideNodeStats(q.user, n, row))
	}
	return out, nil
}

// nodeStats is a node as API2Tools.pm extract_node_stats reports it, in
// GET /nodes and the node rows of /cluster/resources.
func (s *Server) nodeStats(n string) map[string]any {
	return map[string]any{
		"id": "node/" + n, "type": "node", "node": n, "status": "online", "cpu": 0.02,
		"maxcpu": nodeCPUs, "mem": s.nodeMemUsed(n), "maxmem": nodeMem, "disk": nodeDiskUsed,
		"maxdisk": nodeDisk, "uptime": s.nodeUptime(n), "level": "",
	}
}

// nodeFingerprint is the SHA-256 fingerprint of a node's certificate: the
// one the simulator serves when it has one (every node answers on the
// same listener), else one made from the node's name, as every PVE node
// has a certificate.
func (s *Server) nodeFingerprint(n string) string {
	if s.opts.Fingerprint != "" {
		return s.opts.Fingerprint
	}
	return Fingerprint([]byte("pvesim node certificate " + n))
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
		"rootfs":     map[string]any{"total": nodeDisk, "used": nodeDiskUsed, "free": nodeDisk - nodeDiskUsed, "avail": 85 * gib},
		"uptime":     s.nodeUptime(n),
	}, nil
}

// clusterStatus is pve-manager PVE/API2/Cluster.pm get_status. A single
// node is a standalone host: its one fake entry has nodeid 0 and no
// cluster row. Several nodes form the cluster "pvesim", whose corosync
// config has been bumped once per node (pvecm create, then one pvecm add
// each); the node that answers is the first.
func (s *Server) clusterStatus(q *request) (any, error) {
	nodes := s.st.Nodes
	row := func(n string, id int) map[string]any {
		return map[string]any{
			"type": "node", "id": "node/" + n, "name": n, "nodeid": id, "ip": s.nodeIP(n),
			"local": b2i(n == nodes[0]), "online": b2i(!s.nodeOffline(n)), "level": "",
		}
	}
	if len(nodes) == 1 {
		return []map[string]any{row(nodes[0], 0)}, nil
	}
	out := []map[string]any{{
		"type": "cluster", "id": "cluster", "name": "pvesim",
		"nodes": len(nodes), "version": len(nodes), "quorate": 1,
	}}
	for i, n := range nodes {
		out = append(out, row(n, i+1))
	}
	return out, nil
}

func (s *Server) clusterResources(q *request) (any, error) {
	typ := q.get("type")
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		// pve-manager API2/Cluster.pm resources lists only what the caller
		// may audit, silently: guests, nodes' figures, storages, pools.
		for _, id := range s.st.vmIDs() {
			if s.can(q.user, "/vms/"+vmidString(id), "VM.Audit") {
				out = append(out, s.hidePool(q.user, s.vmResource(s.st.VMs[id])))
			}
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range s.st.Nodes {
			row := s.offlineNodeStats(n, s.nodeStats(n))
			row["cgroup-mode"] = 2
			out = append(out, s.hideNodeStats(q.user, n, row))
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.st.Nodes {
			for _, id := range slices.Sorted(maps.Keys(s.st.Storages)) {
				st := s.st.Storages[id]
				if !st.onNode(n) || !s.can(q.user, "/storage/"+id, "Datastore.Audit") {
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
			if s.can(q.user, "/pool/"+id, "Pool.Audit") {
				out = append(out, map[string]any{"id": "/pool/" + id, "type": "pool", "pool": id})
			}
		}
		// PVE 9.1 lists SDN zones as type "network", without a filter only.
		out = append(out, s.sdnResources(q.user)...)
	}
	return out, nil
}

// nextID is pve-manager PVE/API2/Cluster.pm nextid. PVE answers the id as
// a JSON string although its schema says integer: a requested vmid is
// returned as the string it came as, and a found one was used as a hash
// key first, which makes Perl's JSON write it as a string too.
func (s *Server) nextID(q *request) (any, error) {
	if q.has("vmid") {
		id, err := strconv.Atoi(q.get("vmid"))
		if err != nil || id < 100 || id > 999999999 {
			return nil, paramErr1("vmid", "invalid format - value must be a valid VM ID")
		}
		if _, taken := s.st.VMs[id]; taken {
			return nil, paramErr1("vmid", "VM %d already exists", id)
		}
		return q.get("vmid"), nil
	}
	// Without next-id in datacenter.cfg the search runs from 100 up to,
	// not including, 1000000 (below the schema's maximum).
	const lower, upper = 100, 1000 * 1000
	for id := lower; id < upper; id++ {
		if _, taken := s.st.VMs[id]; !taken {
			return strconv.Itoa(id), nil
		}
	}
	return nil, fail(http.StatusInternalServerError, "unable to get any free VMID in range [%d, %d]", lower, upper)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

package pvesim

// Helpers for the lists PVE filters by privilege (the checks sit beside
// each list; these are the ones several lists share).

// nodeStatKeys are the figures extract_node_stats (pve-manager
// PVE/API2Tools.pm) leaves out for a caller without Sys.Audit on the node.
var nodeStatKeys = []string{"uptime", "cpu", "mem", "disk", "maxcpu", "maxmem", "maxdisk"}

// hideNodeStats drops a node row's figures unless user may audit the
// node (pve-manager API2/Nodes.pm index, API2/Cluster.pm resources).
func (s *Server) hideNodeStats(user, node string, row map[string]any) map[string]any {
	if !s.can(user, "/nodes/"+node, "Sys.Audit") {
		for _, k := range nodeStatKeys {
			delete(row, k)
		}
	}
	return row
}

// hidePool drops a guest row's pool unless user may audit that pool
// (pve-manager API2/Cluster.pm resources).
func (s *Server) hidePool(user string, row map[string]any) map[string]any {
	if p, ok := row["pool"].(string); ok && !s.can(user, "/pool/"+p, "Pool.Audit") {
		delete(row, "pool")
	}
	return row
}

// canSeeBridge is the bridge filter of GET /nodes/{node}/network
// (pve-manager API2/Network.pm index, RPCEnvironment.pm
// check_sdn_bridge): SDN.Audit or SDN.Use on the bridge in the local zone,
// or on one of its VLANs an ACL names.
func (s *Server) canSeeBridge(user, bridge string) bool {
	path := "/sdn/zones/localnetwork/" + bridge
	if s.canAny(user, path, "SDN.Audit", "SDN.Use") {
		return true
	}
	for _, e := range s.st.Access.ACL {
		if len(e.Path) > len(path)+1 && e.Path[:len(path)+1] == path+"/" && s.canAny(user, e.Path, "SDN.Audit", "SDN.Use") {
			return true
		}
	}
	return false
}

package pvesim

import (
	"fmt"
	"strings"
	"time"
)

// Offline nodes: a cluster member that is down or cannot be reached
// (maintenance, a dead link), seen from the node that answers.
//
// - pve-manager PVE/HTTPServer.pm rest_handler checks the method's
//   permissions on the answering node and then, for a method with
//   `proxyto => 'node'` naming another node, hands the request to
//   pve-http-server PVE/APIServer/AnyEvent.pm proxy_request. Its
//   AnyEvent::HTTP call to a node that cannot be reached ends with status
//   595 and the connect error as the reason ("No route to host" for a
//   host that is down, "Connection refused" for one whose pveproxy is),
//   which pveproxy passes on as the answer. The parameters are checked
//   by the node that would have handled the call, so a 595 comes before
//   any 400. The simulator answers the reason in the body's message too,
//   as its other proxy faults do.
// - pve-manager PVE/API2Tools.pm extract_node_stats answers status
//   "offline" for a member corosync does not see, with only the static
//   figures (level, maxcpu, maxmem, maxdisk) while its status data lasts;
//   /cluster/status gives it online 0.
// - /cluster/resources lists the node's guests still (the vmlist comes
//   from pmxcfs, which every node holds) with what pvestatd last
//   broadcast about them (extract_vm_stats): their name and last status,
//   until pmxcfs drops status data older than five minutes (pve-cluster
//   src/pmxcfs/status.c rrd_entry_is_old). After that a guest is listed
//   with id, vmid, node, type and status "unknown" only (lock, tags and
//   pool still come from the configs, which pmxcfs keeps).

// DefaultStatusExpiry is how long pmxcfs keeps status data that is no
// longer refreshed (pve-cluster status.c rrd_entry_is_old: five minutes).
const DefaultStatusExpiry = 5 * time.Minute

// SetNodeOffline takes node off the cluster (or back): requests proxied
// to it answer 595, /nodes and /cluster/resources show it offline, and
// its guests keep their last status data until Options.StatusExpiry has
// passed. The node that answers (the first) cannot go offline.
func (s *Server) SetNodeOffline(node string, offline bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setOfflineLocked(node, offline)
}

func (s *Server) setOfflineLocked(node string, offline bool) error {
	if !s.st.hasNode(node) {
		return fmt.Errorf("pvesim: offline node %q is not a node (nodes: %s)", node, strings.Join(s.st.Nodes, ", "))
	}
	if node == s.st.Nodes[0] {
		return fmt.Errorf("pvesim: node %q answers the API and cannot be offline; name another node", node)
	}
	ensureMap(&s.offline)
	if !offline {
		delete(s.offline, node)
		return nil
	}
	if _, already := s.offline[node]; !already {
		s.offline[node] = time.Now()
	}
	return nil
}

// nodeOffline reports whether node is down.
func (s *Server) nodeOffline(node string) bool {
	_, down := s.offline[node]
	return down
}

// unreachable is pveproxy's answer for a request proxied to an offline
// node; nil when the request is answered. GET /nodes/{node} (the
// directory index) has no proxyto and is answered locally.
func (s *Server) unreachable(template string, vars map[string]string) *apiError {
	node, ok := vars["node"]
	if !ok || !s.nodeOffline(node) || !strings.HasPrefix(template, "/nodes/{node}/") {
		return nil
	}
	return fail(595, "No route to host")
}

// offlineNodeStats turns a node row into what extract_node_stats answers
// for a member that is not online: its static figures while its status
// data lasts, nothing after.
func (s *Server) offlineNodeStats(n string, row map[string]any) map[string]any {
	since, down := s.offline[n]
	if !down {
		return row
	}
	out := map[string]any{"id": row["id"], "type": "node", "node": n, "status": "offline"}
	if time.Since(since) <= s.opts.StatusExpiry {
		for _, k := range []string{"level", "maxcpu", "maxmem", "maxdisk"} {
			if v, ok := row[k]; ok {
				out[k] = v
			}
		}
	}
	return out
}

// frozenStats keeps, in a new pvestatd run, what the last runs said about
// the guests of offline nodes (nobody refreshes it) and drops it once it
// is older than pmxcfs keeps status data.
func (s *Server) frozenStats(fresh map[int]guestStat) {
	for id, v := range s.st.VMs {
		since, down := s.offline[v.Node]
		if !down {
			continue
		}
		old, had := s.stats[id]
		if !had || time.Since(since) > s.opts.StatusExpiry {
			delete(fresh, id)
			continue
		}
		fresh[id] = old
	}
}

// staleVMStats is a guest row's status data: nothing once the guest's
// node has been offline for longer than status data is kept.
func (s *Server) staleVMStats(v *vm) guestStat {
	if since, down := s.offline[v.Node]; down && time.Since(since) > s.opts.StatusExpiry {
		return nil
	}
	return s.stats[v.VMID]
}

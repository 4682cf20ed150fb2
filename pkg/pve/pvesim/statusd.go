package pvesim

import (
	"fmt"
	"time"
)

// The status data behind /cluster/resources.
//
// pve-manager's PVE/API2/Cluster.pm (resources) lists a guest from the
// cluster's vmlist (its id, node and type, always current) and fills the
// rest from the status data pvestatd broadcasts (PVE/Service/pvestatd.pm
// update_qemu_status/update_lxc_status, every $updatetime = 10 s):
// PVE/API2Tools.pm extract_vm_stats takes uptime, name, status, template,
// maxcpu, cpu, maxmem, mem, maxdisk, disk and the I/O counters from it and
// answers status "unknown" and nothing else for a guest it has no data
// for yet. lock and tags come from the guest configs and pool from the
// user config, so they are current. The per-node lists and status/current
// read the guest itself and are current too.

// guestStat is what pvestatd last broadcast about one guest.
type guestStat map[string]any

// startStatusd takes the status data now (pvestatd ran before the
// simulator started) and again every StatusInterval until Close.
func (s *Server) startStatusd() {
	s.mu.Lock()
	s.stats = s.statusData()
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(s.opts.StatusInterval)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			s.mu.Lock()
			if !s.closed {
				fresh := s.statusData()
				s.frozenStats(fresh)
				s.stats = fresh
			}
			s.mu.Unlock()
		}
	}()
}

// statusData is one pvestatd run: the status of every guest now.
func (s *Server) statusData() map[int]guestStat {
	out := make(map[int]guestStat, len(s.st.VMs))
	for id, v := range s.st.VMs {
		k := s.kindOf(v)
		d := guestStat{
			"status": v.status(), "template": b2i(v.Conf["template"] == "1"), "uptime": v.uptime(),
			"maxmem": vmMaxMem(v.Conf), "maxcpu": k.cpus(v.Conf), "maxdisk": vmMaxDisk(v.Conf),
			"mem": 0, "cpu": 0, "disk": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
		}
		d["name"] = s.statusName(v) // vmstatus names an unnamed VM "VM 100"
		if v.Running {
			d["mem"] = vmMaxMem(v.Conf) / 4
			d["cpu"] = 0.01
		}
		out[id] = d
	}
	return out
}

// vmResource is a guest's /cluster/resources row: current identity, lock,
// tags and pool; the rest as of pvestatd's last run.
func (s *Server) vmResource(v *vm) map[string]any {
	k := s.kindOf(v)
	m := map[string]any{
		"id": fmt.Sprintf("%s/%d", k.api, v.VMID), "type": k.api, "node": v.Node, "vmid": v.VMID,
		"status": "unknown",
	}
	for key, val := range s.staleVMStats(v) {
		m[key] = val
	}
	if t := v.Conf["tags"]; t != "" {
		m["tags"] = t
	}
	if l := v.Conf["lock"]; l != "" {
		m["lock"] = l
	}
	if p := s.st.vmPool(v.VMID); p != "" {
		m["pool"] = p
	}
	return m
}

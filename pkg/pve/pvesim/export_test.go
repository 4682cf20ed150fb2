package pvesim

import (
	"time"
)

// Hooks for the black-box tests (package pvesim_test, which start the
// simulator through simtest): the cluster's state is reached only here.

// NetModelMAC is netModelMAC.
func NetModelMAC(val string) (model, mac string) { return netModelMAC(val) }

// PutGuest installs a QEMU VM directly, as if earlier tasks had made it.
func (s *Server) PutGuest(node string, vmid int, running bool, conf map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := &vm{VMID: vmid, Node: node, Running: running, Conf: conf}
	if running {
		v.StartedAt = time.Now().Unix()
	}
	s.st.VMs[vmid] = v
}

// PutContainer installs a container directly, as if earlier tasks had made it.
func (s *Server) PutContainer(node string, vmid int, running bool, conf map[string]string) {
	s.PutGuest(node, vmid, running, conf)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.VMs[vmid].Type = s.lxc.typ
}

// HasGuest reports whether a guest with vmid exists (a stub being created included).
func (s *Server) HasGuest(vmid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.st.VMs[vmid]
	return ok
}

// VolumesOf lists the volumes vmid owns, by volid.
func (s *Server) VolumesOf(vmid int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.st.volumesOf(vmid) {
		out = append(out, v.volid())
	}
	return out
}

// HasPool reports whether pool id exists.
func (s *Server) HasPool(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.st.Pools[id]
	return ok
}

// ConfigFile is the rendered config file of vmid, whose SHA-1 is its digest.
func (s *Server) ConfigFile(vmid int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return renderConf(s.st.VMs[vmid])
}

// HoldTasks holds every task started from now on after its duration, still
// running, until release is called (once): a test looks at a running task
// without racing its end. Tasks started after release are not held.
func (s *Server) HoldTasks() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.taskGate = gate
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.taskGate == gate {
			s.taskGate = nil
		}
		close(gate)
	}
}

// LockWaiters is the number of calls and workers waiting for a guest lock.
func (s *Server) LockWaiters() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lockWaiters
}

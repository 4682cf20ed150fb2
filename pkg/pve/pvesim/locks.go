package pvesim

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Guest config locks, as PVE takes them.
//
// Every guest has a flock file (/var/lock/qemu-server/lock-N.conf,
// /run/lock/lxc/pve-config-N.lock). pve-guest-common AbstractConfig.pm
// lock_config takes it exclusively with a 10 s timeout (lock_config_full
// and lock_config_shared with their own); pve-common Tools.pm
// lock_file_full prints "trying to acquire lock..." when the lock is busy,
// waits up to the timeout and then fails with "can't lock file '…' - got
// timeout". Most task-starting calls take the lock inside the forked
// worker, so a busy lock fails the task, not the call; a few (PUT config,
// create, a container's clone and template) take it in the API process and
// answer the 500 themselves. The simulator waits for real, scaled by
// Options.LockWait (PVE's 10 s by default).

// errClosed ends a lock wait when the simulator shuts down.
var errClosed = errors.New("pvesim: server shutting down")

// lockReq is one flock a call takes on a guest's lock file.
type lockReq struct {
	vmid   int
	shared bool
	wait   time.Duration // how long PVE waits for it
	// kind names the lock file when the guest does not exist yet (a clone
	// target); nil: the stored guest's kind.
	kind *guestKind
}

// pveWait scales a PVE lock timeout (in seconds, 10 for lock_config) to
// this simulator's LockWait.
func (s *Server) pveWait(seconds int) time.Duration {
	return s.opts.LockWait * time.Duration(seconds) / 10
}

// exclusive is lock_config: an exclusive flock waited for 10 s.
func (s *Server) exclusive(vmid int) lockReq {
	return lockReq{vmid: vmid, wait: s.pveWait(10)}
}

func lockTimeout(vmid int) *apiError {
	return fail(http.StatusInternalServerError, "can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", vmid)
}

func lockTimeoutCT(vmid int) *apiError {
	return fail(http.StatusInternalServerError, "can't lock file '/run/lock/lxc/pve-config-%d.lock' - got timeout", vmid)
}

// lockErr is the lock timeout naming l's lock file.
func (s *Server) lockErr(l lockReq) *apiError {
	if l.kind != nil {
		return l.kind.lockErr(l.vmid)
	}
	if v, ok := s.st.VMs[l.vmid]; ok {
		return s.kindOf(v).lockErr(l.vmid)
	}
	return lockTimeout(l.vmid)
}

// lockFree reports whether l could be taken now: an exclusive flock waits
// for every holder, a shared one only for an exclusive holder.
func (s *Server) lockFree(l lockReq) bool {
	if _, held := s.locks[l.vmid]; held {
		return false
	}
	return l.shared || s.shared[l.vmid] == 0
}

func (s *Server) hold(t *task, l lockReq) {
	if l.shared {
		s.shared[l.vmid]++
		t.shared = append(t.shared, l.vmid)
		return
	}
	s.locks[l.vmid] = t.UPID
	t.vmids = append(t.vmids, l.vmid)
}

// unlockTask releases the task's locks and wakes the waiters.
func (s *Server) unlockTask(t *task) {
	if len(t.vmids) == 0 && len(t.shared) == 0 {
		return
	}
	for _, v := range t.vmids {
		if s.locks[v] == t.UPID {
			delete(s.locks, v)
		}
	}
	for _, v := range t.shared {
		if s.shared[v]--; s.shared[v] <= 0 {
			delete(s.shared, v)
		}
	}
	t.vmids, t.shared = nil, nil
	close(s.lockFreed)
	s.lockFreed = make(chan struct{})
}

// contended rolls Options.LockContention once for a call that takes a
// guest lock: true means someone else holds it for longer than PVE waits.
func (s *Server) contended() bool {
	return s.opts.LockContention > 0 && s.rng.Float64() < s.opts.LockContention
}

// awaitLock waits until l is free, at most l.wait, as lock_file_full does.
// phantom is injected contention: another holder keeps the lock for the
// whole wait. logf gets the lines PVE's worker prints (nil in the API
// process). Called with s.mu held; it is released while waiting, so the
// caller must look at the state again afterwards.
func (s *Server) awaitLock(ctx context.Context, l lockReq, phantom bool, logf func(string, ...any)) error {
	deadline := time.Now().Add(l.wait)
	waited := false
	for {
		if s.closed {
			return errClosed
		}
		if !phantom && s.lockFree(l) {
			if waited && logf != nil {
				logf(" OK")
			}
			return nil
		}
		if !waited && logf != nil {
			logf("trying to acquire lock...")
		}
		waited = true
		left := time.Until(deadline)
		if left <= 0 {
			return s.lockErr(l)
		}
		freed := s.lockFreed
		s.lockWaiters++
		s.mu.Unlock()
		timer := time.NewTimer(left)
		select {
		case <-freed:
		case <-timer.C:
		case <-s.done:
		case <-ctx.Done():
		}
		timer.Stop()
		s.mu.Lock()
		s.lockWaiters--
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// lockNow takes guest locks in the API process (PUT config, create, a
// container's clone and template): the request waits like PVE's and then
// answers the lock timeout 500. The handler runs under s.mu, so the lock
// is held only while it runs and need not be recorded. The wait releases
// s.mu: look the guest up again afterwards.
func (s *Server) lockNow(q *request, locks ...lockReq) error {
	// Other requests run while this one waits: the tasks it starts
	// afterwards are still its own.
	defer func() { s.reqUser = q.user }()
	phantom := len(locks) > 0 && s.contended()
	for i, l := range locks {
		if err := s.awaitLock(q.ctx, l, phantom && i == 0, nil); err != nil {
			if errors.Is(err, errClosed) {
				return fail(http.StatusServiceUnavailable, "server shutting down")
			}
			return err
		}
	}
	return nil
}

// tryLocks takes every lock at once when all are free, as a forked worker
// that finds them free does within milliseconds.
func (s *Server) tryLocks(t *task, locks []lockReq) bool {
	for _, l := range locks {
		if !s.lockFree(l) {
			return false
		}
	}
	for _, l := range locks {
		s.hold(t, l)
	}
	return true
}

// takeLocks is the worker taking its locks one after the other, holding
// the earlier ones while it waits for the next (qemu-server's clone holds
// the source while it waits for the target).
func (s *Server) takeLocks(t *task, locks []lockReq, phantom bool) error {
	for i, l := range locks {
		if err := s.awaitLock(context.Background(), l, phantom && i == 0, t.logf); err != nil {
			s.unlockTask(t)
			return err
		}
		s.hold(t, l)
	}
	return nil
}

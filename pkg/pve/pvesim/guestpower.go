package pvesim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// power starts, stops, shuts down or reboots a guest. The worker takes the
// guest's lock (qemu-server QemuServer.pm vm_start/vm_stop/vm_reboot,
// pve-container API2/LXC/Status.pm, LXC.pm vm_reboot: lock_config) and
// looks at the guest again under it.
func (s *Server) power(action string) guestHandler {
	return func(k *guestKind, q *request) (any, error) {
		if err := skiplockRefused(q); err != nil {
			return nil, err
		}
		node, id := q.vars["node"], vmidOf(q)
		v, _ := s.guestAt(k, node, id)
		running := v != nil && v.Running
		// pve-container checks the state before it forks, and before it
		// hands an HA-managed CT to the HA manager (API2/LXC/Status.pm
		// vm_start, vm_stop, vm_shutdown); qemu-server's vm_start/vm_stop
		// do it in the worker (stopping a stopped VM is OK), but its
		// reboot asks check_running first.
		switch {
		case k.stateBeforeFork && action == "start" && running:
			return nil, fail(http.StatusInternalServerError, "%s already running", k.name(id))
		case k.stateBeforeFork && (action == "stop" || action == "shutdown") && !running:
			return nil, fail(http.StatusInternalServerError, "%s not running", k.name(id))
		}
		if upid, managed, err := s.haPower(k, q, action, node, id); managed {
			return upid, err // ha.go: the HA manager starts and stops it
		}
		switch {
		case action == "reboot" && v == nil && !k.stateBeforeFork:
			return nil, noConfigOnNode(node, id)
		case action == "reboot" && !running:
			// Both say "VM", pve-container's vm_reboot too.
			return nil, fail(http.StatusInternalServerError, "VM %d not running", id)
		}
		return s.startWorker(node, k.tasks+action, vmidString(id), worker{
			locks: []lockReq{s.guestLock(k, id)},
			run: func(t *task) error {
				v, err := s.guestAt(k, node, id)
				if err != nil && action != "start" && !k.stateBeforeFork {
					return noConfigOnNode(node, id) // _do_vm_stop: check_running
				}
				if err != nil {
					return err
				}
				switch action {
				case "start":
					return s.startEffect(t, k, v, q.bool("skiplock"))
				case "stop", "shutdown":
					// qemu-server's _do_vm_stop returns for a stopped VM
					// before it checks the config lock.
					if !v.Running && !k.stateBeforeFork {
						return nil
					}
					if err := s.writable(v, q); err != nil || !v.Running {
						return err
					}
					if action == "stop" {
						v.Running, v.StartedAt = false, 0
						return nil
					}
					return s.shutdownGuest(t, k, v, q.int("timeout", k.shutdownTimeout), q.bool("forceStop"))
				case "reboot":
					return s.reboot(t, k, v, q.int("timeout", k.shutdownTimeout))
				}
				return nil
			},
		}).UPID, nil
	}
}

// startEffect is vm_start under the lock: a template or a locked guest
// does not start, pending changes apply, the guest boots.
func (s *Server) startEffect(t *task, k *guestKind, v *vm, skiplock bool) error {
	if v.Conf["template"] == "1" {
		return fmt.Errorf("you can't start a %s if it's a template", k.templateNoun)
	}
	if err := s.configLock(v, skiplock); err != nil {
		return err
	}
	if v.Running {
		return fmt.Errorf("%s already running", k.name(v.VMID))
	}
	s.applyPending(v)
	if _, ok := v.Conf["ide2"]; ok && strings.Contains(v.Conf["ide2"], "cloudinit") {
		t.logf("generating cloud-init ISO")
	}
	return s.startGuest(t, v)
}

// shutdownGuest asks a running guest to power off and waits up to timeout
// seconds; it takes the guest one TaskDuration to stop. qemu-server
// (QemuServer.pm _do_vm_stop) looks once a second, timeout times, and
// without forceStop fails with "VM quit/powerdown failed - got timeout";
// pve-container (LXC.pm vm_stop: lxc-stop --nokill --timeout, then a poll
// as long again plus 5 s) fails with "container did not stop". With
// forceStop the guest is killed instead.
func (s *Server) shutdownGuest(t *task, k *guestKind, v *vm, timeout int, force bool) error {
	if !k.stopsInTime(s.opts.TaskDuration, timeout) {
		if !force {
			return errors.New(k.shutdownTimedOut)
		}
		if k.shutdownKill != "" {
			t.logf("%s", k.shutdownKill)
		}
	}
	v.Running, v.StartedAt = false, 0
	return nil
}

// stopsInTime is qemu-server's count: the VM is looked at after 0, 1, …,
// timeout-1 seconds, so it must be down by the last look.
func qemuStopsInTime(d time.Duration, timeout int) bool {
	return int((d+time.Second-1)/time.Second) < timeout
}

// ctStopsInTime: lxc-stop waits timeout seconds, then the worker polls as
// long again plus 5 s.
func ctStopsInTime(d time.Duration, timeout int) bool {
	return d <= time.Duration(2*timeout+5)*time.Second
}

// reboot is vm_reboot under the lock. qemu-server shuts the VM down
// (without forceStop) and ends the task there; qmeventd's cleanup then
// starts it again in a qmstart task of root@pam that applies the pending
// changes (CLI/qm.pm cleanup). pve-container stops (killing after the
// timeout) and starts the container in the same task.
func (s *Server) reboot(t *task, k *guestKind, v *vm, timeout int) error {
	if !v.Running {
		return nil // only reboot if running (vm_reboot)
	}
	if err := s.configLock(v, false); err != nil {
		return err
	}
	if k.rebootInTask {
		v.Running, v.StartedAt = false, 0
		s.applyPending(v)
		return s.startGuest(t, v)
	}
	if err := s.shutdownGuest(t, k, v, timeout, false); err != nil {
		return err
	}
	s.rootGuestTask(k, v, "start", func(t *task, v *vm) error {
		return s.startEffect(t, k, v, false)
	})
	return nil
}

// rootGuestTask starts task k.tasks+action on guest v as root@pam, as PVE's
// own services do; under the guest's lock it runs on the guest as it then
// is.
func (s *Server) rootGuestTask(k *guestKind, v *vm, action string, run func(*task, *vm) error) {
	node, id := v.Node, v.VMID
	s.startWorker(node, k.tasks+action, vmidString(id), worker{
		user:  "root@pam",
		locks: []lockReq{s.guestLock(k, id)},
		run: func(t *task) error {
			v, err := s.guestAt(k, node, id)
			if err != nil {
				return err
			}
			return run(t, v)
		},
	})
}

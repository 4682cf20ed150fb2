package pvesim

import (
	"context"
	"net/url"
)

// haMigrate answers the migration of an HA-managed guest as qemu-server
// (API2/Qemu.pm migrate_vm) and pve-container (API2/LXC.pm migrate_vm)
// do once their early checks passed: an hamigrate task that only asks
// the HA manager ("ha-manager migrate <sid> <target>"). The LRM then
// migrates the guest as root@pam as the resource plugins do
// (Resources/PVEVM.pm migrate: force, with-local-disks, online when it
// runs; PVECT.pm migrate: a running CT is shut down, moved and started
// again on the target, which the simulator runs as a restart migration).
// A failure of the LRM's migration is no failure of the hamigrate task.
func (s *Server) haMigrate(k *guestKind, v *vm, node, target string) string {
	id := v.VMID
	return s.startWorker(node, "hamigrate", vmidString(id), worker{
		run: func(t *task) error {
			t.logf("Requesting HA migration for %s %d to node %s", k.noun, id, target)
			v, err := s.guestAt(k, node, id)
			if err != nil {
				return nil
			}
			params := url.Values{"target": {target}}
			switch {
			case k == s.lxc && v.Running:
				params.Set("restart", "1")
			case k != s.lxc:
				params.Set("force", "1")
				params.Set("with-local-disks", "1")
				if v.Running {
					params.Set("online", "1")
				}
			}
			q := &request{ctx: context.Background(), method: "POST", params: params, user: superuser,
				vars: map[string]string{"node": node, "vmid": vmidString(id)}, fromHA: true}
			saved := s.reqUser
			s.reqUser = superuser
			defer func() { s.reqUser = saved }()
			s.migrateGuest(k, q) //nolint:errcheck // the LRM's failure, not the task's
			return nil
		},
	}).UPID
}

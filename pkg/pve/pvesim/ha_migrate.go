package pvesim

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// haMigrate answers the migration of an HA-managed guest as qemu-server
// (API2/Qemu.pm migrate_vm) and pve-container (API2/LXC.pm migrate_vm)
// do once their early checks passed: an hamigrate task that only asks
// the HA manager ("ha-manager migrate <sid> <target>").
func (s *Server) haMigrate(k *guestKind, v *vm, node, target string) string {
	id := v.VMID
	return s.startWorker(node, "hamigrate", vmidString(id), worker{
		run: func(t *task) error {
			t.logf("Requesting HA migration for %s %d to node %s", k.noun, id, target)
			if v, err := s.guestAt(k, node, id); err == nil {
				s.lrmMigrate(k, v, target, true)
			}
			return nil
		},
	}).UPID
}

// lrmMigrate is the LRM carrying out a migrate (online) or relocate
// request as root@pam, as the resource plugins do (Resources/PVEVM.pm
// migrate: force, with-local-disks, online if asked and running, else the
// VM is shut down first; PVECT.pm migrate: a running CT is shut down,
// moved and started again, which the simulator runs as a restart
// migration). Its failure is the LRM's, no caller's.
func (s *Server) lrmMigrate(k *guestKind, v *vm, target string, online bool) {
	params := url.Values{"target": {target}}
	switch {
	case k == s.lxc && v.Running:
		params.Set("restart", "1")
	case k != s.lxc:
		params.Set("force", "1")
		params.Set("with-local-disks", "1")
		if v.Running && online {
			params.Set("online", "1")
		} else if v.Running {
			v.Running, v.StartedAt = false, 0 // shutdown, then started on the target
			defer func() {
				if nv, ok := s.st.VMs[v.VMID]; ok {
					if _, opts, managed := s.haManaged(nv); managed {
						s.haApply(nv, opts)
					}
				}
			}()
		}
	}
	q := &request{ctx: context.Background(), method: "POST", params: params, user: superuser,
		vars: map[string]string{"node": v.Node, "vmid": vmidString(v.VMID)}, fromHA: true}
	saved := s.reqUser
	s.reqUser = superuser
	defer func() { s.reqUser = saved }()
	s.migrateGuest(k, q) //nolint:errcheck // the LRM's failure
}

// haResourceMove is API2/HA/Resources.pm migrate and relocate: the
// resource must be HA-managed (service_is_ha_managed: not ignored), the
// request is queued for the CRM (the node is not checked here), and the
// answer names the resources in positive affinity that move along and
// those in negative affinity on the requested node
// (Config.pm get_resource_motion_info).
func (s *Server) haResourceMove(online bool) handler {
	return func(q *request) (any, error) {
		sid, _, _, err := s.parseSID(q.vars["sid"])
		if err != nil {
			return nil, err
		}
		opts, ok := s.ha().Resources[sid]
		if !ok || opts["state"] == "ignored" {
			return nil, fail(http.StatusInternalServerError, "resource '%s' is not HA managed", sid)
		}
		target := q.get("node")
		together, separate := s.haAffinity(sid)
		out := map[string]any{"sid": sid, "requested-node": target}
		if len(together) > 0 {
			out["comigrated-resources"] = together
		}
		var blocking []map[string]any
		for _, csid := range separate {
			if v := s.haSIDGuest(csid); v != nil && v.Node == target {
				blocking = append(blocking, map[string]any{"sid": csid, "cause": "resource-affinity"})
			}
		}
		if len(blocking) > 0 {
			out["blocking-resources"] = blocking
		}
		for _, csid := range append([]string{sid}, together...) {
			if v := s.haSIDGuest(csid); v != nil && v.Node != target && s.st.hasNode(target) && len(blocking) == 0 {
				s.lrmMigrate(s.kindOf(v), v, target, online)
			}
		}
		return out, nil
	}
}

// haSIDGuest is the guest of a sid, nil if there is none.
func (s *Server) haSIDGuest(sid string) *vm {
	_, name, _ := strings.Cut(sid, ":")
	var id int
	if _, err := fmt.Sscan(name, &id); err != nil {
		return nil
	}
	return s.st.VMs[id]
}

// haAffinity is get_affinitive_resources on the compiled rules: the
// enabled, feasible resource-affinity rules' other resources that are
// managed (not ignored), sorted.
func (s *Server) haAffinity(sid string) (together, separate []string) {
	h := s.ha()
	errs := s.haFeasibility()
	pos, neg := map[string]bool{}, map[string]bool{}
	for id, rule := range h.Rules {
		res := splitKeys(rule["resources"])
		if rule["type"] != "resource-affinity" || rule["disable"] == "1" || len(errs[id]) > 0 || !slices.Contains(res, sid) {
			continue
		}
		for _, c := range res {
			if o, ok := h.Resources[c]; c != sid && ok && o["state"] != "ignored" {
				map[bool]map[string]bool{true: pos, false: neg}[rule["affinity"] == "positive"][c] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(pos)), slices.Sorted(maps.Keys(neg))
}

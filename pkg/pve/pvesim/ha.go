package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// The HA manager's configuration as pve-ha-manager has it: resources
// (src/PVE/API2/HA/Resources.pm, src/PVE/HA/Resources.pm and
// Resources/PVEVM.pm, PVECT.pm), PVE 9's rules (src/PVE/API2/HA/Rules.pm,
// src/PVE/HA/Rules.pm, Rules/NodeAffinity.pm, Rules/ResourceAffinity.pm)
// and the status the API shows (src/PVE/API2/HA/Status.pm). The CRM and
// LRM are modelled by their effect only: a resource's requested state is
// carried out on its guest in a task of the LRM (haApply).

// haConfig is resources.cfg and rules.cfg: sections by id, each a map of
// the options as the file has them (rules' resources and nodes encoded as
// the API gives them back, sorted).
type haConfig struct {
	Resources map[string]map[string]string `json:"resources,omitempty"` // by sid (vm:100)
	Rules     map[string]map[string]string `json:"rules,omitempty"`     // by rule id
	Order     map[string]int               `json:"order,omitempty"`     // rules' ordinals
}

func (s *Server) ha() *haConfig {
	h := ensure(&s.st.HA)
	ensureMap(&h.Resources)
	ensureMap(&h.Rules)
	ensureMap(&h.Order)
	return h
}

func (s *Server) haRoutes() []route {
	return slices.Concat(
		crudRoutes("/cluster/ha/resources", "/{sid}",
			s.listHAResources, s.createHAResource, s.getHAResource, s.updateHAResource, s.deleteHAResource),
		crudRoutes("/cluster/ha/rules", "/{rule}",
			s.listHARules, s.createHARule, s.getHARule, s.updateHARule, s.deleteHARule),
		[]route{
			r("GET /cluster/ha/status/current", s.haStatus),
			r("POST /cluster/ha/resources/{sid}/migrate", s.haResourceMove(true)),   // ha_migrate.go
			r("POST /cluster/ha/resources/{sid}/relocate", s.haResourceMove(false)), // ha_migrate.go
		},
	)
}

// sectionDigest is the SHA-1 of a section config as written: every
// section's header and options in a stable order.
func sectionDigest(sections map[string]map[string]string) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(sections)) {
		fmt.Fprintf(&b, "%s\n", id)
		for _, k := range slices.Sorted(maps.Keys(sections[id])) {
			fmt.Fprintf(&b, "\t%s %s\n", k, sections[id][k])
		}
	}
	return fmt.Sprintf("%x", sha1.Sum([]byte(b.String())))
}

// typedSection answers a section's options typed as the API's schema
// types them (integers and booleans as JSON numbers).
func typedSection(opts map[string]string, numeric ...string) map[string]any {
	out := map[string]any{}
	for k, v := range opts {
		out[k] = v
		if slices.Contains(numeric, k) {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

var haNumeric = []string{"max_restart", "max_relocate", "failback", "strict", "disable"}

// haBool is parse_boolean's reading of a boolean option, written as 0/1.
func haBool(v string) string {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return "1"
	}
	return "0"
}

var (
	haVMIDName = lazyre.New(`^[1-9][0-9]+$`)
	haDigits   = lazyre.New(`^[0-9]+$`)
)

// parseSID is PVE::HA::Config::parse_sid: a bare vmid becomes vm:N or
// ct:N by the guest's type; else TYPE:NAME.
func (s *Server) parseSID(sid string) (full, typ, name string, err error) {
	if haDigits.MatchString(sid) {
		// the vmlist is keyed by the vmid as written: 0100 is none.
		n, convErr := strconv.Atoi(sid)
		v, ok := s.st.VMs[n]
		if convErr != nil || !ok || sid != strconv.Itoa(n) {
			return "", "", "", fail(http.StatusInternalServerError, "unable to detect SID from VMID - VM/CT %s does not exist", sid)
		}
		typ = "vm"
		if v.Type == s.lxc.typ {
			typ = "ct"
		}
		return typ + ":" + sid, typ, sid, nil
	}
	// m/^(\S+):(\S+)$/: the type is all before the last colon.
	i := strings.LastIndex(sid, ":")
	typ, name = sid[:max(i, 0)], sid[i+1:]
	if i < 0 || typ == "" || name == "" || strings.ContainsAny(sid, " \t\n\r\f") {
		return "", "", "", fail(http.StatusInternalServerError, "unable to parse service id '%s'", sid)
	}
	return sid, typ, name, nil
}

// haGuest is the guest a sid names, checked as the resource plugins'
// verify_name and exists do.
func (s *Server) haGuest(typ, name string) (*vm, error) {
	if typ != "vm" && typ != "ct" {
		// SectionConfig.pm lookup
		return nil, fail(http.StatusInternalServerError, "unknown section type '%s'", typ)
	}
	if !haVMIDName.MatchString(name) {
		return nil, fail(http.StatusInternalServerError, "invalid VMID")
	}
	id, _ := strconv.Atoi(name)
	v, ok := s.st.VMs[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "resource '%s:%d' does not exist in cluster", typ, id)
	}
	if isCT := v.Type == s.lxc.typ; isCT != (typ == "ct") {
		noun := "VM"
		if typ == "ct" {
			noun = "CT"
		}
		return nil, fail(http.StatusInternalServerError, "resource '%s:%d' - guest with ID %d is not a %s", typ, id, id, noun)
	}
	return v, nil
}

// haResourceOpts are the options a resource keeps (Resources.pm's
// propertyList less sid and type; groups are gone in PVE 9).
var haResourceOpts = []string{"state", "failback", "max_restart", "max_relocate", "comment"}

func haResourceParams(q *request, into map[string]string) error {
	for _, k := range haResourceOpts {
		if q.has(k) {
			v := q.get(k)
			if err := haLineFeed(v); err != nil {
				return err
			}
			if k == "failback" {
				v = haBool(v)
			}
			into[k] = v
		}
	}
	return nil
}

// haLineFeed is SectionConfig.pm check_value's refusal of a value with a
// line feed (it runs even with skipSchemaCheck).
func haLineFeed(v string) error {
	if strings.ContainsAny(v, "\n\r") {
		return fmt.Errorf("property contains a line feed")
	}
	return nil
}

// haGroupRefused: the simulator has no HA groups, so they count as
// migrated (have_groups_been_migrated) and a group is refused.
func haGroupRefused(q *request) error {
	if q.has("group") {
		return fail(http.StatusInternalServerError, "invalid parameter 'group': ha groups have been migrated to rules")
	}
	return nil
}

func (s *Server) haResourceAnswer(sid string) map[string]any {
	h := s.ha()
	out := typedSection(h.Resources[sid], haNumeric...)
	out["sid"], out["digest"] = sid, sectionDigest(h.Resources)
	return out
}

func (s *Server) listHAResources(q *request) (any, error) {
	h := s.ha()
	out := []map[string]any{}
	for _, sid := range slices.Sorted(maps.Keys(h.Resources)) {
		if t := q.get("type"); t != "" && h.Resources[sid]["type"] != t {
			continue
		}
		out = append(out, s.haResourceAnswer(sid))
	}
	return out, nil
}

func (s *Server) getHAResource(q *request) (any, error) {
	sid, _, _, err := s.parseSID(q.vars["sid"])
	if err != nil {
		return nil, err
	}
	if _, ok := s.ha().Resources[sid]; !ok {
		return nil, fail(http.StatusInternalServerError, "no such resource '%s'", sid)
	}
	return s.haResourceAnswer(sid), nil
}

// haResourceCall parses the sid of a create or update call: its type
// parameter, if sent, must be the sid's, and it may not name a group.
func (s *Server) haResourceCall(q *request, sidParam string) (sid, typ, name string, err error) {
	sid, typ, name, err = s.parseSID(sidParam)
	if err != nil {
		return "", "", "", err
	}
	if t := q.get("type"); t != "" && t != typ {
		return "", "", "", fail(http.StatusInternalServerError, "types does not match")
	}
	if err := haGroupRefused(q); err != nil {
		return "", "", "", err
	}
	return sid, typ, name, nil
}

// createHAResource is Resources.pm create: the guest must exist and be of
// the sid's type; the CRM then brings it to its requested state.
func (s *Server) createHAResource(q *request) (any, error) {
	sid, typ, name, err := s.haResourceCall(q, q.get("sid"))
	if err != nil {
		return nil, err
	}
	v, err := s.haGuest(typ, name)
	if err != nil {
		return nil, err
	}
	// check_config comes before the lock and its duplicate check.
	opts := map[string]string{"type": typ}
	if err := haResourceParams(q, opts); err != nil {
		return nil, err
	}
	h := s.ha()
	if _, dup := h.Resources[sid]; dup {
		return nil, fail(http.StatusInternalServerError, "create resource failed: resource ID '%s' already defined", sid)
	}
	h.Resources[sid] = opts
	s.haApply(v, opts)
	return nil, s.saveLocked()
}

// updateHAResource is Resources.pm update (update_resources_config under
// the HA domain lock, with the digest check).
func (s *Server) updateHAResource(q *request) (any, error) {
	const failed = "update resources config failed: "
	sid, typ, name, err := s.haResourceCall(q, q.vars["sid"])
	if err != nil {
		return nil, err
	}
	h := s.ha()
	if d := q.get("digest"); d != "" && d != sectionDigest(h.Resources) {
		return nil, fail(http.StatusInternalServerError, failed+"detected modified configuration - file changed by other user? Try again.")
	}
	live, ok := h.Resources[sid]
	if !ok {
		return nil, fail(http.StatusInternalServerError, failed+"no such resource '%s'", sid)
	}
	opts := maps.Clone(live) // a refusal writes nothing
	// Config.pm update_single_resource_config_inplace: the values are set
	// first, then delete takes any option of the plugin (group too, all
	// optional) and refuses another; a key both set and deleted goes.
	if err := haResourceParams(q, opts); err != nil {
		return nil, fail(http.StatusInternalServerError, failed+"%s", err.Error())
	}
	for _, k := range splitKeys(q.get("delete")) {
		if k != "group" && !slices.Contains(haResourceOpts, k) {
			return nil, fail(http.StatusInternalServerError, failed+"no such option '%s'", k)
		}
		delete(opts, k)
	}
	h.Resources[sid] = opts
	if v, err := s.haGuest(typ, name); err == nil {
		s.haApply(v, opts)
	}
	return nil, s.saveLocked()
}

// deleteHAResource is Resources.pm delete: with purge (the default) the
// resource leaves every rule, and a rule left without one goes.
func (s *Server) deleteHAResource(q *request) (any, error) {
	sid, _, _, err := s.parseSID(q.vars["sid"])
	if err != nil {
		return nil, err
	}
	h := s.ha()
	if _, ok := h.Resources[sid]; !ok {
		return nil, fail(http.StatusInternalServerError, "cannot delete service '%s', not HA managed!", sid)
	}
	delete(h.Resources, sid)
	if !q.has("purge") || q.bool("purge") {
		h.purgeFromRules(sid)
	}
	return nil, s.saveLocked()
}

// purgeFromRules takes sid out of every rule's resources; a rule left
// without one goes.
func (h *haConfig) purgeFromRules(sid string) {
	for id, rule := range h.Rules {
		left := slices.DeleteFunc(splitKeys(rule["resources"]), func(x string) bool { return x == sid })
		if len(left) == 0 {
			delete(h.Rules, id)
			continue
		}
		rule["resources"] = strings.Join(left, ",")
	}
	h.renumberRules("")
}

// splitKeys is PVE::Tools::split_list on a comma (or space) list.
func splitKeys(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// haManaged is vm_is_ha_managed: the guest has a resource whose state is
// not ignored.
func (s *Server) haManaged(v *vm) (string, map[string]string, bool) {
	sid, opts, ok := s.haConfigured(v)
	if !ok || opts["state"] == "ignored" {
		return "", nil, false
	}
	return sid, opts, true
}

// haWants is the power state a resource's requested state asks for
// (started is the default; enabled is its alias).
func haWants(opts map[string]string) bool {
	switch opts["state"] {
	case "", "started", "enabled":
		return true
	}
	return false
}

// haApply is the CRM and LRM acting on a requested state: the LRM starts
// or stops the guest in a task of its own (qmstart/qmstop, vzstart/vzstop
// by root@pam), as pve-ha-manager's LRM runs the resource's start or
// shutdown.
func (s *Server) haApply(v *vm, opts map[string]string) {
	s.haApplyWith(v, opts, "shutdown")
}

// haApplyWith is haApply with the stop the LRM runs: the resource
// plugins' shutdown (Resources/PVEVM.pm, PVECT.pm) shuts the guest down
// (qmshutdown/vzshutdown, timeout 60) unless the CRM's stop command gave
// a timeout of 0 (vm_stop's "crm-command stop <sid> 0"), then it stops it.
func (s *Server) haApplyWith(v *vm, opts map[string]string, stop string) {
	if opts["state"] == "ignored" {
		return
	}
	want := haWants(opts)
	if want == v.Running {
		return
	}
	k := s.kindOf(v)
	action := stop
	if want {
		action = "start"
	}
	s.rootGuestTask(k, v, action, func(t *task, v *vm) error {
		if want && !v.Running {
			return s.startEffect(t, k, v, false)
		}
		if !want && v.Running {
			v.Running, v.StartedAt = false, 0
		}
		return nil
	})
}

// haPower answers a start, stop or shutdown of an HA-managed guest as
// qemu-server (API2/Qemu.pm vm_start, vm_stop, vm_shutdown) and
// pve-container (API2/LXC/Status.pm) do: the call becomes an hastart or
// hastop task that sets the resource's requested state (ha-manager set
// --state started; crm-command stop, which the CRM turns into state
// stopped); the HA stack then starts or stops the guest. ok is false when
// the guest is not HA-managed.
func (s *Server) haPower(k *guestKind, q *request, action string, node string, id int) (any, bool, error) {
	v, err := s.guestAt(k, node, id)
	if err != nil || (action != "start" && action != "stop" && action != "shutdown") {
		return nil, false, nil
	}
	if _, _, managed := s.haManaged(v); !managed {
		return nil, false, nil
	}
	if action == "stop" && q.bool("overrule-shutdown") {
		return nil, true, paramErr1("overrule-shutdown", "Not applicable for HA resources.")
	}
	if action == "shutdown" && q.has("timeout") && q.get("timeout") == "0" {
		action = "stop" // crm-command stop <sid> 0
	}
	typ, state, verb := "hastart", "started", "start"
	if action != "start" {
		typ, state, verb = "hastop", "stopped", "stop"
	}
	return s.startWorker(node, typ, vmidString(id), worker{
		run: func(t *task) error {
			t.logf("Requesting HA %s for %s %d", verb, k.noun, id)
			// The resource as it is now (an update replaces its map).
			if v, err := s.guestAt(k, node, id); err == nil {
				if _, opts, ok := s.haConfigured(v); ok {
					opts["state"] = state
					s.haApplyWith(v, opts, action)
				}
			}
			return s.saveLocked()
		},
	}).UPID, true, nil
}

// haStatus is Status.pm status (GET /cluster/ha/status/current): quorum,
// master, one LRM per node, one service row per resource.
func (s *Server) haStatus(q *request) (any, error) {
	h := s.ha()
	node := s.st.Nodes[0]
	out := []map[string]any{{"id": "quorum", "type": "quorum", "node": node, "status": "OK", "quorate": 1}}
	if len(h.Resources) > 0 {
		out = append(out, map[string]any{"id": "master", "type": "master", "node": node, "status": node + " (active)"})
	}
	for _, n := range s.st.Nodes {
		out = append(out, map[string]any{"id": "lrm:" + n, "type": "lrm", "node": n, "status": n + " (idle)"})
	}
	for _, sid := range slices.Sorted(maps.Keys(h.Resources)) {
		opts := h.Resources[sid]
		row := map[string]any{"id": "service:" + sid, "type": "service", "sid": sid}
		_, name, _ := strings.Cut(sid, ":")
		id, _ := strconv.Atoi(name)
		state, where := "not found", "---"
		if v, ok := s.st.VMs[id]; ok {
			where, state = v.Node, haVerboseState(opts, v.Running)
		}
		row["node"] = where
		row["state"] = state
		row["status"] = fmt.Sprintf("%s (%s, %s)", sid, where, state)
		row["request_state"] = opts["state"]
		if row["request_state"] == "" {
			row["request_state"] = "started"
		}
		for _, k := range []string{"max_restart", "max_relocate", "failback", "comment"} {
			if v, ok := opts[k]; ok {
				row[k] = typedSection(map[string]string{k: v}, haNumeric...)[k]
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// haVerboseState is PVE::HA::Tools::get_verbose_service_state for a
// service the CRM has processed.
func haVerboseState(opts map[string]string, running bool) string {
	switch req := opts["state"]; {
	case req == "ignored":
		return "ignored"
	case req == "disabled":
		if running {
			return "stopping"
		}
		return "disabled"
	case haWants(opts):
		if running {
			return "started"
		}
		return "starting"
	default:
		if running {
			return "stopping"
		}
		return "stopped"
	}
}

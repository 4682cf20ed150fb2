package spec

import (
	"fmt"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// Cluster operations kinds (issue 21): HAResource, HARule, BackupJob and
// ReplicationJob. They name guests by pvectl's keys guest (one) and
// guests (a list) as QemuVM/<name> or LxcContainer/<name>; Check turns
// each into PVE's raw parameter holding the guest's vmid as an output
// reference (${QemuVM/<name>.vmid}), which the planner fills in. PVE's
// own keys (sid, resources, vmid) stay accepted with raw ids.

// HAResourceKeys are an HAResource's own keys.
type HAResourceKeys struct {
	Guest *string `json:"guest,omitempty" doc:"The guest made highly available: QemuVM/<name> or LxcContainer/<name> of these specs (its vmid is filled in when known), or a raw vmid. Becomes PVE's sid (vm:<vmid> or ct:<vmid>); write sid instead to name a guest by PVE's id."`
}

// HARuleKeys are an HARule's own keys.
type HARuleKeys struct {
	Guests *[]string `json:"guests,omitempty" doc:"The guests the rule is about: QemuVM/<name> or LxcContainer/<name>, each an HAResource. Becomes PVE's resources (vm:<vmid>,ct:<vmid>); write resources instead to use PVE's ids (a rule takes no bare vmid)."`
}

// BackupJobKeys are a BackupJob's own keys.
type BackupJobKeys struct {
	Guests *[]string `json:"guests,omitempty" doc:"The guests the job backs up: QemuVM/<name>, LxcContainer/<name> or raw vmids. Becomes PVE's vmid list; instead, all: true (with exclude) or pool select guests as PVE does."`
}

// ReplicationJobKeys are a ReplicationJob's own keys.
type ReplicationJobKeys struct {
	Guest *string `json:"guest,omitempty" doc:"The guest whose volumes replicate: QemuVM/<name>, LxcContainer/<name> or a raw vmid. With target it is the job's identity; pvectl picks PVE's job id <vmid>-<n>. Its volumes must all be on storages that replicate (zfspool)."`
}

// guestRefRe is a resource named by kind and document name.
var guestRefRe = lazyre.New(`^([A-Z][A-Za-z0-9]*)/([^\s{}.$/]+)$`)

// vmidRe is a raw vmid (pve-vmid).
var vmidRe = lazyre.New(`^[1-9][0-9]{2,8}$`)

// guestVMID turns one guest reference into the vmid PVE wants, as an
// output reference when it names a guest of the specs; haType is vm or
// ct ("" for a raw vmid, whose type PVE works out).
func guestVMID(ref string) (vmid, haType string, err error) {
	ref = strings.TrimSpace(ref)
	if vmidRe.MatchString(ref) {
		return ref, "", nil
	}
	m := guestRefRe.FindStringSubmatch(ref)
	if m != nil {
		haType = guestKinds[m[1]]
	}
	if haType == "" {
		return "", "", fmt.Errorf("%q is not a guest: write QemuVM/<name>, LxcContainer/<name> or a vmid", ref)
	}
	return OutputRef{Kind: m[1], Name: m[2], Output: "vmid"}.String(), haType, nil
}

// haSID is PVE's sid for one guest reference (a raw vmid stays bare:
// PVE's parse_sid finds its type).
func haSID(ref string) (string, error) {
	vmid, typ, err := guestVMID(ref)
	if err != nil || typ == "" {
		return vmid, err
	}
	return typ + ":" + vmid, nil
}

// setDerived sets a PVE parameter derived from an own key, at the own
// key's position.
func setDerived(r *Resource, param, from, value string) {
	r.Params.Set(param, value)
	if p, ok := r.KeyPos.Get(from); ok {
		r.KeyPos.Set(param, p)
	}
}

// checkHAResource: one guest, by guest or by sid.
func checkHAResource(r *Resource, report func(key, format string, args ...any)) {
	k, _ := r.Keys.(*HAResourceKeys)
	_, hasSID := r.Params.Lookup("sid")
	switch {
	case k != nil && k.Guest != nil && hasSID:
		report("guest", "write guest or sid, not both: both name the guest")
	case k != nil && k.Guest != nil:
		sid, err := haSID(*k.Guest)
		if err != nil {
			report("guest", "guest: %v", err)
			return
		}
		setDerived(r, "sid", "guest", sid)
	case !hasSID:
		report("", "spec.guest is required: the guest to make highly available (QemuVM/<name>), or PVE's sid (vm:<vmid>)")
	}
}

// checkHARule: the guests become resources; each rule type takes its
// own options (pve-ha-manager Rules/NodeAffinity.pm and
// Rules/ResourceAffinity.pm options: PVE answers "unexpected property"
// otherwise).
func checkHARule(r *Resource, report func(key, format string, args ...any)) {
	if k, _ := r.Keys.(*HARuleKeys); k != nil && k.Guests != nil {
		if _, raw := r.Params.Lookup("resources"); raw {
			report("guests", "write guests or resources, not both: both name the rule's guests")
			return
		}
		var sids []string
		for _, g := range *k.Guests {
			sid, err := haSID(g)
			if err != nil {
				report("guests", "guests: %v", err)
				return
			}
			if !strings.Contains(sid, ":") {
				// A resource's sid may be a bare vmid (parse_sid finds its
				// type), a rule's resources may not (pve-ha-manager
				// Tools.pm pve_verify_ha_resource_id: type:name).
				report("guests", "guests: %s: a rule names each guest with its type: write QemuVM/<name> or LxcContainer/<name>, or spec.resources as vm:%s or ct:%s", sid, sid, sid)
				return
			}
			sids = append(sids, sid)
		}
		setDerived(r, "resources", "guests", strings.Join(sids, ","))
	}
	if _, ok := r.Params.Lookup("resources"); !ok && r.State == Present {
		report("", "spec.guests is required: the guests the rule is about (QemuVM/<name>…), or PVE's resources")
	}
	typ := r.Params.Get("type")
	needs := map[string]string{"node-affinity": "nodes", "resource-affinity": "affinity"}
	for t, key := range needs {
		_, has := r.Params.Lookup(key)
		switch {
		case typ == t && !has && r.State == Present:
			report("type", "a %s rule needs spec.%s (PVE refuses it without: missing value for required option '%s')", t, key, key)
		case typ != t && has && typ != "":
			report(key, "%s is an option of %s rules only (PVE refuses it for a %s rule: unexpected property '%s')", key, t, typ, key)
		}
	}
	if _, has := r.Params.Lookup("strict"); has && typ != "node-affinity" && typ != "" {
		report("strict", "strict is an option of node-affinity rules only (PVE refuses it for a %s rule: unexpected property 'strict')", typ)
	}
}

// checkBackupJob: guests become vmid; one way of choosing guests, as
// PVE/VZDump.pm verify_vzdump_parameters requires; a schedule (Backup.pm
// create_job). The schedule itself is checked by its format
// (pkg/pve/calendar).
func checkBackupJob(r *Resource, report func(key, format string, args ...any)) {
	if k, _ := r.Keys.(*BackupJobKeys); k != nil && k.Guests != nil {
		if _, raw := r.Params.Lookup("vmid"); raw {
			report("guests", "write guests or vmid, not both: both name the guests to back up")
			return
		}
		var ids []string
		for _, g := range *k.Guests {
			id, _, err := guestVMID(g)
			if err != nil {
				report("guests", "guests: %v", err)
				return
			}
			ids = append(ids, id)
		}
		setDerived(r, "vmid", "guests", strings.Join(ids, ","))
	}
	on := func(key string) bool { v, ok := r.Params.Lookup(key); return ok && v != "" && v != "0" }
	for _, key := range []string{"all", "exclude", "pool"} {
		if on(key) && on("vmid") {
			report(key, "%s conflicts with guests (PVE: option conflicts with option 'vmid'): choose guests, all (with exclude) or pool", key)
		}
	}
	if r.State != Present {
		return
	}
	if !on("all") && !on("exclude") && !on("pool") && !on("vmid") && !on("stop") {
		report("", "the job backs up nothing: write guests, all: true (with exclude) or pool (PVE: vmid: property is missing)")
	}
	if written := r.KeyPos.Has("schedule"); !written {
		report("", "spec.schedule is required: when the job runs, as a PVE calendar event (e.g. \"21:00\", \"sat 02:30\", \"daily\")")
	}
}

// checkReplicationJob: guest (or PVE's id) names the guest; the planner
// picks the job id <vmid>-<n> for a guest.
func checkReplicationJob(r *Resource, report func(key, format string, args ...any)) {
	k, _ := r.Keys.(*ReplicationJobKeys)
	id, hasID := r.Params.Lookup("id")
	switch {
	case k != nil && k.Guest != nil && hasID:
		report("guest", "write guest or id, not both: the id <vmid>-<n> names the guest already")
	case k != nil && k.Guest != nil:
		vmid, _, err := guestVMID(*k.Guest)
		if err != nil {
			report("guest", "guest: %v", err)
			return
		}
		setDerived(r, "guest", "guest", vmid)
	case hasID:
		vmid, _, _ := strings.Cut(id, "-")
		r.Params.Set("guest", vmid)
	default:
		report("", "spec.guest is required: the guest whose volumes replicate (QemuVM/<name>)")
	}
}

// replicationIdentities: one job per guest and target
// (ReplicationConfig.pm write_config).
func replicationIdentities(r *Resource) []identity {
	g, t := r.Params.Get("guest"), r.Params.Get("target")
	if g == "" || t == "" {
		return nil
	}
	return []identity{{ns: r.Kind, key: fmt.Sprintf("guest %s to target %s", g, t), what: "guest"}}
}

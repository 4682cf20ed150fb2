package planner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The kinds of cluster operations, as sectionKinds (section.go): what each
// is in PVE, and the privileges of its calls as the apidoc's permissions
// say.

// haResourceKind is an HA resource (pve-ha-manager API2/HA/Resources.pm):
// GET needs Sys.Audit on /, POST/PUT/DELETE Sys.Console on /. Its
// requested state is the guest's power state: the HA manager starts and
// stops the guest, and a start or stop of the guest becomes a request to
// it (hastart/hastop).
var haResourceKind = &sectionKind{
	kind:  spec.KindHAResource,
	noun:  "HA resource",
	list:  "/cluster/ha/resources",
	item:  "/cluster/ha/resources/%s",
	idKey: "sid",
	id:    func(p map[string]string) string { return p["sid"] },
	// A bare vmid (PVE's parse_sid finds its type) matches vm:N and ct:N.
	match: func(row *pve.Config, p map[string]string) bool {
		sid := p["sid"]
		if sid == "" {
			return false
		}
		if _, err := strconv.Atoi(sid); err == nil {
			return strings.HasSuffix(row.Get("sid"), ":"+sid)
		}
		return row.Get("sid") == sid
	},
	skip: []string{"type", "group"},
}

// haPowerNote: under HA the guest's power follows the resource's state;
// the plan says so when the state is set or changes, since the HA manager,
// not pvectl, then starts or stops the guest (and answers the guest's own
// start or stop with hastart/hastop).
func haPowerNote(p map[string]string, live *pve.Config) []string {
	want, had := haState(p["state"]), ""
	if live != nil {
		had = haState(live.Get("state"))
		if want == had {
			return nil
		}
	}
	switch want {
	case "started":
		return []string{"the HA manager starts the guest and keeps it running (its power follows state; a start or stop of it becomes an HA request)"}
	case "stopped", "disabled":
		return []string{"the HA manager stops the guest and keeps it stopped (its power follows state: " + want + ")"}
	}
	return []string{"the HA manager leaves the guest alone (state: ignored)"}
}

// haState is a requested state with PVE's default and alias (started,
// enabled).
func haState(s string) string {
	if s == "" || s == "enabled" {
		return "started"
	}
	return s
}

// haRuleKind is a PVE 9 HA rule (API2/HA/Rules.pm): its type cannot
// change (the PUT needs the live one), its resources must be HA
// resources and its nodes must exist.
var haRuleKind = &sectionKind{
	kind:  spec.KindHARule,
	noun:  "HA rule",
	list:  "/cluster/ha/rules",
	item:  "/cluster/ha/rules/%s",
	idKey: "rule",
	id:    func(p map[string]string) string { return p["rule"] },
	// errors: why PVE keeps a rule but does not apply it (API2/HA/Rules.pm
	// $get_api_ha_rule), not a setting.
	skip:       []string{"order", "errors"},
	fixed:      []string{"type"},
	updateKeys: []string{"type"},
	check:      checkRuleNodes,
}

// checkRuleNodes is Rules.pm $assert_valid_nodes_param at plan time.
func checkRuleNodes(_ context.Context, lc *engine.LiveConn, p map[string]string, _ *pve.Config) error {
	var missing []string
	for _, n := range compare.SplitSet(p["nodes"]) {
		name, _, _ := strings.Cut(n, ":")
		if !slices.Contains(lc.Nodes, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("nodes: the cluster has no node %s (its nodes: %s): PVE refuses the rule (\"cannot use non-existent node(s) %s.\")",
		strings.Join(missing, ", "), strings.Join(lc.Nodes, ", "), strings.Join(missing, ", "))
}

// backupJobKind is a backup job of jobs.cfg (pve-manager API2/Backup.pm):
// GET needs Sys.Audit on /, the writes Sys.Modify on /, and for a token
// Datastore.Allocate on its storage and VM.Backup on its pool
// (assert_param_permission_create/_update).
var backupJobKind = &sectionKind{
	kind:        spec.KindBackupJob,
	noun:        "backup job",
	list:        "/cluster/backup",
	item:        "/cluster/backup/%s",
	idKey:       "id",
	id:          func(p map[string]string) string { return p["id"] },
	skip:        []string{"type", "next-run"},
	objects:     []string{"prune-backups", "fleecing", "performance"},
	changeNeeds: backupJobNeeds,
}

// backupJobNeeds: pve-manager PVE/API2/Backup.pm create_job and
// update_job check, beyond the rule's Sys.Modify on /
// (assert_param_permission_create/_update/_common):
//   - Datastore.Allocate on the storage the job writes to: on create the
//     storage it names, or local (PVE/VZDump.pm get_storage_param: a job
//     without one writes to local); on update the storage it sends, or
//     local when it deletes it, and again the current job's;
//   - Datastore.AllocateSpace on the storage of a fleecing it sends;
//   - VM.Backup on a pool it sends.
//
// (bwlimit, ionice and performance want Sys.Modify on /, which the rule
// asks already; tmpdir, dumpdir, script and job-id are root@pam's, which
// no token is: the spec does not take them.)
func backupJobNeeds(c *engine.Change, p map[string]string, live *pve.Config) []engine.PermNeed {
	if c.Action == engine.Delete {
		return nil
	}
	why := "to " + c.Action.String() + " the backup job"
	sent := p
	var storages []string
	if c.Action == engine.Update {
		sent = c.Params
		switch {
		case sent["storage"] != "":
			storages = append(storages, sent["storage"])
		case slices.Contains(strings.Split(sent["delete"], ","), "storage"):
			storages = append(storages, "local")
		}
		current := p["storage"]
		if live != nil {
			current = live.Get("storage")
		}
		storages = append(storages, vzdumpStorage(current))
	} else {
		storages = append(storages, vzdumpStorage(p["storage"]))
	}
	var out []engine.PermNeed
	for _, st := range compare.SortedUnique(storages) {
		out = append(out, engine.NeedPriv("/storage/"+st, why+" that writes to storage "+st, "Datastore.Allocate"))
	}
	if f := sent["fleecing"]; f != "" && f != "0" {
		items, _ := schema.SplitPropertyString(f)
		if st, _ := schema.PropValue(items, "storage"); st != "" {
			out = append(out, engine.NeedPriv("/storage/"+st, why+" with fleecing images on storage "+st, "Datastore.AllocateSpace"))
		}
	}
	if pool := sent["pool"]; pool != "" {
		out = append(out, engine.NeedPriv("/pool/"+pool, why+" of pool "+pool, "VM.Backup"))
	}
	return out
}

// vzdumpStorage is the storage a job writes to (PVE/VZDump.pm
// get_storage_param; a dumpdir is root@pam's alone).
func vzdumpStorage(st string) string {
	if st == "" {
		return "local"
	}
	return st
}

// replicationJobKind is a storage replication job (pve-manager
// API2/ReplicationConfig.pm): found by guest and target, its id
// <vmid>-<n> picked at create; VM.Audit on the guest to see it,
// VM.Replicate to change it.
var replicationJobKind = &sectionKind{
	kind:       spec.KindReplicationJob,
	importKeys: []string{"target", "id"},
	noun:       "replication job",
	list:       "/cluster/replication",
	item:       "/cluster/replication/%s",
	idKey:      "id",
	newIDKey:   "id",
	id:         func(p map[string]string) string { return p["id"] },
	match: func(row *pve.Config, p map[string]string) bool {
		if row.Get("remove_job") != "" {
			return false // marked for removal: the runner takes it away
		}
		if id := p["id"]; id != "" {
			return row.Get("id") == id
		}
		return row.Get("guest") == p["guest"] && row.Get("target") == p["target"] && p["guest"] != ""
	},
	skip:    []string{"guest", "jobnum", "source", "remove_job", "type", "target"},
	notSent: []string{"guest"},
	newID:   replicationJobID,
	check:   checkReplicationTarget,
	// Its calls are open to all; ReplicationConfig.pm's handlers list
	// only the jobs of guests the caller may audit and check VM.Replicate
	// on the guest for every write.
	listNeeds: func(p map[string]string) []engine.PermNeed {
		return []engine.PermNeed{engine.NeedPriv(guestACLPath(p["guest"]), "to see the replication job (PVE lists only those of guests a token may audit)", "VM.Audit")}
	},
	changeNeeds: func(c *engine.Change, p map[string]string, _ *pve.Config) []engine.PermNeed {
		return []engine.PermNeed{engine.NeedPriv(guestACLPath(p["guest"]), "to "+c.Action.String()+" the replication job", "VM.Replicate")}
	},
}

// guestACLPath is /vms/<vmid>, or /vms while the vmid is not known.
func guestACLPath(vmid string) string {
	if vmid == "" || strings.Contains(vmid, "$") {
		return "/vms"
	}
	return "/vms/" + vmid
}

// replicationJobID is the first free <vmid>-<n>.
func replicationJobID(rows []*pve.Config, p map[string]string) string {
	used := map[string]bool{}
	for _, row := range rows {
		used[row.Get("id")] = true
	}
	for n := 0; ; n++ {
		if id := fmt.Sprintf("%s-%d", p["guest"], n); !used[id] {
			return id
		}
	}
}

// checkReplicationTarget is ReplicationConfig.pm create's refusal of the
// guest's own node, at plan time for a guest that exists.
func checkReplicationTarget(ctx context.Context, lc *engine.LiveConn, p map[string]string, _ *pve.Config) error {
	vmid, err := strconv.Atoi(p["guest"])
	if err != nil {
		return nil
	}
	for _, typ := range []pve.GuestType{pve.QEMU, pve.LXC} {
		ix, err := guestIndexOf(lc, ctx, typ)
		if err != nil {
			return err
		}
		if row := ix.vmid(vmid); row != nil && row.Node == p["target"] {
			return fmt.Errorf("target: guest %d runs on %s, the target itself; PVE refuses it: Source and target must not be identical", vmid, row.Node)
		}
	}
	return nil
}

package pvesim

import (
	"crypto/rand"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Backup jobs (/cluster/backup) as pve-manager PVE/API2/Backup.pm keeps
// them in jobs.cfg: create_job, update_job, delete_job, read_job, index;
// the guest selection rules of PVE/VZDump.pm verify_vzdump_parameters;
// the schedule is checked by the schema's pve-calendar-event format
// (pkg/pve/calendar, pve-common PVE/CalendarEvent.pm).

// jobsConfig is jobs.cfg (vzdump jobs) and replication.cfg.
type jobsConfig struct {
	Backup      map[string]map[string]string `json:"backup,omitempty"`
	BackupOrder map[string]int               `json:"backup_order,omitempty"`
	Replication map[string]map[string]string `json:"replication,omitempty"`
}

func (s *Server) jobs() *jobsConfig {
	j := ensure(&s.st.Jobs)
	ensureMap(&j.Backup)
	ensureMap(&j.BackupOrder)
	ensureMap(&j.Replication)
	return j
}

func (s *Server) backupRoutes() []route {
	return crudRoutes("/cluster/backup", "/{id}",
		s.listBackupJobs, s.createBackupJob, s.getBackupJob, s.updateBackupJob, s.deleteBackupJob)
}

// backupNumeric are the job options the API gives as numbers; the
// property strings it gives as objects (their schema's return types).
var (
	backupNumeric = []string{"all", "bwlimit", "enabled", "ionice", "lockwait", "maxfiles", "pigz", "protected",
		"quiet", "remove", "repeat-missed", "stdexcludes", "stop", "stopwait", "zstd"}
	backupObjects = []string{"prune-backups", "fleecing", "performance"}
	backupBools   = []string{"all", "enabled", "protected", "quiet", "remove", "repeat-missed", "stdexcludes", "stop"}
)

// backupRootOnly are the options only root@pam may set
// (assert_param_permission_common).
var backupRootOnly = []string{"tmpdir", "dumpdir", "script", "job-id"}

func (s *Server) backupAnswer(id string) map[string]any {
	job := s.jobs().Backup[id]
	out := typedSection(job, backupNumeric...)
	for _, k := range backupObjects {
		if v, ok := job[k]; ok {
			obj := map[string]string{}
			kvs, _ := schema.SplitPropertyString(v)
			for _, kv := range kvs {
				obj[kv.Key] = kv.Value
			}
			out[k] = typedSection(obj, "keep-all", "keep-daily", "keep-hourly", "keep-last",
				"keep-monthly", "keep-weekly", "keep-yearly", "enabled", "max-workers", "pbs-entries-max")
		}
	}
	out["id"] = id
	return out
}

func (s *Server) listBackupJobs(q *request) (any, error) {
	j := s.jobs()
	ids := slices.SortedFunc(maps.Keys(j.Backup), func(a, b string) int { return j.BackupOrder[a] - j.BackupOrder[b] })
	out := []map[string]any{}
	for _, id := range ids {
		out = append(out, s.backupAnswer(id))
	}
	return out, nil
}

func (s *Server) getBackupJob(q *request) (any, error) {
	id := q.vars["id"]
	if _, ok := s.jobs().Backup[id]; !ok {
		return nil, paramErr1("id", "No such job '%s'", id)
	}
	return s.backupAnswer(id), nil
}

// backupParamPerms is assert_param_permission_create/_update for a caller
// that is not root@pam (the simulator never is).
func (s *Server) backupParamPerms(q *request) error {
	for _, k := range backupRootOnly {
		if q.has(k) {
			return paramErr1(k, "Only root may set this option.")
		}
	}
	for _, k := range []string{"bwlimit", "ionice", "performance"} {
		if q.has(k) && !s.can(q.user, "/", "Sys.Modify") {
			return permDenied("/", "Sys.Modify")
		}
	}
	if st := q.get("storage"); st != "" && !s.can(q.user, "/storage/"+st, "Datastore.Allocate") {
		return permDenied("/storage/"+st, "Datastore.Allocate")
	}
	if pool := q.get("pool"); pool != "" {
		if _, ok := s.st.Pools[pool]; !ok {
			return fail(http.StatusInternalServerError, "pool '%s' does not exist", pool)
		}
		if !s.can(q.user, "/pool/"+pool, "VM.Backup") {
			return permDenied("/pool/"+pool, "VM.Backup")
		}
	}
	return nil
}

func permDenied(path, priv string) error {
	return fail(http.StatusForbidden, "Permission check failed (%s, %s)", path, priv)
}

// backupParams are the request's job options as jobs.cfg keeps them.
func backupParams(q *request) map[string]string {
	opts := map[string]string{}
	for k := range q.params {
		switch k {
		case "id", "delete", "digest", "starttime", "dow":
			continue
		}
		v := q.get(k)
		if slices.Contains(backupBools, k) {
			v = haBool(v)
		}
		opts[k] = v
	}
	return opts
}

// verifyVzdump is verify_vzdump_parameters.
func verifyVzdump(job map[string]string, checkMissing bool) error {
	set := func(k string) bool { v, ok := job[k]; return ok && v != "" && v != "0" }
	for _, k := range []string{"all", "exclude", "pool"} {
		if set(k) && set("vmid") {
			return paramErr1(k, "option conflicts with option 'vmid'")
		}
	}
	if _, ok := job["exclude"]; ok && !set("pool") {
		job["all"] = "1"
	}
	if checkMissing && !set("all") && !set("stop") && !set("pool") && !set("vmid") {
		return paramErr1("vmid", "property is missing")
	}
	return nil
}

// createBackupJob is create_job: a schedule (or the old starttime) is
// required, enabled is written, a job without id gets a UUID.
func (s *Server) createBackupJob(q *request) (any, error) {
	if err := s.backupParamPerms(q); err != nil {
		return nil, err
	}
	if q.has("schedule") && q.has("starttime") {
		return nil, paramErr1("starttime", "'starttime' and 'schedule' cannot both be set")
	}
	if !q.has("schedule") && !q.has("starttime") {
		return nil, paramErr1("schedule", "neither 'starttime' nor 'schedule' were set")
	}
	opts := backupParams(q)
	if !q.has("schedule") {
		opts["schedule"] = backupScheduleFrom(q.get("dow"), q.get("starttime"))
	}
	if _, ok := opts["enabled"]; !ok {
		opts["enabled"] = "1"
	}
	id := q.get("id")
	if id == "" {
		id = newUUID()
	}
	j := s.jobs()
	if _, dup := j.Backup[id]; dup {
		return nil, fail(http.StatusInternalServerError, "Job '%s' already exists", id)
	}
	if err := verifyVzdump(opts, true); err != nil {
		return nil, err
	}
	opts["type"] = "vzdump"
	next := 1
	for _, o := range j.BackupOrder {
		next = max(next, o+1)
	}
	j.Backup[id], j.BackupOrder[id] = opts, next
	return nil, s.saveLocked()
}

// backupScheduleFrom is $convert_to_schedule: "dow starttime".
func backupScheduleFrom(dow, start string) string {
	if dow == "" {
		dow = "mon,tue,wed,thu,fri,sat,sun"
	}
	return dow + " " + start
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// updateBackupJob is update_job: deleted options go, given ones are set,
// and the guest selection keeps one of vmid, all (with exclude) or pool.
func (s *Server) updateBackupJob(q *request) (any, error) {
	id := q.vars["id"]
	if err := s.backupParamPerms(q); err != nil {
		return nil, err
	}
	if q.has("schedule") && q.has("starttime") {
		return nil, paramErr1("starttime", "'starttime' and 'schedule' cannot both be set")
	}
	param := backupParams(q)
	if q.has("starttime") {
		param["schedule"] = backupScheduleFrom(q.get("dow"), q.get("starttime"))
	}
	del := splitKeys(q.get("delete"))
	if len(param) == 0 && len(del) == 0 {
		return nil, fail(http.StatusInternalServerError, "no options specified")
	}
	job, ok := s.jobs().Backup[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such vzdump job")
	}
	// pve-manager PVE/API2/Backup.pm assert_param_permission_update with
	// the current job: its storage needs Datastore.Allocate too, whatever
	// the update changes.
	if st := job["storage"]; st != "" && !s.can(q.user, "/storage/"+st, "Datastore.Allocate") {
		return nil, permDenied("/storage/"+st, "Datastore.Allocate")
	}
	next := maps.Clone(job)
	for _, k := range del {
		if !s.backupOptionExists(k) && k != "comment" && k != "repeat-missed" {
			return nil, paramErr1("delete", "unknown option '%s'", k)
		}
		delete(next, k)
	}
	maps.Copy(next, param)
	if _, ok := next["exclude"]; ok && next["pool"] == "" {
		next["all"] = "1"
	}
	switch {
	case q.has("vmid"):
		delete(next, "all")
		delete(next, "exclude")
		delete(next, "pool")
	case q.bool("all"):
		delete(next, "vmid")
		delete(next, "pool")
	case next["pool"] != "":
		delete(next, "vmid")
		delete(next, "all")
		delete(next, "exclude")
	}
	if err := verifyVzdump(next, true); err != nil {
		return nil, err
	}
	s.jobs().Backup[id] = next
	return nil, s.saveLocked()
}

// backupOptionExists is PVE::VZDump::option_exists: an option of the
// job's schema.
func (s *Server) backupOptionExists(k string) bool {
	m := schema.Default().Methods["PUT /cluster/backup/{id}"]
	if m == nil {
		return false
	}
	_, ok := m.Params[k]
	return ok && k != "id" && k != "delete"
}

func (s *Server) deleteBackupJob(q *request) (any, error) {
	id := q.vars["id"]
	j := s.jobs()
	if _, ok := j.Backup[id]; !ok {
		return nil, paramErr1("id", "No such job '%s'", id)
	}
	delete(j.Backup, id)
	delete(j.BackupOrder, id)
	return nil, s.saveLocked()
}

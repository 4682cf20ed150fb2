package pvesim

import (
	"crypto/rand"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
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

// verifyVzdump is PVE/VZDump.pm verify_vzdump_parameters: vmid excludes
// all, exclude and pool; the notes template is checked; an exclude
// without pool means all; with checkMissing some guest selection is
// needed.
func verifyVzdump(job map[string]string, checkMissing bool) error {
	set := func(k string) bool { v, ok := job[k]; return ok && v != "" && v != "0" }
	for _, k := range []string{"all", "exclude", "pool"} {
		if set(k) && set("vmid") {
			return paramErr1(k, "option conflicts with option 'vmid'")
		}
	}
	if tmpl := job["notes-template"]; tmpl != "" && tmpl != "0" {
		if msg := verifyNotesTemplate(tmpl); msg != "" {
			return paramErr1("notes-template", "%s", msg)
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

var (
	notesEscape = lazyre.New(`\\(.)`)
	notesVar    = lazyre.New(`\{\{([^\s{}]+)\}\}`)
)

// verifyNotesTemplate is PVE/VZDump.pm $verify_notes_template: one line,
// only the escapes \n and \\, only the variables cluster, guestname,
// node and vmid. The message is the die text, newline and all.
func verifyNotesTemplate(tmpl string) string {
	if strings.Contains(tmpl, "\n") {
		return "contains a line feed\n"
	}
	var bad []string
	for _, m := range notesEscape.Regexp().FindAllStringSubmatchIndex(tmpl, -1) {
		if c := tmpl[m[2]:m[3]]; c != "n" && c != `\` {
			bad = append(bad, fmt.Sprintf("escape sequence '\\%s' at char %d", c, m[1]-2))
		}
	}
	for _, m := range notesVar.Regexp().FindAllStringSubmatchIndex(tmpl, -1) {
		switch v := tmpl[m[2]:m[3]]; v {
		case "cluster", "guestname", "node", "vmid":
		default:
			bad = append(bad, fmt.Sprintf("variable '%s' at char %d", v, m[1]-len(v)))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "found unknown: " + strings.Join(bad, ", ") + "\n"
}

// createBackupJob is create_job: a schedule (or the old starttime) is
// required, enabled is written, a job without id gets a UUID.
func (s *Server) createBackupJob(q *request) (any, error) {
	if err := s.backupPermCreate(q); err != nil {
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
	if s.jobIDTaken(id) {
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

// backupScheduleFrom is PVE/API2/Backup.pm $convert_to_schedule: no dow
// (or every day) is the start time alone, otherwise "dow starttime" with
// the day list normalized.
func backupScheduleFrom(dow, start string) string {
	days := strings.Join(splitKeys(dow), ",")
	if days == "" || days == "mon,tue,wed,thu,fri,sat,sun" {
		return start
	}
	return days + " " + start
}

// jobIDTaken: jobs.cfg's section ids are shared by every job type, so
// create_job (PVE/API2/Backup.pm, and pve-access-control
// PVE/API2/Jobs/RealmSync.pm) refuses an id any job already has.
func (s *Server) jobIDTaken(id string) bool {
	_, backup := s.jobs().Backup[id]
	_, realm := s.st.RealmSyncJobs[id]
	return backup || realm
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// updateBackupJob is update_job: the given options are checked alone
// (verify_vzdump_parameters), deleted options go, given ones are set, and
// the guest selection keeps one of vmid, all (with exclude) or pool.
func (s *Server) updateBackupJob(q *request) (any, error) {
	id := q.vars["id"]
	del := splitKeys(q.get("delete"))
	if err := s.backupPermUpdate(q, del); err != nil {
		return nil, err
	}
	if q.has("schedule") && q.has("starttime") {
		return nil, paramErr1("starttime", "'starttime' and 'schedule' cannot both be set")
	}
	param := backupParams(q)
	if q.has("starttime") {
		param["schedule"] = backupScheduleFrom(q.get("dow"), q.get("starttime"))
	}
	if len(param) == 0 && len(del) == 0 {
		return nil, fail(http.StatusInternalServerError, "no options specified")
	}
	if err := verifyVzdump(param, false); err != nil {
		return nil, err
	}
	job, ok := s.jobs().Backup[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such vzdump job")
	}
	// assert_param_permission_update with the current job: its storage
	// (get_storage_param: 'local' if none) needs Datastore.Allocate too,
	// whatever the update changes.
	if err := s.checkDatastoreAllocate(q.user, backupStorageParam(job)); err != nil {
		return nil, err
	}
	next := maps.Clone(job)
	for _, k := range del {
		if !backupDeletable(k) {
			return nil, paramErr1("delete", "unknown option '%s'", k)
		}
		delete(next, k)
	}
	maps.Copy(next, param)
	backupSelection(next, param)
	if err := verifyVzdump(next, true); err != nil {
		return nil, err
	}
	s.jobs().Backup[id] = next
	return nil, s.saveLocked()
}

// backupSelection is update_job's guest selection: an exclude without pool
// means all; a given vmid drops all, exclude and pool, a given all (which
// verify_vzdump_parameters sets for a given exclude) drops vmid and pool,
// a pool drops vmid, all and exclude.
func backupSelection(job, param map[string]string) {
	if _, ok := job["exclude"]; ok && job["pool"] == "" {
		job["all"] = "1"
	}
	set := func(k string) bool { v := param[k]; return v != "" && v != "0" }
	switch {
	case param["vmid"] != "":
		delete(job, "all")
		delete(job, "exclude")
		delete(job, "pool")
	case set("all"):
		delete(job, "vmid")
		delete(job, "pool")
	case job["pool"] != "":
		delete(job, "vmid")
		delete(job, "all")
		delete(job, "exclude")
	}
}

// backupDeletable is update_job's check of a deleted key:
// PVE::VZDump::option_exists (the keys of pve-guest-common
// VZDump/Common.pm confdesc) or one of comment and repeat-missed. The
// update schema's own keys (schedule, starttime, dow, enabled) are not
// options, so they cannot be deleted.
func backupDeletable(k string) bool {
	switch k {
	case "comment", "repeat-missed":
		return true
	case "id", "delete", "schedule", "starttime", "dow", "enabled":
		return false
	}
	m := schema.Default().Methods["PUT /cluster/backup/{id}"]
	if m == nil {
		return false
	}
	_, ok := m.Params[k]
	return ok
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

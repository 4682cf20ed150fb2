package pvesim

import (
	"maps"
	"net/http"
	"slices"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Scheduled realm syncs: the realm-sync sections of /etc/pve/jobs.cfg, as
// pve-access-control src/PVE/API2/Jobs/RealmSync.pm serves them, with the
// options of src/PVE/Jobs/RealmSync.pm (schedule, scope and realm
// required, realm fixed; the legacy full and purge are not options).
// Nothing syncs: the simulator has no directory to read, and the list
// answers no last-run or next-run.

func realmSyncOptions() map[string]sectionOpt {
	return map[string]sectionOpt{
		"schedule": {required: true}, "scope": {required: true}, "realm": {required: true, fixed: true},
		"enabled": {}, "comment": {}, "remove-vanished": {}, "enable-new": {},
	}
}

func (s *Server) realmSyncRoutes() []route {
	return idRoutes("/cluster/jobs/realm-sync", "/{id}",
		s.listRealmSyncJobs, s.createRealmSyncJob, s.getRealmSyncJob, s.updateRealmSyncJob, s.deleteRealmSyncJob)
}

func (s *Server) realmSyncJobs() sections { return ensureMap(&s.st.RealmSyncJobs) }

const realmSyncPath = "/cluster/jobs/realm-sync/{id}"

// listRealmSyncJobs is syncjob_index: every job's section with its id.
func (s *Server) listRealmSyncJobs(q *request) (any, error) {
	jobs := s.realmSyncJobs()
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		row := typedAnswer("POST", realmSyncPath, jobs[id])
		row["id"] = id
		if _, set := row["enabled"]; !set {
			// PVE's list schema requires it; a job without it is
			// enabled (the option's default).
			row["enabled"] = 1
		}
		out = append(out, row)
	}
	return out, nil
}

func (s *Server) getRealmSyncJob(q *request) (any, error) {
	sec, ok := s.realmSyncJobs()[q.vars["id"]]
	if !ok {
		return nil, paramErr1("id", "No such job '%s'", q.vars["id"])
	}
	return typedAnswer("POST", realmSyncPath, sec), nil
}

// lockedParamErr is a parameter exception raised inside cfs_lock_file
// that API2/Jobs/RealmSync.pm dies again as "$@": stringified
// (perlString), a plain 500.
func lockedParamErr(err error) error {
	return fail(http.StatusInternalServerError, "%s", perlString(err))
}

// createRealmSyncJob is create_job: a new id (jobs.cfg ids are shared by
// every job type), check_config, and a realm that exists and is LDAP or AD.
func (s *Server) createRealmSyncJob(q *request) (any, error) {
	jobs := s.realmSyncJobs()
	id := q.vars["id"]
	if s.jobIDTaken(id) {
		return nil, fail(http.StatusInternalServerError, "Job '%s' already exists", id)
	}
	opts := requestOptions(q, "id")
	if err := checkSection(realmSyncOptions(), opts, true); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	// raise_param_exc inside cfs_lock_file, died again as "$@": the
	// exception's text in a 500.
	realm := s.realms().Realms[opts["realm"]]
	if realm == nil {
		return nil, lockedParamErr(paramErr1("realm", "No such realm '%s'", opts["realm"]))
	}
	if t := realm["type"]; t != "ldap" && t != "ad" {
		return nil, lockedParamErr(paramErr1("realm", "Only LDAP/AD realms can be synced."))
	}
	opts["type"] = "realm-sync"
	jobs[id] = opts
	return nil, s.saveLocked()
}

// updateRealmSyncJob is update_job: something to do, check_config (realm
// is fixed), the job, delete_from_config, the options set.
func (s *Server) updateRealmSyncJob(q *request) (any, error) {
	jobs := s.realmSyncJobs()
	id := q.vars["id"]
	opts := requestOptions(q, "id", "delete")
	if len(opts) == 0 {
		return nil, fail(http.StatusInternalServerError, "no job options specified")
	}
	if err := checkSection(realmSyncOptions(), opts, false); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	job, ok := jobs[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such realm-sync job")
	}
	next := maps.Clone(job)
	if err := deleteSectionKeys(realmSyncOptions(), next, opts, schema.SplitList(q.get("delete"))); err != nil {
		return nil, fail(http.StatusInternalServerError, "%v", err)
	}
	maps.Copy(next, opts)
	jobs[id] = next
	return nil, s.saveLocked()
}

func (s *Server) deleteRealmSyncJob(q *request) (any, error) {
	jobs := s.realmSyncJobs()
	id := q.vars["id"]
	if _, ok := jobs[id]; !ok {
		// delete_job raises it inside cfs_lock_file and dies "$@".
		return nil, lockedParamErr(paramErr1("id", "No such job '%s'", id))
	}
	delete(jobs, id)
	return nil, s.saveLocked()
}

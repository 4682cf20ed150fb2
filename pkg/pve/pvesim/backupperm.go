package pvesim

import (
	"net/http"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The permission and schema checks of pve-manager PVE/API2/Backup.pm
// create_job and update_job for a caller that is not root@pam (the
// simulator's callers are API tokens, never root@pam itself).

func permDenied(path, priv string) error {
	return fail(http.StatusForbidden, "Permission check failed (%s, %s)", path, priv)
}

// requestParams are the request's parameters (but the job id) as the
// handler sees them before $schedule_param_check.
func requestParams(q *request) map[string]string {
	out := map[string]string{}
	for k := range q.params {
		if k != "id" && k != "delete" {
			out[k] = q.get(k)
		}
	}
	return out
}

// backupPermCommon is assert_param_permission_common: the root-only
// options, Sys.Modify for bwlimit, ionice and performance, and
// Datastore.AllocateSpace on a fleecing storage (not when deleting).
func (s *Server) backupPermCommon(user string, param map[string]string, isDelete bool) error {
	for _, k := range backupRootOnly {
		if _, ok := param[k]; ok {
			return paramErr1(k, "Only root may set this option.")
		}
	}
	for _, k := range []string{"bwlimit", "ionice", "performance"} {
		if _, ok := param[k]; ok && !s.can(user, "/", "Sys.Modify") {
			return permDenied("/", "Sys.Modify")
		}
	}
	if f := param["fleecing"]; f != "" && f != "0" && !isDelete {
		st, _ := schema.PropValue(props(f), "storage")
		if st != "" && !s.can(user, "/storage/"+st, "Datastore.AllocateSpace") {
			return permDenied("/storage/"+st, "Datastore.AllocateSpace")
		}
	}
	return nil
}

// backupStorageParam is PVE/VZDump.pm get_storage_param: none with a
// dumpdir, else the storage or 'local'.
func backupStorageParam(job map[string]string) string {
	if d := job["dumpdir"]; d != "" && d != "0" {
		return ""
	}
	if st := job["storage"]; st != "" && st != "0" {
		return st
	}
	return "local"
}

func (s *Server) checkDatastoreAllocate(user, st string) error {
	if st != "" && !s.can(user, "/storage/"+st, "Datastore.Allocate") {
		return permDenied("/storage/"+st, "Datastore.Allocate")
	}
	return nil
}

// backupPermCreate is assert_param_permission_create followed by
// create_job's pool check.
func (s *Server) backupPermCreate(q *request) error {
	param := requestParams(q)
	if err := s.backupPermCommon(q.user, param, false); err != nil {
		return err
	}
	if err := s.checkDatastoreAllocate(q.user, backupStorageParam(param)); err != nil {
		return err
	}
	return s.backupPoolPerm(q)
}

// backupPermUpdate is assert_param_permission_update's early check (no
// current job) followed by update_job's pool check: the deleted keys go
// through the common check too, and deleting the storage needs
// Datastore.Allocate on 'local', where the job then writes.
func (s *Server) backupPermUpdate(q *request, del []string) error {
	param := requestParams(q)
	if err := s.backupPermCommon(q.user, param, false); err != nil {
		return err
	}
	delSet := map[string]string{}
	for _, k := range del {
		delSet[k] = "1"
	}
	if err := s.backupPermCommon(q.user, delSet, true); err != nil {
		return err
	}
	st := param["storage"]
	if _, ok := delSet["storage"]; st == "" && ok {
		st = "local"
	}
	if err := s.checkDatastoreAllocate(q.user, st); err != nil {
		return err
	}
	return s.backupPoolPerm(q)
}

// backupPoolPerm is check_pool_exist (a missing pool is a permission
// failure, 403) and VM.Backup on the pool.
func (s *Server) backupPoolPerm(q *request) error {
	pool := q.get("pool")
	if pool == "" {
		return nil
	}
	if err := s.checkPoolExist(pool); err != nil {
		return err
	}
	if !s.can(q.user, "/pool/"+pool, "VM.Backup") {
		return permDenied("/pool/"+pool, "VM.Backup")
	}
	return nil
}

package pvesim

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Storage replication jobs (/cluster/replication) as pve-manager
// PVE/API2/ReplicationConfig.pm and pve-guest-common
// src/PVE/ReplicationConfig.pm keep them in replication.cfg: the job id is
// <vmid>-<n>, one job per guest and target, the target must be another
// node, and every volume the guest replicates must be on a storage with
// the replicate feature (qemu-server src/PVE/QemuConfig.pm
// get_replicatable_volumes; of the simulated storage types only zfspool
// has it, pve-storage ZFSPoolPlugin.pm volume_has_feature). A delete
// marks the job (remove_job) and the replication runner (pvesr, every
// minute; here one task duration) removes it.

var replJobID = lazyre.New(`^(\d+)-(\d+)$`)

// replRemovedAt is the simulator's own note of when a job was marked for
// removal; never answered.
const replRemovedAt = "_removed_at"

func (s *Server) replicationRoutes() []route {
	return crudRoutes("/cluster/replication", "/{id}",
		s.listReplication, s.createReplication, s.getReplication, s.updateReplication, s.deleteReplication)
}

// parseReplJobID is parse_replication_job_id.
func parseReplJobID(id string) (guest, num int, err error) {
	m := replJobID.FindStringSubmatch(id)
	if m == nil {
		return 0, 0, fail(http.StatusInternalServerError, "invalid replication job id '%s'", id)
	}
	guest, _ = strconv.Atoi(m[1])
	num, _ = strconv.Atoi(m[2])
	if guest < 100 {
		return 0, 0, fail(http.StatusInternalServerError, "invalid replication job id '%s' (guest IDs < 100 are reserved)", id)
	}
	return guest, num, nil
}

// replRunner is pvesr's removal of jobs marked remove_job.
func (s *Server) replRunner() {
	j := s.jobs()
	for id, job := range j.Replication {
		at, err := strconv.ParseInt(job[replRemovedAt], 10, 64)
		if err == nil && time.Since(time.Unix(0, at)) >= s.opts.TaskDuration {
			delete(j.Replication, id)
		}
	}
}

func replAnswer(id string, job map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range job {
		if !strings.HasPrefix(k, "_") {
			out[k] = v
		}
	}
	guest, num, _ := parseReplJobID(id)
	out["id"], out["guest"], out["jobnum"] = id, guest, num
	if v, ok := job["disable"]; ok {
		out["disable"], _ = strconv.Atoi(v)
	}
	if v, ok := job["rate"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out["rate"] = f
		}
	}
	return out
}

// replJobGuest is the guest of job id, on which the caller needs priv.
func (s *Server) replJobGuest(q *request, id, priv string) (int, error) {
	guest, _, err := parseReplJobID(id)
	if err != nil {
		return 0, err
	}
	path := "/vms/" + strconv.Itoa(guest)
	if !s.can(q.user, path, priv) {
		return 0, permDenied(path, priv)
	}
	return guest, nil
}

func (s *Server) listReplication(q *request) (any, error) {
	s.replRunner()
	j := s.jobs()
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(j.Replication)) {
		guest, _, _ := parseReplJobID(id)
		if !s.can(q.user, "/vms/"+strconv.Itoa(guest), "VM.Audit") {
			continue
		}
		out = append(out, replAnswer(id, j.Replication[id]))
	}
	return out, nil
}

// getReplication is ReplicationConfig.pm read: a missing job is a 500
// before any permission check (VM.Audit is checked on the job's guest),
// and the answer carries the config's digest.
func (s *Server) getReplication(q *request) (any, error) {
	s.replRunner()
	id := q.vars["id"]
	j := s.jobs()
	job, ok := j.Replication[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such replication job '%s'", id)
	}
	if _, err := s.replJobGuest(q, id, "VM.Audit"); err != nil {
		return nil, err
	}
	out := replAnswer(id, job)
	out["digest"] = sectionDigest(j.Replication)
	return out, nil
}

// replicatable is get_replicatable_volumes: the guest's volumes that
// replicate (not CD-ROMs, not replicate=0, not on shared storage, owned by
// the guest), each of which must have the replicate feature.
func (s *Server) replicatable(v *vm) ([]string, error) {
	var out []string
	for _, gv := range s.guestVolumes(v) {
		if gv.cdrom || gv.cloudinit {
			continue
		}
		if val, ok := schema.PropValue(props(v.Conf[gv.key]), "replicate"); ok && haBool(val) == "0" {
			continue
		}
		if strings.HasPrefix(gv.volid, "/") {
			return nil, fail(http.StatusInternalServerError, "unable to replicate local file/device '%s'", gv.volid)
		}
		if gv.vol == nil {
			continue
		}
		st, ok := s.st.Storages[gv.vol.Storage]
		if !ok || st.Shared || gv.vol.VMID != v.VMID {
			continue
		}
		if gv.vol.Content != "images" && gv.vol.Content != "rootdir" {
			return nil, fail(http.StatusInternalServerError, "unable to replicate volume '%s', type '%s'", gv.volid, gv.vol.Content)
		}
		if st.Type != "zfspool" {
			return nil, fail(http.StatusInternalServerError, "missing replicate feature on volume '%s'", gv.volid)
		}
		out = append(out, gv.volid)
	}
	return out, nil
}

// replParams are the job options of a create or update
// (ReplicationConfig.pm options).
func replParams(q *request) map[string]string {
	opts := map[string]string{}
	for _, k := range []string{"target", "schedule", "rate", "comment", "disable", "source", "remove_job"} {
		if q.has(k) {
			v := q.get(k)
			if k == "disable" {
				v = haBool(v)
			}
			opts[k] = v
		}
	}
	return opts
}

// createReplication is ReplicationConfig.pm create.
func (s *Server) createReplication(q *request) (any, error) {
	id := q.get("id")
	guest, err := s.replJobGuest(q, id, "VM.Replicate")
	if err != nil {
		return nil, err
	}
	v, ok := s.st.VMs[guest]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "Guest '%d' does not exist.", guest)
	}
	target := q.get("target")
	if !s.st.hasNode(target) {
		return nil, fail(http.StatusInternalServerError, "Target '%s' does not exist.", target)
	}
	if src := q.get("source"); src != "" && src != v.Node {
		return nil, fail(http.StatusInternalServerError, "Source '%s' does not match current node of guest '%d' (%s)", src, guest, v.Node)
	}
	if target == v.Node {
		return nil, fail(http.StatusInternalServerError, "Source and target must not be identical")
	}
	vols, err := s.replicatable(v)
	if err != nil {
		return nil, err
	}
	if len(vols) == 0 {
		return nil, fail(http.StatusInternalServerError, "No replicatable volumes found")
	}
	s.replRunner()
	j := s.jobs()
	if _, dup := j.Replication[id]; dup {
		return nil, fail(http.StatusInternalServerError, "replication job '%s' already exists", id)
	}
	for other, job := range j.Replication {
		if g, _, _ := parseReplJobID(other); g == guest && job["target"] == target {
			// write_config names the target by get_unique_target_id
			// (ReplicationConfig::Cluster): "local/<node>".
			return nil, fail(http.StatusInternalServerError, "replication job for guest '%d' to target 'local/%s' already exists", guest, target)
		}
	}
	opts := replParams(q)
	opts["type"], opts["source"] = "local", v.Node
	j.Replication[id] = opts
	return nil, s.saveLocked()
}

// updateReplication is ReplicationConfig.pm update: the target is fixed.
func (s *Server) updateReplication(q *request) (any, error) {
	id := q.vars["id"]
	if _, err := s.replJobGuest(q, id, "VM.Replicate"); err != nil {
		return nil, err
	}
	s.replRunner()
	j := s.jobs()
	if err := assertIfModified(q, sectionDigest(j.Replication)); err != nil {
		return nil, err
	}
	job, ok := j.Replication[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such job '%s'", id)
	}
	next := maps.Clone(job)
	maps.Copy(next, replParams(q))
	for _, k := range splitKeys(q.get("delete")) {
		switch k {
		case "schedule", "rate", "comment", "disable", "source", "remove_job":
			delete(next, k)
		case "target":
			return nil, fail(http.StatusInternalServerError, "unable to delete required option '%s'", k)
		// "type" is no option of the local plugin (ReplicationConfig::Cluster
		// options), so update finds no such option.
		default:
			return nil, fail(http.StatusInternalServerError, "no such option '%s'", k)
		}
	}
	j.Replication[id] = next
	return nil, s.saveLocked()
}

// deleteReplication marks the job for the runner (remove_job full, or
// local with keep); force drops it from the config at once.
func (s *Server) deleteReplication(q *request) (any, error) {
	id := q.vars["id"]
	if _, err := s.replJobGuest(q, id, "VM.Replicate"); err != nil {
		return nil, err
	}
	j := s.jobs()
	if q.bool("force") {
		if q.bool("keep") {
			return nil, paramErr1("keep", "conflicts with parameter 'force'")
		}
		delete(j.Replication, id)
		return nil, s.saveLocked()
	}
	job, ok := j.Replication[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "no such job '%s'", id)
	}
	job["remove_job"] = "full"
	if q.bool("keep") {
		job["remove_job"] = "local"
	}
	if _, marked := job[replRemovedAt]; !marked {
		job[replRemovedAt] = strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	return nil, s.saveLocked()
}

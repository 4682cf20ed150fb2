package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// Datacenter options as pve-manager API2/Cluster.pm and pve-cluster
// DataCenterConfig.pm serve them: set keys, delete keys, property
// strings answered as objects, the description with a newline per line,
// mac_prefix's default, next-id's bounds checked by the writer.
func TestDatacenterOptions(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "PUT", "/cluster/options", "keyboard", "de", "migration", "type=insecure,network=10.0.0.0/24", "description", "line one\nline two")
	got := e.object("/cluster/options")
	mig, _ := got["migration"].(map[string]any)
	if got["keyboard"] != "de" || mig["type"] != "insecure" || mig["network"] != "10.0.0.0/24" ||
		got["description"] != "line one\nline two\n" || got["mac_prefix"] != "BC:24:11" {
		t.Errorf("GET /cluster/options: got %v", got)
	}
	e.ok(nil, "PUT", "/cluster/options", "language", "en", "delete", "keyboard")
	got = nil
	e.ok(&got, "GET", "/cluster/options")
	if _, ok := got["keyboard"]; ok || got["language"] != "en" {
		t.Errorf("after delete: got %v", got)
	}
	if r := e.call("PUT", "/cluster/options", "next-id", "lower=5000,upper=4000"); r.Status != 500 || r.Message != "lower (5000) <= upper (4000) boundary rule broken" {
		t.Errorf("next-id bounds: got %d %q", r.Status, r.Message)
	}
}

// Metric servers as pve-manager API2/Cluster/MetricServer.pm serves them:
// the token kept apart and never answered, the plugin's required and
// fixed options, delete_from_config's refusals.
func TestMetricServers(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/metrics/server/influx", "type", "influxdb", "server", "127.0.0.7", "port", "8089", "token", "t0ken-s3cret", "bucket", "pve")
	if r := e.call("GET", "/cluster/metrics/server/influx"); strings.Contains(string(r.Data), "t0ken") || !strings.Contains(string(r.Data), `"bucket":"pve"`) {
		t.Errorf("GET influx: %s", r.Data)
	}
	if h, ok := e.Server.MetricToken("influx"); !ok || h == "t0ken-s3cret" {
		t.Errorf("stored token: %q %v, want its digest", h, ok)
	}
	refusals := []struct {
		name, method, path string
		kv                 []string
		msg                string
	}{
		{"exists", "POST", "/cluster/metrics/server/influx", []string{"type", "graphite", "server", "x", "port", "2003"}, "Metric server 'influx' already exists"},
		{"foreign option", "POST", "/cluster/metrics/server/gr", []string{"type", "graphite", "server", "x", "port", "2003", "bucket", "b"}, "unexpected property 'bucket'"},
		{"delete required", "PUT", "/cluster/metrics/server/influx", []string{"server", "x", "port", "1", "delete", "server"}, "unable to delete required option 'server'"},
		{"set and delete", "PUT", "/cluster/metrics/server/influx", []string{"server", "x", "port", "1", "bucket", "b", "delete", "bucket"}, "cannot set and delete property 'bucket' at the same time!"},
		{"missing", "PUT", "/cluster/metrics/server/nope", []string{"server", "x", "port", "1"}, "no such server 'nope'"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(tc.method, tc.path, tc.kv...)
			if r.Status < 400 || (tc.msg != "" && r.Message != tc.msg) {
				t.Errorf("got %d %q %v, want a refusal %q", r.Status, r.Message, r.Errors, tc.msg)
			}
		})
	}
	e.ok(nil, "PUT", "/cluster/metrics/server/influx", "server", "127.0.0.8", "port", "8089", "delete", "bucket,token")
	if _, ok := e.Server.MetricToken("influx"); ok {
		t.Errorf("a deleted token is still stored")
	}
	e.ok(nil, "DELETE", "/cluster/metrics/server/influx")
	rows := e.rows("/cluster/metrics/server")
	if len(rows) != 0 {
		t.Errorf("after delete: %v", rows)
	}
}

// Realm-sync jobs as pve-access-control API2/Jobs/RealmSync.pm serves
// them: only for LDAP/AD realms that exist, with schedule, scope and realm.
func TestRealmSyncJobs(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/access/domains", "realm", "corp", "type", "ldap", "server1", "127.0.0.5", "base_dn", "dc=corp", "user_attr", "uid")
	// create_job raises these inside cfs_lock_file and dies "$@": a 500
	// with the exception's text.
	if r := e.call("POST", "/cluster/jobs/realm-sync/j1", "realm", "pve", "schedule", "daily", "scope", "both"); r.Status != 500 ||
		r.Message != "400 Parameter verification failed.\nrealm: Only LDAP/AD realms can be synced." {
		t.Errorf("pve realm: got %d %q", r.Status, r.Message)
	}
	if r := e.call("POST", "/cluster/jobs/realm-sync/j1", "realm", "nope", "schedule", "daily", "scope", "both"); r.Status != 500 ||
		r.Message != "400 Parameter verification failed.\nrealm: No such realm 'nope'" {
		t.Errorf("missing realm: got %d %q", r.Status, r.Message)
	}
	if r := e.call("POST", "/cluster/jobs/realm-sync/j1", "realm", "corp", "schedule", "daily"); r.Status != 500 || r.Message != "missing value for required option 'scope'" {
		t.Errorf("no scope: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/jobs/realm-sync/j1", "realm", "corp", "schedule", "daily", "scope", "both", "comment", "x")
	e.ok(nil, "PUT", "/cluster/jobs/realm-sync/j1", "schedule", "weekly", "delete", "comment")
	job := e.object("/cluster/jobs/realm-sync/j1")
	if job["schedule"] != "weekly" || job["comment"] != nil || job["realm"] != "corp" {
		t.Errorf("after update: %v", job)
	}
	e.ok(nil, "DELETE", "/cluster/jobs/realm-sync/j1")
	if r := e.call("DELETE", "/cluster/jobs/realm-sync/j1"); r.Status != 500 ||
		r.Message != "400 Parameter verification failed.\nid: No such job 'j1'" {
		t.Errorf("second delete: got %d %q", r.Status, r.Message)
	}
}

package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// What pve-manager's MetricServer.pm answers and refuses beyond the
// basics of TestMetricServers: read gives the section only (no id, no
// digest); a disable=0 is not written to status.cfg (SectionConfig.pm
// write_config) so it does not read back; the token is taken out before
// check_config, so any type takes one on create and only InfluxDB keeps
// it, while a delete of token is checked against the type's options;
// deleting a server that does not exist dies in lookup.
func TestMetricServerFidelity(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/metrics/server/gr", "type", "graphite", "server", "127.0.0.9", "port", "2003",
		"disable", "0", "token", "ignored")
	got := e.object("/cluster/metrics/server/gr")
	for _, k := range []string{"id", "digest", "disable", "token"} {
		if _, ok := got[k]; ok {
			t.Errorf("GET gr answers %s: %v", k, got)
		}
	}
	if got["type"] != "graphite" || got["server"] != "127.0.0.9" {
		t.Errorf("GET gr: %v", got)
	}
	if _, ok := e.Server.MetricToken("gr"); ok {
		t.Error("a graphite server keeps a token")
	}
	if rows := e.rows("/cluster/metrics/server"); len(rows) != 1 || jsonString(t, rows[0]["disable"]) != "0" {
		t.Errorf("list: %v", rows)
	}
	e.ok(nil, "PUT", "/cluster/metrics/server/gr", "server", "127.0.0.9", "port", "2003", "disable", "1")
	if got := e.object("/cluster/metrics/server/gr"); jsonString(t, got["disable"]) != "1" {
		t.Errorf("GET gr after disable=1: %v", got)
	}
	e.ok(nil, "PUT", "/cluster/metrics/server/gr", "server", "127.0.0.9", "port", "2003", "disable", "0")
	if got := e.object("/cluster/metrics/server/gr"); got["disable"] != nil {
		t.Errorf("GET gr after disable=0: %v", got)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"PUT", "/cluster/metrics/server/gr", "no such option 'token'"},
		{"DELETE", "/cluster/metrics/server/nope", "cannot lookup undefined type!"},
	} {
		kv := []string{"server", "127.0.0.9", "port", "2003", "delete", "token"}
		if tc.method == "DELETE" {
			kv = nil
		}
		if r := e.call(tc.method, tc.path, kv...); r.Status != 500 || !strings.HasPrefix(r.Message, tc.want) {
			t.Errorf("%s %s: got %d %q, want %q", tc.method, tc.path, r.Status, r.Message, tc.want)
		}
	}
}

// The directory indexes above the mappings and the metric servers
// (pve-manager API2/Cluster/Mapping.pm and MetricServer.pm index).
func TestMappingAndMetricIndexes(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	for path, want := range map[string]string{
		"/cluster/mapping": `[{"name":"dir"},{"name":"pci"},{"name":"usb"}]`,
		"/cluster/metrics": `[{"name":"server"}]`,
	} {
		if got := jsonString(t, e.rows(path)); got != want {
			t.Errorf("GET %s: %s, want %s", path, got, want)
		}
	}
}

// An InfluxDB token sent empty is stored empty, not removed: it is
// defined, so extract_sensitive_params passes it on and set_credentials
// writes it (pve-common Tools.pm, pve-manager Status/InfluxDB.pm).
func TestMetricServerEmptyToken(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/cluster/metrics/server/influx", "type", "influxdb", "server", "127.0.0.7", "port", "8089", "token", "s3cret")
	e.ok(nil, "PUT", "/cluster/metrics/server/influx", "server", "127.0.0.7", "port", "8089", "token", "")
	if h, ok := e.Server.MetricToken("influx"); !ok || h != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("token after an update with token='': %q %v, want the empty one's digest", h, ok)
	}
}

// Formats PVE registers for these parameters are checked as parameters
// (400): a graphite path (Status/Graphite.pm pve_verify_graphite_path),
// a directory mapping's path for any node, not only the answering one
// (Mapping/Dir.pm pve_verify_path, format
// pve-storage-path-in-property-string).
func TestMetricAndDirPathFormats(t *testing.T) {
	e := startEnv(t, simtest.Options{}) // the requests break the schema on purpose
	for _, c := range []struct {
		path  string
		kv    []string
		param string
	}{
		{"/cluster/metrics/server/gr", []string{"type", "graphite", "server", "127.0.0.9", "port", "2003", "path", "pve..stats"}, "path"},
		{"/cluster/mapping/dir", []string{"id", "share", "map", "node=pve,path=/srv", "map", "node=pve2,path=relative"}, "map"},
	} {
		r := e.call("POST", c.path, c.kv...)
		if r.Status != 400 || r.Message != "Parameter verification failed." || r.Errors[c.param] == "" {
			t.Errorf("POST %s %v: got %d %q %v, want a 400 on %s", c.path, c.kv, r.Status, r.Message, r.Errors, c.param)
		}
	}
	e.ok(nil, "POST", "/cluster/metrics/server/gr", "type", "graphite", "server", "127.0.0.9", "port", "2003", "path", "pve-1.stats")
}

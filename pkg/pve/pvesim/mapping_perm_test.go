package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// Who sees and changes what of the mappings and metric servers
// (pve-manager API2/Cluster/Mapping/*.pm, MetricServer.pm): a list shows
// the ids where Mapping.Modify, .Use or .Audit is held; GET takes any of
// them on the id, PUT Mapping.Modify on the id, DELETE and POST
// Mapping.Modify on /mapping/<type>; the metric servers need Sys.Audit
// on / to be read.
func TestMappingPermissions(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	const pci = "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "gpu0", "map", pci)
	e.ok(nil, "POST", "/cluster/mapping/pci", "id", "gpu1", "map", pci)
	e.ok(nil, "POST", "/cluster/metrics/server/gr", "type", "graphite", "server", "127.0.0.9", "port", "2003")
	tok := e.newToken("ops@pve", "tok", false)
	e.grant("/mapping/pci/gpu0", "PVEMappingAdmin", "users", "ops@pve")

	r := e.as(tok, "GET", "/cluster/mapping/pci")
	if r.Status != 200 || !containsAll(string(r.Data), `"id":"gpu0"`) || containsAll(string(r.Data), `"id":"gpu1"`) {
		t.Errorf("list as ops: %d %s, want gpu0 only", r.Status, r.Data)
	}
	for _, c := range []struct {
		method, path string
		kv           []string
		want         int
	}{
		{"GET", "/cluster/mapping/pci/gpu0", nil, 200},
		{"GET", "/cluster/mapping/pci/gpu1", nil, 403},
		{"PUT", "/cluster/mapping/pci/gpu0", []string{"map", pci}, 200},
		{"PUT", "/cluster/mapping/pci/gpu1", []string{"map", pci}, 403},
		{"DELETE", "/cluster/mapping/pci/gpu0", nil, 403},
		{"POST", "/cluster/mapping/pci", []string{"id", "gpu2", "map", pci}, 403},
		{"GET", "/cluster/metrics/server", nil, 403},
		{"GET", "/cluster/metrics/server/gr", nil, 403},
	} {
		if r := e.as(tok, c.method, c.path, c.kv...); r.Status != c.want {
			t.Errorf("%s %s as ops: %d %q, want %d", c.method, c.path, r.Status, r.Message, c.want)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

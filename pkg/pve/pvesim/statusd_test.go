package pvesim_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// /cluster/resources lists a guest from the cluster's vmlist at once, but
// its name, status, template and sizes only from pvestatd's data, which
// lags by up to the status interval; the per-node list and status/current
// are current.
func TestClusterResourcesLag(t *testing.T) {
	e := newEnv(t, pvesim.Options{StatusInterval: time.Hour})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "name", "fresh", "memory", "512", "tags", "a")
	e.ok(nil, "POST", "/pools", "poolid", "team")
	e.ok(nil, "PUT", "/pools", "poolid", "team", "vms", "100")
	got := e.resource("qemu/100", func(map[string]any) bool { return true })
	want := map[string]any{"id": "qemu/100", "type": "qemu", "node": "pve", "vmid": float64(100), "status": "unknown",
		"tags": "a", "pool": "team"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("new guest's row (-want +got)\n%s", diff)
	}
	// The seeded template was there when pvestatd last ran.
	if tmpl := e.resource("qemu/9000", func(map[string]any) bool { return true }); tmpl["name"] != "ubuntu-24.04-cloud" || tmpl["template"] != float64(1) {
		t.Errorf("got template row %v, want its status data", tmpl)
	}
	rows := e.rows("/nodes/pve/qemu")
	found := false
	for _, r := range rows {
		found = found || r["vmid"] == float64(100) && r["name"] == "fresh" && r["status"] == "stopped"
	}
	if !found {
		t.Errorf("got node list %v, want VM 100 with its name and status", rows)
	}
	if got := e.status("qemu", "100"); got != "stopped" {
		t.Errorf("got status/current %q, want stopped", got)
	}

	t.Run("refreshed every interval", func(t *testing.T) {
		e := newEnv(t, pvesim.Options{StatusInterval: 5 * time.Millisecond})
		e.run("POST", "/nodes/pve/qemu", "vmid", "100", "name", "fresh", "memory", "512")
		e.resource("qemu/100", func(r map[string]any) bool { return r["name"] == "fresh" && r["status"] == "stopped" })
		e.run("POST", "/nodes/pve/qemu/100/status/start")
		e.resource("qemu/100", func(r map[string]any) bool { return r["status"] == "running" })
	})
}

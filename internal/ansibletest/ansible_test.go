package ansibletest_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/internal/ansibletest"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func startSim(t *testing.T) (*simtest.Sim, ansibletest.Target) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{
		TLS: true, Conformance: true,
		// pvestatd's names and states in /cluster/resources, which the
		// modules look guests up in, refresh quickly.
		Sim: pvesim.Options{StatusInterval: 50 * time.Millisecond},
	})
	return s, ansibletest.Target{URL: s.URL, TokenID: s.TokenID, Secret: s.Secret}
}

// TestLifecycle runs testdata/lifecycle.yml: VMs and containers created,
// updated, snapshotted, rolled back, disks added and moved, a template
// downloaded, pools, users, storages and realms read, everything deleted;
// the playbook's asserts are PVE's answers, and the schema checker in
// front of the simulator fails the test on any request or answer PVE
// 9.1's schema refuses.
func TestLifecycle(t *testing.T) {
	s, tg := startSim(t)
	out := ansibletest.Playbook(t, tg, filepath.Join("testdata", "lifecycle.yml"), nil)
	if !strings.Contains(out, "failed=0") {
		t.Errorf("the play has failures:\n%s", out)
	}
	// Every guest the play made is gone, and only what it deleted.
	var vms []map[string]any
	if err := s.Client.Do(t.Context(), "GET", "/cluster/resources", nil, &vms); err != nil {
		t.Fatal(err)
	}
	for _, r := range vms {
		if id, _ := r["vmid"].(float64); id == 300 || id == 301 {
			t.Errorf("guest %v outlived the play: %v", id, r)
		}
	}
}

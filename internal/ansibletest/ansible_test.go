package ansibletest_test

import (
	"path/filepath"
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

func TestSmoke(t *testing.T) {
	_, tg := startSim(t)
	out := ansibletest.Playbook(t, tg, filepath.Join("testdata", "smoke.yml"), nil)
	t.Log(out)
}

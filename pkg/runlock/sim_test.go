package runlock

import (
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// The simulator's token for these tests.
const (
	simToken  = "root@pam!pvectl"
	simSecret = "0b4c6f6e-sim-secret"
)

// simClients reaches one simulator under every connection name.
type simClients struct{ cl *pve.Client }

func (s *simClients) Client(string) (*pve.Client, error) { return s.cl, nil }

func newSim(t *testing.T, nodes ...string) *simClients {
	t.Helper()
	sc, _ := newCountingSim(t, nodes...)
	return sc
}

// requestCounter counts requests by "METHOD path".
type requestCounter struct{ c *simtest.Counter }

func (rc *requestCounter) reset() map[string]int { return rc.c.Reset() }

func newCountingSim(t *testing.T, nodes ...string) (*simClients, *requestCounter) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{Nodes: nodes, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	return &simClients{cl: s.Client}, &requestCounter{s.Requests}
}

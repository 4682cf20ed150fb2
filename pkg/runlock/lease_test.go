package runlock

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Issue 17: the run lock is a lease. Its holder renews it (the pool's
// expires= moves on); a holder whose lease ran out without renewal stops
// before its next write, naming it.
func TestSimRunLockLeaseRenewedAndExpires(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	l, err := Acquire(ctx, sim, []string{""}, Options{Info: NewInfo("apply"), Lease: MinLease})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	first, err := readLock(ctx, sim.cl)
	if err != nil || first == nil || first.Expires.IsZero() {
		t.Fatalf("lock %+v (%v), want one with a lease", first, err)
	}
	if d := time.Until(first.Expires); d < MinLease-2*time.Second || d > MinLease+2*time.Second {
		t.Errorf("lease runs out in %s, want about %s", d, MinLease)
	}
	renewed := false
	for range 40 { // a renewal comes every MinLease/3
		time.Sleep(100 * time.Millisecond)
		if cur, err := readLock(ctx, sim.cl); err == nil && cur != nil && cur.Expires.After(first.Expires) {
			renewed = true
			break
		}
	}
	if !renewed {
		t.Fatal("the lease was not renewed")
	}
	if err := l.Check(ctx); err != nil {
		t.Fatalf("check of a live lease: %v", err)
	}
	l.lease.stop() // no more renewals: the deadline passes
	l.lease.mu.Lock()
	l.lease.until = time.Now().Add(-time.Second)
	l.lease.mu.Unlock()
	var lost *LostLeaseError
	if err := l.Check(ctx); !errors.As(err, &lost) || !strings.Contains(err.Error(), "its lease ran out at") {
		t.Errorf("check after the deadline: got %v, want the lease named as run out", err)
	}
}

// A lease that ran out is stale: a run names it with its owner, host and
// age, and force-unlock removes it at once.
func TestSimRunLockStaleLease(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	old := Info{ID: "00aa11bb22cc33dd", Operation: "apply", Owner: "alice", Host: "build-7", PID: 4242,
		Started: time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second), Expires: time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Second)}
	if err := sim.cl.CreatePool(ctx, url.Values{"poolid": {Pool}, "comment": {old.comment()}}); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(ctx, sim, []string{""}, Options{Info: NewInfo("apply"), Timeout: time.Minute})
	var le *LockedError
	if !errors.As(err, &le) || !le.Stale() {
		t.Fatalf("got %v, want the stale lease reported at once", err)
	}
	for _, want := range []string{"a stale pvectl run lock", "apply by alice on build-7", "held for 10m", "its lease ran out 4m5", "pvectl force-unlock 00aa11bb22cc33dd"} {
		if !strings.Contains(le.Error()+" "+le.Hint(), want) {
			t.Errorf("%q / %q lacks %q", le.Error(), le.Hint(), want)
		}
	}
	info, err := ForceUnlock(ctx, sim.cl, old.ID)
	if err != nil || info.Revoked {
		t.Fatalf("force-unlock of a stale lease: %+v, %v, want it removed", info, err)
	}
	if cur, err := readLock(ctx, sim.cl); err != nil || cur != nil {
		t.Errorf("after force-unlock: %+v (%v), want no lock", cur, err)
	}
}

// twoURLs serves connection "a" through 127.0.0.1 and "b" through
// localhost: one cluster.
type twoURLs struct{ a, b *pve.Client }

func (c twoURLs) Client(name string) (*pve.Client, error) {
	if name == "b" {
		return c.b, nil
	}
	return c.a, nil
}
func (twoURLs) Connection(string) *spec.Connection { return &spec.Connection{Nodes: []string{"pve"}} }

// Two connections reaching one cluster through two URLs share one lock:
// the run takes it once and never waits for itself; a change through
// either passes the guard.
func TestSimRunLockOneClusterTwoURLs(t *testing.T) {
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret}})
	other, err := pve.NewClient(strings.Replace(s.URL, "127.0.0.1", "localhost", 1), pve.WithToken(simToken, simSecret))
	if err != nil {
		t.Fatal(err)
	}
	cl := twoURLs{a: s.Client, b: other}
	if cl.a.BaseURL() == cl.b.BaseURL() {
		t.Fatalf("one URL: %s", cl.a.BaseURL())
	}
	ctx := context.Background()
	s.Requests.Reset()
	l, err := Acquire(ctx, cl, []string{"a", "b"}, Options{Info: NewInfo("apply")})
	if err != nil {
		t.Fatalf("a run over two URLs of one cluster: %v", err)
	}
	if n := s.Requests.Reset()["POST /pools"]; n != 2 {
		t.Errorf("sent %d creates of the lock, want 2 (the second finds this run's own)", n)
	}
	if len(l.holdings()) != 1 {
		t.Errorf("holds %d locks, want 1", len(l.holdings()))
	}
	if err := l.Check(ctx); err != nil {
		t.Errorf("check: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, err := readLock(ctx, cl.b); err != nil || cur != nil {
		t.Errorf("after release: %+v (%v), want no lock", cur, err)
	}
}

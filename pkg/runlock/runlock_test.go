package runlock

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRunLockComment(t *testing.T) {
	in := Info{ID: "0123456789abcdef", Operation: "destroy", Owner: "ci; runner", Host: "build-1", PID: 4242,
		Started: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC), Token: "ci@pve!pvectl"}
	got, ok := parseComment(in.comment())
	in.Owner = "ci, runner" // the separator cannot appear inside a field
	if !ok || got != in {
		t.Errorf("parseComment(%q):\n got %+v\nwant %+v", in.comment(), got, in)
	}
	for _, c := range []string{"", "team pool", "pvectl apply; owner=x"} {
		if _, ok := parseComment(c); ok {
			t.Errorf("parseComment(%q): a pvectl lock, want not one (no id)", c)
		}
	}
}

// Issue 10 part 1(a): the run lock is a pool PVE makes atomically; a
// second run is refused naming the holder, or waits for it; the holder's
// release and force-unlock remove only the lock they mean.
func TestSimRunLock(t *testing.T) {
	sim, rc := newCountingSim(t, "pve")
	ctx := context.Background()
	a := NewInfo("apply")
	la, err := Acquire(ctx, sim, []string{"", "lab"}, Options{Info: a})
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	if n := rc.reset()["POST /pools"]; n != 1 {
		t.Errorf("two connections to one cluster took %d locks, want 1", n)
	}

	_, err = Acquire(ctx, sim, []string{""}, Options{Info: NewInfo("destroy")})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.ID != a.ID || le.Holder.Operation != "apply" || le.Holder.PID != os.Getpid() || le.Gone {
		t.Fatalf("second run: got %v, want refused naming the first", err)
	}
	for _, want := range []string{"another pvectl run holds the lock on " + sim.cl.BaseURL() + ": apply by ", "token " + simToken} {
		if !strings.Contains(le.Error(), want) {
			t.Errorf("refusal %q lacks %q", le.Error(), want)
		}
	}
	if !strings.Contains(le.Hint(), "pvectl force-unlock "+a.ID) {
		t.Errorf("hint %q does not say how to force-unlock", le.Hint())
	}

	// A run that waits gets the lock once the holder releases it.
	waited := make(chan *LockedError, 4)
	got := make(chan error, 1)
	b := NewInfo("apply")
	var lb *Lock
	go func() {
		var err error
		lb, err = Acquire(ctx, sim, []string{""}, Options{Info: b, Timeout: time.Minute,
			Waiting: func(e *LockedError) { waited <- e }})
		got <- err
	}()
	if e := <-waited; e.Holder.ID != a.ID {
		t.Errorf("waiting for %s, want %s", e.Holder.ID, a.ID)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting run: %v", err)
	}

	// force-unlock takes only the ID it is given, and revokes a lease
	// that has not run out: the holder finds out before its next write,
	// and a new run waits until it removed its lock.
	if _, err := ForceUnlock(ctx, sim.cl, a.ID); !errors.Is(err, ErrNoSuchLock) {
		t.Errorf("force-unlock of a released lock's ID: got %v, want ErrNoSuchLock", err)
	}
	holder, err := ForceUnlock(ctx, sim.cl, b.ID)
	if err != nil || holder.ID != b.ID || !holder.Revoked {
		t.Fatalf("force-unlock: got %+v, %v, want the live lease revoked", holder, err)
	}
	var lost *LostLeaseError
	if err := lb.Check(ctx); !errors.As(err, &lost) || lost.Lease.ID != b.ID || !strings.Contains(err.Error(), "force-unlock revoked it; stopping before the next write") {
		t.Fatalf("the holder's check: got %v, want the lost lease named", err)
	}
	c := NewInfo("apply")
	var lc *Lock
	go func() {
		var err error
		lc, err = Acquire(ctx, sim, []string{""}, Options{Info: c, Waiting: func(e *LockedError) { waited <- e }})
		got <- err
	}()
	if e := <-waited; e.Holder.ID != b.ID || !e.Holder.Revoked {
		t.Errorf("waiting for %+v, want the revoked %s", e.Holder, b.ID)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("release of a revoked lock: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("run after the revoke: %v", err)
	}
	// An old holder's release leaves the new holder's lock alone.
	old := &Lock{lease: newLease(MinLease), held: []heldLock{{client: sim.cl, info: b}}}
	if err := old.Release(ctx); err != nil {
		t.Fatalf("release of a lost lock: %v", err)
	}
	if cur, err := readLock(ctx, sim.cl); err != nil || cur == nil || cur.ID != c.ID {
		t.Errorf("after an old holder's release: lock %+v (%v), want the new holder's kept", cur, err)
	}
	if err := lc.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, err := readLock(ctx, sim.cl); err != nil || cur != nil {
		t.Errorf("after release: lock %+v (%v), want none", cur, err)
	}
}

// A lock whose holder ran on this host and is gone is reported stale; a
// pool of that name pvectl did not make is reported as such.
func TestSimRunLockStaleAndForeign(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no true(1): %v", err)
	}
	gone := NewInfo("apply")
	gone.PID = dead.ProcessState.Pid()
	if err := sim.cl.CreatePool(ctx, url.Values{"poolid": {Pool}, "comment": {gone.comment()}}); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(ctx, sim, []string{""}, Options{Info: NewInfo("apply"), Timeout: time.Minute})
	var le *LockedError
	if !errors.As(err, &le) || !le.Gone || !strings.Contains(le.Error(), "that process is gone, so the lock is stale") ||
		le.Hint() != "Remove it with: pvectl force-unlock "+gone.ID {
		t.Fatalf("stale lock: got %v, want it reported stale at once", err)
	}
	if err := sim.cl.DeletePool(ctx, Pool); err != nil {
		t.Fatal(err)
	}
	if err := sim.cl.CreatePool(ctx, url.Values{"poolid": {Pool}, "comment": {"made by hand"}}); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(ctx, sim, []string{""}, Options{Info: NewInfo("apply")})
	if !errors.As(err, &le) || le.Foreign != "made by hand" || !strings.Contains(le.Hint(), "pveum pool delete "+Pool) {
		t.Fatalf("foreign pool: got %v, want it named", err)
	}
}

package runlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
)

// The run lock is a lease. Its pool's comment says when it runs out
// (expires=, on PVE's clock, which every run reading it shares), and the
// holder renews it every third of its length while it runs. The holder
// keeps its own deadline on its own clock, from before each renewal was
// sent and leaseSlack short of the lease, and writes nothing past it
// unless a renewal pushed it on; it also reads the lock back before each
// change (Lock.Check; changes that check at once share a read sent after
// they asked: fresh.go) and stops at once when the lock is no longer its
// own. Another run takes no lease over before it ran out (plus
// leaseSlack): by then its holder has stopped writing for certain.
//
// force-unlock of a lease that has not run out does not delete it (the
// holder might still write), it revokes it: the holder stops before its
// next write, naming the lost lease, and removes it; a run that finds a
// revoked lease waits for that, or for the lease to run out, then takes
// the lock. So force-unlock never makes two writers. A lease that ran
// out is stale: runs name it with its owner, host and age, and
// force-unlock removes it at once.

// DefaultLease is the run lock's lease when Options leaves it 0.
const DefaultLease = time.Minute

// MinLease is the shortest lease: it must outlast leaseSlack on both
// sides and a renewal's round trip.
const MinLease = 6 * time.Second

// leaseSlack covers the error of knowing PVE's clock (its Date header
// has whole seconds, and the answer took a while).
const leaseSlack = 2 * time.Second

// lease is a Lock's renewal and deadline.
type lease struct {
	ttl time.Duration

	mu    sync.Mutex
	until time.Time // this run's own deadline (local clock)
	lost  error
	// started: the renewal runs (done closes when it ends).
	started bool
	quit    chan struct{}
	done    chan struct{}
}

func newLease(ttl time.Duration) *lease {
	return &lease{ttl: max(ttl, MinLease), quit: make(chan struct{}), done: make(chan struct{})}
}

// renewed moves the deadline to sent+ttl−slack; with several clusters
// the earliest counts.
func (l *lease) renewed(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	until := sent.Add(l.ttl - leaseSlack)
	if l.until.IsZero() || until.Before(l.until) {
		l.until = until
	}
}

// extend sets the deadline after a round that renewed every lock.
func (l *lease) extend(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until = sent.Add(l.ttl - leaseSlack)
}

func (l *lease) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
	}
}

// state is the loss, or the deadline.
func (l *lease) state() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until, l.lost
}

// start renews the lease of lock's held locks every third of it until
// stop.
func (l *lease) start(lock *Lock) {
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-l.quit:
				return
			case <-t.C:
			}
			if !lock.renew(l.ttl / 3) {
				return
			}
		}
	}()
}

// stop ends the renewal (once; a lease never started is stopped too).
func (l *lease) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	select {
	case <-l.quit:
		return
	default:
		close(l.quit)
	}
	if !started {
		return
	}
	select {
	case <-l.done:
	case <-time.After(l.ttl):
	}
}

// LostLeaseError is a run that lost its run lock while it ran: it stops
// before its next write.
type LostLeaseError struct {
	Connection string
	Endpoint   string
	Lease      Info
	Why        string
}

func (e *LostLeaseError) Error() string {
	where := e.Endpoint
	if e.Connection != "" {
		where += " (" + connLabel(e.Connection) + ")"
	}
	return fmt.Sprintf("lost the run lock %s on %s (%s): %s; stopping before the next write", e.Lease.ID, where, e.Lease, e.Why)
}

// renew renews every held lock once; false when the lease is lost.
func (l *Lock) renew(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent := time.Now()
	all := true
	for i, h := range l.holdings() {
		if err := l.confirm(ctx, h); err != nil {
			var lost *LostLeaseError
			if errors.As(err, &lost) {
				l.lease.lose(err)
				return false
			}
			all = false // not known: the deadline stays as it is
			continue
		}
		next := h.info
		next.Expires = h.client.ServerNow().Add(l.lease.ttl).Truncate(time.Second)
		if err := h.client.UpdatePool(ctx, url.Values{"poolid": {Pool}, "comment": {next.comment()}}); err != nil {
			all = false
			continue
		}
		l.mu.Lock()
		if i < len(l.held) {
			l.held[i].info = next
		}
		l.mu.Unlock()
	}
	if all {
		l.lease.extend(sent)
	}
	return true
}

// confirm reads h's lock back: a *LostLeaseError when it is no longer
// this run's.
func (l *Lock) confirm(ctx context.Context, h heldLock) error {
	cur, err := readLock(ctx, h.client)
	if err != nil {
		return err
	}
	lost := &LostLeaseError{Connection: h.conn, Endpoint: h.client.BaseURL(), Lease: h.info}
	switch {
	case cur == nil:
		lost.Why = "it was removed (force-unlock)"
	case cur.ID != h.info.ID:
		lost.Why = fmt.Sprintf("another run holds it now (%s, lock %s)", cur, cur.ID)
	case cur.Revoked:
		lost.Why = "force-unlock revoked it"
	default:
		return nil
	}
	return lost
}

// Check is the run lock's guard before a write: an error when the lease
// is lost (revoked or taken away, as read back now; or run out without
// renewal). A lock that cannot be read just now is not taken for lost:
// the lease's own deadline still holds. A nil Lock (--lock=false)
// always passes.
func (l *Lock) Check(ctx context.Context) error {
	if l == nil {
		return nil
	}
	held := l.holdings()
	if len(held) == 0 {
		return nil
	}
	until, lost := l.lease.state()
	if lost != nil {
		return lost
	}
	if time.Now().After(until) {
		h := held[0]
		err := &LostLeaseError{Connection: h.conn, Endpoint: h.client.BaseURL(), Lease: h.info,
			Why: fmt.Sprintf("its lease ran out at %s without renewal", until.UTC().Format("15:04:05 UTC"))}
		l.lease.lose(err)
		return err
	}
	for _, h := range held {
		err := h.reads.do(ctx, func(ctx context.Context) error { return l.confirm(ctx, h) })
		var le *LostLeaseError
		if errors.As(err, &le) {
			l.lease.lose(err)
			return err
		}
	}
	return nil
}

// awaitRevoked waits until the revoked lock held names is gone or its
// lease ran out, then removes it if it is still that one.
func awaitRevoked(ctx context.Context, cl *pve.Client, held *LockedError, delay time.Duration) error {
	end := held.Holder.Expires.Add(leaseSlack)
	for {
		cur, err := readLock(ctx, cl)
		if err != nil {
			return fmt.Errorf("read the run lock (pool %s): %w", Pool, err)
		}
		if cur == nil || cur.ID != held.Holder.ID {
			return nil
		}
		left := end.Sub(cl.ServerNow())
		if left <= 0 || cur.Expires.IsZero() {
			if err := cl.DeletePool(ctx, Pool); err != nil && !pve.IsNotFound(err) {
				return fmt.Errorf("remove the revoked run lock %s: %w", cur.ID, err)
			}
			return nil
		}
		if err := pve.Sleep(ctx, min(delay, left+10*time.Millisecond)); err != nil {
			return err
		}
	}
}

// ErrNoSuchLock is ForceUnlock's answer for a cluster that holds no run
// lock of the ID given.
var ErrNoSuchLock = errors.New("no such run lock")

// ForceUnlock removes the run lock whose ID is id from the cluster cl
// talks to, and returns who held it. A lease that has not run out (its
// holder may still write) is revoked instead (the returned info says
// Revoked): the holder stops before its next write and removes it, and a
// new run waits for that or for the lease to run out. A lock with another
// ID (or none) is an error: force-unlock removes only the lock its user
// saw.
func ForceUnlock(ctx context.Context, cl *pve.Client, id string) (Info, error) {
	cur, err := readLock(ctx, cl)
	if err != nil {
		return Info{}, fmt.Errorf("read the run lock (pool %s): %w", Pool, err)
	}
	switch {
	case cur == nil:
		return Info{}, fmt.Errorf("%w: %s holds no pvectl run lock", ErrNoSuchLock, cl.BaseURL())
	case cur.ID != id:
		return *cur, fmt.Errorf("%w: the run lock on %s has the ID %s, not %s (%s); it was left alone", ErrNoSuchLock, cl.BaseURL(), cur.ID, id, cur)
	}
	held, err := lockedBy(ctx, "", cl)
	if err != nil {
		return *cur, err
	}
	if held != nil && held.Foreign == "" && !held.Stale() && !cur.Expires.IsZero() {
		rev := *cur
		rev.Revoked = true
		if err := cl.UpdatePool(ctx, url.Values{"poolid": {Pool}, "comment": {rev.comment()}}); err != nil {
			return *cur, fmt.Errorf("revoke the run lock %s: %w", id, err)
		}
		return rev, nil
	}
	if err := cl.DeletePool(ctx, Pool); err != nil && !pve.IsNotFound(err) {
		return *cur, fmt.Errorf("delete pool %s: %w", Pool, err)
	}
	return *cur, nil
}

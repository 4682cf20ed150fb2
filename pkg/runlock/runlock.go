package runlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The run lock. pvectl keeps no state file, so two runs against one
// cluster would both find a VM missing and both create it. apply and
// destroy therefore hold a lock that lives in PVE itself: a pool named
// Pool, whose comment says who holds it. PVE creates a pool under
// the cluster-wide user.cfg lock and refuses one that exists ("pool '…'
// already exists", pve-manager PVE/API2/Pool.pm create_pool), so exactly
// one of two runs gets it; the holder deletes it when it ends. A pool is
// also the lightest object PVE offers for this: it needs only
// Pool.Allocate, holds nothing, and shows in the web UI's pool view while
// a run holds it.

// Pool is the pool that is pvectl's run lock (specs may not name
// it: spec.RunLockPool).
const Pool = spec.RunLockPool

// commentPrefix starts the comment of a run lock pool.
const commentPrefix = "pvectl "

// Info is who holds a run lock, as its pool's comment records it.
type Info struct {
	// ID names this holding: force-unlock takes it, so that it removes
	// only the lock its user saw.
	ID        string
	Operation string // apply | destroy
	Owner     string // the OS user who ran pvectl
	Host      string
	PID       int
	Started   time.Time
	Token     string // the API token the run connects with
	// Expires is when the holder's lease runs out, on PVE's clock: the
	// holder renews it while it runs (lease.go). Zero in a lock an
	// older pvectl took.
	Expires time.Time
	// Revoked: force-unlock took the lease away from a holder that may
	// still run; it stops before its next write and removes the lock.
	Revoked bool
}

// NewInfo describes this process as the holder of a lock for op.
func NewInfo(op string) Info {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	info := Info{ID: hex.EncodeToString(b), Operation: op, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}
	if u, err := user.Current(); err == nil {
		info.Owner = u.Username
	} else {
		info.Owner = os.Getenv("USER")
	}
	info.Host, _ = os.Hostname()
	return info
}

// comment is how the pool records the holder: "pvectl apply; owner=…;
// host=…; pid=…; started=…; token=…; id=…" (one line: PVE keeps it in
// user.cfg, escaped).
func (i Info) comment() string {
	s := fmt.Sprintf("%s%s; owner=%s; host=%s; pid=%d; started=%s; token=%s; id=%s", commentPrefix,
		i.Operation, clean(i.Owner), clean(i.Host), i.PID, i.Started.UTC().Format(time.RFC3339), clean(i.Token), i.ID)
	if !i.Expires.IsZero() {
		s += "; expires=" + i.Expires.UTC().Format(time.RFC3339)
	}
	if i.Revoked {
		s += "; revoked=1"
	}
	return s
}

// clean keeps a field within its place in the comment.
func clean(s string) string {
	return strings.NewReplacer(";", ",", "\n", " ", "\r", " ").Replace(s)
}

// parseComment reads a lock pool's comment; false when it is not one
// pvectl wrote.
func parseComment(comment string) (Info, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(comment), commentPrefix)
	if !ok {
		return Info{}, false
	}
	parts := strings.Split(rest, "; ")
	info := Info{Operation: parts[0]}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "owner":
			info.Owner = v
		case "host":
			info.Host = v
		case "pid":
			info.PID, _ = strconv.Atoi(v)
		case "started":
			info.Started, _ = time.Parse(time.RFC3339, v)
		case "token":
			info.Token = v
		case "id":
			info.ID = v
		case "expires":
			info.Expires, _ = time.Parse(time.RFC3339, v)
		case "revoked":
			info.Revoked = v == "1"
		}
	}
	return info, info.ID != ""
}

// String says who holds the lock: "apply by alice on build-1 (pid 4242,
// token ci@pve!pvectl), started 2025-01-02 10:00:00 UTC".
func (i Info) String() string {
	var extra []string
	if i.PID != 0 {
		extra = append(extra, fmt.Sprintf("pid %d", i.PID))
	}
	if i.Token != "" {
		extra = append(extra, "token "+i.Token)
	}
	s := fmt.Sprintf("%s by %s on %s", i.Operation, orUnknown(i.Owner), orUnknown(i.Host))
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	if !i.Started.IsZero() {
		s += ", started " + i.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// LockedError is another run's lock, found where this run wanted to take
// its own.
type LockedError struct {
	Connection string // the connection's name ("" = default)
	Endpoint   string // the cluster's API root
	Holder     Info
	// Foreign is the comment of a pool named Pool that pvectl did
	// not write ("" when it did).
	Foreign string
	// Age is how long the holder has held it (by this machine's clock).
	Age time.Duration
	// Gone is set when the holder ran on this host and its process is
	// gone: the lock is stale for certain.
	Gone bool
	// Expired is how long ago the holder's lease ran out (0: it has not):
	// the holder stopped writing then, so the lock is stale.
	Expired time.Duration
}

func (e *LockedError) Error() string {
	where := "on " + e.Endpoint
	if e.Connection != "" {
		where += " (" + connLabel(e.Connection) + ")"
	}
	if e.Foreign != "" {
		return fmt.Sprintf("the pool %s exists %s but pvectl did not make it (comment %q): pvectl uses it as its run lock", Pool, where, e.Foreign)
	}
	if e.Stale() {
		msg := fmt.Sprintf("a stale pvectl run lock %s: %s, held for %s", where, e.Holder, durfmt.Format(e.Age))
		if e.Gone {
			return msg + "; that process is gone, so the lock is stale"
		}
		return msg + fmt.Sprintf("; its lease ran out %s ago without renewal, so that run stopped writing", durfmt.Format(e.Expired))
	}
	msg := fmt.Sprintf("another pvectl run holds the lock %s: %s (%s ago)", where, e.Holder, durfmt.Format(e.Age))
	if e.Holder.Revoked {
		msg += "; force-unlock revoked it: that run stops before its next write"
	}
	return msg
}

// Stale reports whether the lock's holder no longer runs or writes.
func (e *LockedError) Stale() bool { return e.Gone || e.Expired > 0 }

// Hint says what to do about the lock.
func (e *LockedError) Hint() string {
	if e.Foreign != "" {
		return fmt.Sprintf("Rename or remove that pool in PVE (pveum pool delete %s), then run again.", Pool)
	}
	if e.Stale() {
		return "Remove it with: pvectl force-unlock " + e.Holder.ID
	}
	return "Wait for that run to end (--lock-timeout waits for it), or, if it is no longer running, remove its lock with: pvectl force-unlock " + e.Holder.ID
}

// Options tune Acquire.
type Options struct {
	// Info describes this run (NewInfo); its Token is filled in
	// per connection.
	Info Info
	// Timeout is how long to wait for another run's lock (0: not at all).
	Timeout time.Duration
	// Waiting is told when the run starts to wait for a holder (once per
	// holder).
	Waiting func(e *LockedError)
	// Lease is how long the lock stays this run's without a renewal
	// (0: DefaultLease); it is renewed every third of it.
	Lease time.Duration
}

// Lock is the run locks a run holds, one per cluster.
type Lock struct {
	lease *lease
	mu    sync.Mutex // guards held's infos (renewal)
	held  []heldLock
}

// holdings is a copy of the held locks.
func (l *Lock) holdings() []heldLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.held)
}

type heldLock struct {
	conn   string
	client *pve.Client
	info   Info
	// reads shares Check's read-backs of this lock (fresh.go).
	reads *freshRead
}

// lockPoll bounds the pause between two tries to take a lock.
const (
	lockPollMin = 500 * time.Millisecond
	lockPollMax = 5 * time.Second
)

// Acquire takes the run lock on every cluster the named
// connections reach, in a fixed order (so two runs over the same
// clusters cannot each hold one and wait for the other), and keeps it as
// a lease that it renews until Release (lease.go). Connections with
// one API root are one cluster; so are two roots of one cluster (an
// address and a name, a load balancer and a node): the lock the first one
// made, found through the second, carries this run's own ID and is taken
// once, never waited for. When one is held by another run it waits up to
// opts.Timeout, then fails with a *LockedError; locks taken so far are
// released.
func Acquire(ctx context.Context, clients Clients, conns []string, opts Options) (*Lock, error) {
	type target struct {
		conn string
		cl   *pve.Client
	}
	byEndpoint := map[string]target{}
	for _, name := range conns {
		cl, err := clients.Client(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", connLabel(name), err)
		}
		if _, dup := byEndpoint[cl.BaseURL()]; !dup {
			byEndpoint[cl.BaseURL()] = target{name, cl}
		}
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	lock := &Lock{lease: newLease(opts.Lease)}
	deadline := time.Now().Add(opts.Timeout)
	for _, ep := range lockOrder(ctx, byEndpoint, func(t target) *pve.Client { return t.cl }) {
		t := byEndpoint[ep]
		info := opts.Info
		info.Token = t.cl.TokenID()
		sent := time.Now()
		shared, err := take(ctx, t.conn, t.cl, &info, opts.Lease, deadline, opts.Waiting)
		if err != nil {
			lock.Release(context.WithoutCancel(ctx))
			return nil, err
		}
		if shared {
			continue // a cluster taken through another connection already
		}
		lock.held = append(lock.held, heldLock{conn: t.conn, client: t.cl, info: info, reads: &freshRead{}})
		lock.lease.renewed(sent)
	}
	lock.lease.start(lock)
	return lock, nil
}

// lockOrder is the order in which the clusters' locks are taken: by the
// cluster's node set (GET /nodes, which every token may read), then by
// URL, so that two runs that reach the same clusters through other URLs
// (one by address, one by name) still take them in one order and cannot
// each hold one and wait for the other. A cluster whose nodes cannot be
// read sorts by its URL alone.
func lockOrder[T any](ctx context.Context, byEndpoint map[string]T, client func(T) *pve.Client) []string {
	key := map[string]string{}
	for ep, t := range byEndpoint {
		names, err := client(t).NodeNames(ctx)
		if err == nil {
			key[ep] = strings.Join(names, ",")
		}
	}
	eps := slices.Collect(maps.Keys(byEndpoint))
	slices.SortFunc(eps, func(a, b string) int {
		if c := strings.Compare(key[a], key[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return eps
}

// take creates the lock pool on one cluster, waiting for another
// holder until deadline. shared: the cluster holds this run's lock
// already, taken through another connection.
func take(ctx context.Context, conn string, cl *pve.Client, info *Info, ttl time.Duration, deadline time.Time, waiting func(*LockedError)) (shared bool, err error) {
	if err := checkLockPerms(ctx, conn, cl); err != nil {
		return false, err
	}
	seen := ""
	faults := 0
	for delay := lockPollMin; ; delay = min(2*delay, lockPollMax) {
		info.Expires = cl.ServerNow().Add(ttl).Truncate(time.Second)
		params := url.Values{"poolid": {Pool}, "comment": {info.comment()}}
		err := cl.CreatePool(ctx, params)
		if err == nil {
			return false, nil
		}
		var ae *pve.APIError
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, "already exists") {
			// No answer, or a proxy's: PVE may have made the pool. Ours if
			// it names us; else (no pool, or another's) try again, a few
			// times: the ID makes a second create safe.
			cur, rerr := readLock(ctx, cl)
			if rerr == nil && cur != nil && cur.ID == info.ID {
				return false, nil
			}
			faults++
			if !mayRetryLock(err) || faults >= lockCreateTries {
				return false, fmt.Errorf("%s: take the run lock (create pool %s): %w", connLabel(conn), Pool, err)
			}
			if err := pve.Sleep(ctx, delay); err != nil {
				return false, err
			}
			continue
		}
		held, err := lockedBy(ctx, conn, cl)
		if err != nil {
			return false, err
		}
		switch {
		case held == nil:
			continue // released meanwhile: try again at once
		case held.Foreign == "" && held.Holder.ID == info.ID:
			return true, nil // this run's own, made through another connection
		case held.Foreign == "" && held.Holder.Revoked:
			// Revoked: its holder stops before its next write and removes
			// it; it cannot write past its lease, after which it is
			// removed here. Waited for whatever --lock-timeout says.
			if held.Holder.ID != seen && waiting != nil {
				seen = held.Holder.ID
				waiting(held)
			}
			if err := awaitRevoked(ctx, cl, held, delay); err != nil {
				return false, err
			}
			continue
		case held.Foreign != "" || time.Now().After(deadline) || held.Stale():
			return false, held
		}
		if held.Holder.ID != seen && waiting != nil {
			seen = held.Holder.ID
			waiting(held)
		}
		if err := pve.Sleep(ctx, min(delay, time.Until(deadline)+time.Millisecond)); err != nil {
			return false, err
		}
	}
}

// lockCreateTries bounds the tries to create or delete the lock pool
// when PVE's answer was lost or a proxy failed.
const lockCreateTries = 3

// mayRetryLock: a lost answer or a server-side failure other than PVE's
// refusal may be tried again (the lock's ID tells whether the first one
// got through); a 4xx will not change.
func mayRetryLock(err error) bool {
	var ae *pve.APIError
	return !errors.As(err, &ae) || ae.Status >= 500
}

// checkLockPerms is the lock's permission preflight: creating and
// deleting a pool checks Pool.Allocate on it (Pool.pm create_pool,
// delete_pool). PVE drops the ACLs of a pool's own path with the pool
// (AccessControl.pm delete_pool_acl), so the grant must sit above it.
func checkLockPerms(ctx context.Context, conn string, cl *pve.Client) error {
	perms, err := cl.Permissions(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", connLabel(conn), err)
	}
	path := "/pool/" + Pool
	if perms.Has(path, "Pool.Allocate") {
		return nil
	}
	token := cl.TokenID()
	user, _, _ := strings.Cut(token, "!")
	return fmt.Errorf("%s: the API token %s lacks Pool.Allocate on %s, needed to take pvectl's run lock (the pool %s, which apply and destroy create and delete). "+
		"Grant it on /pool, not on %s itself (PVE deletes a pool's own ACLs with the pool), e.g. the role PVEPoolAdmin: "+
		"pveum acl modify /pool --roles PVEPoolAdmin --tokens '%s' (a privilege-separated token holds only what its user holds too: add --users %s); "+
		"or run with --lock=false at your own risk",
		connLabel(conn), token, path, Pool, path, token, user)
}

// lockedBy reads who holds the lock pool (nil when there is none).
func lockedBy(ctx context.Context, conn string, cl *pve.Client) (*LockedError, error) {
	p, err := cl.Pool(ctx, Pool)
	if pve.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read the run lock (pool %s): %w", connLabel(conn), Pool, err)
	}
	e := &LockedError{Connection: conn, Endpoint: cl.BaseURL()}
	info, ok := parseComment(p.Comment)
	if !ok {
		e.Foreign = p.Comment
		if e.Foreign == "" {
			e.Foreign = "(none)"
		}
		return e, nil
	}
	e.Holder = info
	if !info.Started.IsZero() {
		e.Age = max(time.Since(info.Started), 0)
	}
	if host, _ := os.Hostname(); host != "" && host == info.Host && info.PID > 0 {
		e.Gone = processGone(info.PID)
	}
	if !info.Expires.IsZero() {
		e.Expired = max(cl.ServerNow().Sub(info.Expires.Add(leaseSlack)), 0)
	}
	return e, nil
}

// readLock returns the holder the lock pool names (nil: no lock, or
// not a pvectl lock).
func readLock(ctx context.Context, cl *pve.Client) (*Info, error) {
	p, err := cl.Pool(ctx, Pool)
	if pve.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	info, ok := parseComment(p.Comment)
	if !ok {
		return nil, nil
	}
	return &info, nil
}

// Release removes the locks this run holds. It checks first that each
// is still its own (a force-unlock and another run may have taken its
// place) and leaves other runs' locks alone. It goes on after a failure
// and returns every problem, each saying how to remove the lock by hand.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.lease.stop()
	var errs []error
	for _, h := range l.holdings() {
		if err := releaseOne(ctx, h); err != nil {
			errs = append(errs, fmt.Errorf("%s: release the run lock: %w (remove it with: pvectl force-unlock %s)", connLabel(h.conn), err, h.info.ID))
		}
	}
	l.mu.Lock()
	l.held = nil
	l.mu.Unlock()
	return errors.Join(errs...)
}

// releaseOne deletes h's pool if it is still h's; a delete whose answer
// was lost or failed in a proxy is tried again (the ID is checked first
// each time, so a second delete never takes another run's lock).
func releaseOne(ctx context.Context, h heldLock) error {
	var err error
	for try, delay := 1, lockPollMin; ; try, delay = try+1, 2*delay {
		var cur *Info
		if cur, err = readLock(ctx, h.client); err != nil {
			return err
		}
		if cur == nil || cur.ID != h.info.ID {
			return nil // gone: removed, or force-unlocked (and maybe taken by another run)
		}
		if err = h.client.DeletePool(ctx, Pool); err == nil || pve.IsNotFound(err) {
			return nil
		}
		if !mayRetryLock(err) || try >= lockCreateTries {
			return err
		}
		if err := pve.Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// Clients gives the API client of a named connection ("" is the one
// configured from PROXMOX_* variables); planner.Clients is one.
type Clients interface {
	Client(connection string) (*pve.Client, error)
}

// connLabel names a connection in messages, as the planner does.
func connLabel(name string) string {
	if name == "" {
		return "default connection"
	}
	return "connection " + name
}

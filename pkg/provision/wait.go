package provision

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pvectl/pvectl/internal/durfmt"
)

// Default waits; Options overrides them.
const (
	DefaultTimeout  = 10 * time.Minute
	DefaultInterval = time.Second
	maxInterval     = 5 * time.Second
)

// WaitError is a wait that reached its deadline: it names the VM, the
// address (when one was known), what was awaited and the last error seen.
type WaitError struct {
	VM      string
	Address string // host or host:port; "" while the address was awaited
	Waiting string // "an address", "ssh", "cloud-init"…
	Timeout time.Duration
	Last    error
}

func (e *WaitError) Error() string {
	at := ""
	if e.Address != "" {
		at = " at " + e.Address
	}
	last := "none"
	if e.Last != nil {
		last = e.Last.Error()
	}
	return fmt.Sprintf("vm %s%s: gave up after %s waiting for %s (provisionTimeout); last error: %s", e.VM, at, durfmt.Format(e.Timeout), e.Waiting, last)
}

func (e *WaitError) Unwrap() error { return e.Last }

// permanent marks an error that waiting longer cannot cure (a changed host
// key, cloud-init reporting error): poll returns it at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// waiter runs the polls of one guest against one deadline: reaching the
// guest (address, SSH, cloud-init) is one wait of provisionTimeout, shown
// step by step through progress.
type waiter struct {
	vm       string
	deadline time.Time
	timeout  time.Duration
	interval time.Duration
	progress func(string)
	shown    string
}

func newWaiter(vm string, o *Options) *waiter {
	return &waiter{
		vm:       vm,
		timeout:  o.timeout(),
		deadline: time.Now().Add(o.timeout()),
		interval: o.interval(),
		progress: o.Progress,
	}
}

func (w *waiter) say(msg string) {
	if msg != w.shown && w.progress != nil {
		w.shown = msg
		w.progress(msg)
	}
}

// poll calls try until it is done, returns a permanent error, or the
// deadline passes. try says what it waits for ("ssh on 10.0.0.5:22",
// shown when it changes) and why it is not done yet. The loop is bounded
// by the deadline and by ctx.
func (w *waiter) poll(ctx context.Context, address string, try func(ctx context.Context) (done bool, waitingFor string, err error)) error {
	dctx, cancel := context.WithDeadline(ctx, w.deadline)
	defer cancel()
	interval := w.interval
	limit := max(min(8*w.interval, maxInterval), w.interval)
	var last error
	waiting := "the guest"
	for {
		done, waitingFor, err := try(dctx)
		if done {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.err
		}
		// An attempt the deadline cut short says less than the failure
		// before it ("connection refused" beats "i/o timeout"). A
		// connection's own deadline may fire a moment before the context
		// notices, so the clock decides.
		if err != nil && (last == nil || (dctx.Err() == nil && time.Now().Before(w.deadline))) {
			last = err
		}
		if waitingFor != "" {
			waiting = waitingFor
			w.say(fmt.Sprintf("vm %s: waiting for %s", w.vm, waiting))
		}
		t := time.NewTimer(interval)
		select {
		case <-dctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &WaitError{VM: w.vm, Address: address, Waiting: waiting, Timeout: w.timeout, Last: last}
		case <-t.C:
		}
		interval = min(2*interval, limit)
	}
}

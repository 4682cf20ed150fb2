package runlock

import (
	"context"
	"errors"
	"sync"
)

// freshRead shares the lock's read-back among the changes that check it
// at once (Lock.Check runs before every write, up to --parallelism at a
// time): a caller gets the answer of a read sent after it asked, never of
// an older one, so it learns as much as a read of its own would tell it,
// and P checks in a burst cost about two reads instead of P.
type freshRead struct {
	mu      sync.Mutex
	next    *readCall // the read to be sent next: callers join it
	running *readCall // the read in flight
}

type readCall struct {
	done chan struct{}
	err  error
}

// do returns the outcome of a call of read that began after do was
// called: its own, or one it shares. A nil freshRead shares nothing.
func (f *freshRead) do(ctx context.Context, read func(context.Context) error) error {
	if f == nil {
		return read(ctx)
	}
	f.mu.Lock()
	if c := f.next; c != nil {
		f.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if c.err != nil && ctx.Err() == nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) {
			// The sharer's context ended, not ours: read for ourselves.
			return read(ctx)
		}
		return c.err
	}
	c := &readCall{done: make(chan struct{})}
	f.next = c
	prev := f.running
	f.mu.Unlock()
	if prev != nil {
		// Sent only after the read in flight, which may have been sent
		// before a caller that joins c asked. prev ends: its read is
		// bounded by its own context.
		<-prev.done
	}
	f.mu.Lock()
	f.next, f.running = nil, c
	f.mu.Unlock()
	c.err = read(ctx)
	close(c.done)
	f.mu.Lock()
	if f.running == c {
		f.running = nil
	}
	f.mu.Unlock()
	return c.err
}

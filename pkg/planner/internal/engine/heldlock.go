package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// heldLocks are the locks in PVE that changes of one apply take and that
// outlive the change that took them (SDN's cluster lock is taken by the
// first SDN write and released by the commit): one per key (connection
// and lock), taken once, and released by Apply at its end on every path,
// what the commit did not release already. Tokens never leave this value
// but for the requests that need them.
type heldLocks struct {
	mu   sync.Mutex
	held map[string]*applyLock
}

type applyLock struct {
	token   string
	release func(ctx context.Context, token string) error
}

// Take returns the token of the lock key, acquiring it with acquire the
// first time; release is how Apply gives it back at the end.
func (h *heldLocks) Take(ctx context.Context, key string, acquire func(ctx context.Context) (string, error), release func(ctx context.Context, token string) error) (string, error) {
	if h == nil {
		return "", errors.New("internal error: no lock holder for this apply")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.held[key]; l != nil {
		return l.token, nil
	}
	token, err := acquire(ctx)
	if err != nil {
		return "", err
	}
	if h.held == nil {
		h.held = map[string]*applyLock{}
	}
	h.held[key] = &applyLock{token: token, release: release}
	return token, nil
}

// Released forgets key: a call released the lock with its work (a commit
// with release-lock).
func (h *heldLocks) Released(key string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, key)
}

// releaseAll gives back every lock still held, even when ctx was
// cancelled (an interrupted apply releases its locks too); it returns
// what could not be released.
func (h *heldLocks) releaseAll(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(h.held)) {
		l := h.held[key]
		if err := l.release(ctx, l.token); err != nil {
			errs = append(errs, fmt.Errorf("release lock: %w", err))
		}
		delete(h.held, key)
	}
	return errors.Join(errs...)
}

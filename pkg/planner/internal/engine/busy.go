package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/spec"
)

// BusyError is a resource whose live object a PVE task holds (a guest
// locked by a backup, or one that may still be being created): a plan
// that judged it now would be wrong — "absent" for a guest that is being
// created is a second guest — so Build refuses it, and PlanLive waits for
// it first.
type BusyError struct {
	Address string
	VMIDs   []int  // the guests that hold it
	What    string // "vm 100 is locked (backup): a PVE task is working on it"
	Hint    string // what to do
	// Waited is how long PlanLive waited for it (0: it did not).
	Waited time.Duration
}

func (e *BusyError) Error() string {
	msg := e.Address + ": " + e.What
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (still, after waiting %s)", durfmt.Format(e.Waited))
	}
	return msg + ": " + e.Hint
}

// BusyErrors picks the BusyErrors out of err (a join of per-resource
// errors); only is false when err holds any other error as well.
func BusyErrors(err error) (busy []*BusyError, only bool) {
	if err == nil {
		return nil, false
	}
	only = true
	var walk func(error)
	walk = func(e error) {
		var be *BusyError
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if errors.As(e, &be) {
			busy = append(busy, be)
			return
		}
		only = false
	}
	walk(err)
	return busy, only && len(busy) > 0
}

// planLive is PlanLive (api.go).
func planLive(ctx context.Context, clients Clients, set *spec.Set, opts Options) (*Plan, error) {
	start := time.Now()
	for delay := busyPollMin; ; delay = min(2*delay, busyPollMax) {
		obs, err := ObserveWith(ctx, clients, set, ObserveOptions{ReadConcurrency: opts.ReadConcurrency})
		if err != nil {
			return nil, fmt.Errorf("read live state: %w", err)
		}
		p, err := Build(ctx, set, obs, opts)
		busy, only := BusyErrors(err)
		waited := time.Since(start)
		if !only {
			return p, err
		}
		left := opts.BusyTimeout - waited
		if left <= 0 {
			if opts.BusyTimeout > 0 {
				for _, b := range busy {
					b.Waited = waited
				}
			}
			return p, err
		}
		if opts.Waiting != nil {
			opts.Waiting(busy, waited)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(delay, left)):
		}
	}
}

// How often PlanLive looks again at busy objects.
const (
	busyPollMin = 500 * time.Millisecond
	busyPollMax = 5 * time.Second
)

// StaleError is a change refused because its object changed since the
// plan was made (by hand, or by another tool): writing the plan's
// values would overwrite that edit unseen.
type StaleError struct {
	Address string
	// Why says how the change was seen: "digest" (PVE refused the
	// plan's config digest), or what differs.
	Why string
	// Err is PVE's refusal, when it was PVE that saw it.
	Err error
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%s changed since the plan (%s): run plan again", e.Address, e.Why)
}

func (e *StaleError) Unwrap() error { return e.Err }

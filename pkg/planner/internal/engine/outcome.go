package engine

import (
	"errors"
	"slices"
	"sync"
)

// Outcomes a Result reports besides done and failed: interface changes
// undone by a reverted network commit, and task warnings.

// RevertError is a network commit that failed and was reverted: the
// interface changes in Reverted (addresses) were made, then undone, so a
// summary must not count them as done.
type RevertError struct {
	Node     string
	Reverted []string
	Err      error
}

func (e *RevertError) Error() string { return e.Err.Error() }
func (e *RevertError) Unwrap() error { return e.Err }

// settleReverts moves the changes a failed commit reverted from Done to
// Reverted.
func (r *Result) settleReverts() {
	for _, err := range r.Failed {
		var re *RevertError
		if !errors.As(err, &re) {
			continue
		}
		for _, a := range re.Reverted {
			if i := slices.Index(r.Done, a); i >= 0 {
				r.Done = slices.Delete(r.Done, i, i+1)
				if r.Reverted == nil {
					r.Reverted = map[string]string{}
				}
				r.Reverted[a] = "reverted: the network commit on node " + re.Node + " failed"
			}
		}
	}
}

// warnLog collects task warnings per change, from the changes' goroutines.
type warnLog struct {
	mu sync.Mutex
	m  map[string][]string
}

func (w *warnLog) add(addr, msg string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string][]string{}
	}
	w.m[addr] = append(w.m[addr], msg)
}

// all returns the warnings collected (an empty map for none).
func (w *warnLog) all() map[string][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		return map[string][]string{}
	}
	return w.m
}

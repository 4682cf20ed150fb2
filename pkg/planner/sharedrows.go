package planner

import (
	"context"
	"sync"

	"github.com/pvectl/pvectl/pkg/pve"
)

// sharedList is one list that deferred reads share: read by the first
// that asks, waited for by the others.
type sharedList struct {
	once sync.Once
	rows []*pve.Config
	err  error
}

// sharedRows is the list at path, read once with read however many
// deferred reads (loadAll runs them at once) ask for it.
func (lc *liveConn) sharedRows(ctx context.Context, path string, read func(context.Context) ([]*pve.Config, error)) ([]*pve.Config, error) {
	lc.sharedMu.Lock()
	if lc.shared == nil {
		lc.shared = map[string]*sharedList{}
	}
	l := lc.shared[path]
	if l == nil {
		l = &sharedList{}
		lc.shared[path] = l
	}
	lc.sharedMu.Unlock()
	l.once.Do(func() { l.rows, l.err = read(ctx) })
	return l.rows, l.err
}

// readOnce is *v, read by fetch the first time (done says it was).
func readOnce[T any](done *bool, v *T, fetch func() (T, error)) (T, error) {
	if *done {
		return *v, nil
	}
	x, err := fetch()
	if err != nil {
		var zero T
		return zero, err
	}
	*v, *done = x, true
	return x, nil
}

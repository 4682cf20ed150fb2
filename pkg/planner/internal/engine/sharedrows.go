package engine

import (
	"context"
	"sync"

	"github.com/pvectl/pvectl/pkg/pve"
)

// sharedList is one list that deferred reads share: read by the first
// that asks, waited for by the others.
type sharedList struct {
	once sync.Once
	Rows []*pve.Config
	err  error
}

// sharedRows is the list at path, read once with read however many
// deferred reads (loadAll runs them at once) ask for it.
func (lc *LiveConn) sharedRows(ctx context.Context, path string, read func(context.Context) ([]*pve.Config, error)) ([]*pve.Config, error) {
	lc.SharedMu.Lock()
	if lc.Shared == nil {
		lc.Shared = map[string]*sharedList{}
	}
	l := lc.Shared[path]
	if l == nil {
		l = &sharedList{}
		lc.Shared[path] = l
	}
	lc.SharedMu.Unlock()
	l.once.Do(func() { l.Rows, l.err = read(ctx) })
	return l.Rows, l.err
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

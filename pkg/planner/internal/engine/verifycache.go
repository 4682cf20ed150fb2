package engine

import (
	"context"
	"sync"

	"github.com/pvectl/pvectl/pkg/pve"
)

// readCache holds, for one Verify, the lists that re-reading many guests
// shares: each client's /cluster/resources and what kinds make of it
// (their guest rows by type), read once instead of once per guest (a
// saved plan of N creates made N cluster-wide lists, one after another).
type readCache struct {
	mu    sync.Mutex
	lists map[*pve.Client]*clusterRead
	memos map[any]*memoRead
}

type clusterRead struct {
	once sync.Once
	rows []pve.ClusterResource
	err  error
}

type memoRead struct {
	once sync.Once
	v    any
	err  error
}

type readCacheKey struct{}

func withReadCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, readCacheKey{}, &readCache{lists: map[*pve.Client]*clusterRead{}, memos: map[any]*memoRead{}})
}

// ClusterResources is cl's /cluster/resources: read once per Verify under
// ctx's cache, else read now.
func ClusterResources(ctx context.Context, cl *pve.Client) ([]pve.ClusterResource, error) {
	rc, _ := ctx.Value(readCacheKey{}).(*readCache)
	if rc == nil {
		return cl.ClusterResources(ctx, "")
	}
	rc.mu.Lock()
	e := rc.lists[cl]
	if e == nil {
		e = &clusterRead{}
		rc.lists[cl] = e
	}
	rc.mu.Unlock()
	e.once.Do(func() { e.rows, e.err = cl.ClusterResources(ctx, "") })
	return e.rows, e.err
}

// VerifyMemo is load's value, loaded once per Verify under ctx's cache
// for key (a comparable value naming what it reads), else loaded now.
func VerifyMemo(ctx context.Context, key any, load func() (any, error)) (any, error) {
	rc, _ := ctx.Value(readCacheKey{}).(*readCache)
	if rc == nil {
		return load()
	}
	rc.mu.Lock()
	e := rc.memos[key]
	if e == nil {
		e = &memoRead{}
		rc.memos[key] = e
	}
	rc.mu.Unlock()
	e.once.Do(func() { e.v, e.err = load() })
	return e.v, e.err
}

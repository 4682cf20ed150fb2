package planner

import (
	"context"
	"sync"

	"github.com/pvectl/pvectl/pkg/pve"
)

// readCache holds, for one Verify, the lists that re-reading many guests
// shares: each client's /cluster/resources and its guest rows by type,
// read once instead of once per guest (a saved plan of N creates made N
// cluster-wide lists, one after another).
type readCache struct {
	mu      sync.Mutex
	lists   map[*pve.Client]*clusterRead
	indexes map[readKey]*guestRead
}

type readKey struct {
	cl  *pve.Client
	typ pve.GuestType
	// listed: the rows are the per-node guest lists (guestRows), else
	// /cluster/resources as it is.
	listed bool
}

type clusterRead struct {
	once sync.Once
	rows []pve.ClusterResource
	err  error
}

type guestRead struct {
	once sync.Once
	ix   *guestIndex
	err  error
}

type readCacheKey struct{}

func withReadCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, readCacheKey{}, &readCache{lists: map[*pve.Client]*clusterRead{}, indexes: map[readKey]*guestRead{}})
}

// clusterResources is cl's /cluster/resources: read once per Verify under
// ctx's cache, else read now.
func clusterResources(ctx context.Context, cl *pve.Client) ([]pve.ClusterResource, error) {
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

// currentGuests indexes cl's guest rows of typ: with listed, the per-node
// lists (guestRows: current names), else /cluster/resources' rows
// (current vmids). Once per Verify under ctx's cache, else now.
func currentGuests(ctx context.Context, cl *pve.Client, typ pve.GuestType, listed bool) (*guestIndex, error) {
	load := func() (*guestIndex, error) {
		rows, err := clusterResources(ctx, cl)
		if err != nil {
			return nil, err
		}
		if listed {
			if rows, err = guestRows(ctx, cl, rows, typ, nil); err != nil {
				return nil, err
			}
		}
		return newGuestIndex(typ, rows), nil
	}
	rc, _ := ctx.Value(readCacheKey{}).(*readCache)
	if rc == nil {
		return load()
	}
	k := readKey{cl, typ, listed}
	rc.mu.Lock()
	e := rc.indexes[k]
	if e == nil {
		e = &guestRead{}
		rc.indexes[k] = e
	}
	rc.mu.Unlock()
	e.once.Do(func() { e.ix, e.err = load() })
	return e.ix, e.err
}

package engine

import (
	"sync"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// providerIndex holds the resources of a set by connection, kind and
// reference value (spec.RefValue), in the set's order: finding the
// provider of each resource's prerequisites (providerOf) is then a map
// lookup, not a scan of every resource (a plan of N guests naming a
// bridge would be quadratic).
type providerIndex struct {
	mu  sync.Mutex
	set *spec.Set // the set indexed, with n resources
	n   int
	by  map[providerKey][]*spec.Resource
}

type providerKey struct{ conn, kind, value string }

// candidates are the resources of set on conn of kind with value, indexed
// on first use (and again for another set).
func (ix *providerIndex) candidates(set *spec.Set, conn, kind, value string) []*spec.Resource {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.by == nil || ix.set != set || ix.n != len(set.Resources) {
		ix.set, ix.n = set, len(set.Resources)
		ix.by = make(map[providerKey][]*spec.Resource)
		for _, x := range set.Resources {
			k := providerKey{x.Connection, x.Kind, spec.RefValue(x)}
			ix.by[k] = append(ix.by[k], x)
		}
	}
	return ix.by[providerKey{conn, kind, value}]
}

// ResourceAt is the set's first resource on conn at addr ("Kind/name"),
// nil when none: a map lookup, the set indexed once per Build.
func (b *Builder) ResourceAt(conn, addr string) *spec.Resource {
	if b.byAddr == nil {
		b.byAddr = make(map[[2]string]*spec.Resource, len(b.Set.Resources))
		for _, o := range b.Set.Resources {
			k := [2]string{o.Connection, o.Address()}
			if _, dup := b.byAddr[k]; !dup {
				b.byAddr[k] = o
			}
		}
	}
	return b.byAddr[[2]string{conn, addr}]
}

// clusterIndex holds a connection's /cluster/resources rows of pools and
// storages by name, so that the prerequisites of each of many guests
// (guestprereq.go) are map lookups, not scans of every row.
type clusterIndex struct {
	mu       sync.Mutex
	of       []pve.ClusterResource // the rows indexed
	pools    map[string]bool
	storages map[string][]*pve.ClusterResource // by storage id, in row order
}

// index returns the index of lc.resources, made on first use (and again
// when the rows were read anew).
func (lc *LiveConn) index() *clusterIndex {
	ix := &lc.cluster
	ix.mu.Lock()
	defer ix.mu.Unlock()
	rows := lc.Resources
	if ix.pools != nil && len(ix.of) == len(rows) && (len(rows) == 0 || &ix.of[0] == &rows[0]) {
		return ix
	}
	ix.of, ix.pools, ix.storages = rows, map[string]bool{}, map[string][]*pve.ClusterResource{}
	for i := range rows {
		switch rows[i].Type {
		case "pool":
			ix.pools[rows[i].Pool] = true
		case "storage":
			ix.storages[rows[i].Storage] = append(ix.storages[rows[i].Storage], &rows[i])
		}
	}
	return ix
}

// PoolListed reports whether /cluster/resources lists pool.
func (lc *LiveConn) PoolListed(pool string) bool { return lc.index().pools[pool] }

// StorageRows are /cluster/resources' rows of storage (one per node that
// has it).
func (lc *LiveConn) StorageRows(storage string) []*pve.ClusterResource {
	return lc.index().storages[storage]
}

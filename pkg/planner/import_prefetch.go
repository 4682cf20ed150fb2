package planner

import (
	"context"
	"slices"
	"sync"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
)

// An import reads the lists its kinds need all at once, before the kinds
// list their objects: one round trip for them all, not one after another
// (each kind's importable and observe then find them in the connection's
// cache). A list that fails here is read again when its kind asks, which
// reports the error as a plan would.

// listRead is one list an import reads ahead. fetch only reads (it may
// run beside the others); the keep it returns stores what it read in the
// connection's cache, one keep at a time.
type listRead struct {
	key   string // one read per key ("network/pve")
	fetch func(ctx context.Context) (keep func(), err error)
}

// importLister kinds name the lists their importable and observe read.
type importLister interface {
	importLists(lc *liveConn, node string) []listRead
}

// prefetch reads the lists the kinds need, lc.readConc at a time.
func (ic *importCtx) prefetch(ctx context.Context, kindNames []string, node string) {
	var reads []listRead
	seen := map[string]bool{}
	for _, kind := range kindNames {
		l, ok := kinds[kind].(importLister)
		if !ok {
			continue
		}
		for _, r := range l.importLists(ic.lc, node) {
			if !seen[r.key] {
				seen[r.key] = true
				reads = append(reads, r)
			}
		}
	}
	keeps := make([]func(), len(reads))
	sem := make(chan struct{}, max(ic.lc.readConc, 1))
	var wg sync.WaitGroup
	for i, r := range reads {
		wg.Add(1)
		sem <- struct{}{} // a goroutine per free slot, not one per read waiting
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if keep, err := r.fetch(ctx); err == nil {
				keeps[i] = keep
			}
		}()
	}
	wg.Wait()
	for _, keep := range keeps {
		if keep != nil {
			keep()
		}
	}
}

// rowsRead reads the list at key ahead with read and keeps it at key in
// *cache (made on first use), where the kind's own reader finds it; a
// failed read is read again when the kind asks, which reports it.
func rowsRead(cache *map[string][]*pve.Config, key string, read func(context.Context) ([]*pve.Config, error)) listRead {
	return listRead{key: key, fetch: func(ctx context.Context) (func(), error) {
		rows, err := read(ctx)
		return func() {
			if *cache == nil {
				*cache = map[string][]*pve.Config{}
			}
			(*cache)[key] = rows
		}, err
	}}
}

// importNodes are the nodes a node-bound kind imports from.
func importNodes(lc *liveConn, node string) []string {
	if node != "" {
		return []string{node}
	}
	return lc.nodes
}

// The lists, each as liveConn's reader of it caches it.

func networkReads(lc *liveConn, node string) []listRead {
	var out []listRead
	for _, n := range importNodes(lc, node) {
		out = append(out, listRead{key: "network/" + n, fetch: func(ctx context.Context) (func(), error) {
			ifaces, changes, err := lc.client.NetworkList(ctx, n)
			return func() { lc.networks[n] = &liveNetwork{ifaces: ifaces, changes: changes} }, err
		}})
	}
	return out
}

func storagesRead(lc *liveConn) listRead {
	return listRead{key: "storages", fetch: func(ctx context.Context) (func(), error) {
		rows, err := lc.client.Storages(ctx)
		return func() { lc.storages, lc.storagesRead = rows, true }, err
	}}
}

func poolsRead(lc *liveConn) listRead {
	return listRead{key: "pools", fetch: func(ctx context.Context) (func(), error) {
		pools, err := lc.client.Pools(ctx)
		return func() { lc.pools, lc.poolsRead = pools, true }, err
	}}
}

func usersRead(lc *liveConn) listRead {
	return listRead{key: "users", fetch: func(ctx context.Context) (func(), error) {
		users, err := lc.client.Users(ctx)
		return func() { lc.users, lc.usersRead = users, true }, err
	}}
}

func aclRead(lc *liveConn) listRead {
	return listRead{key: "acl", fetch: func(ctx context.Context) (func(), error) {
		entries, err := lc.client.ACL(ctx)
		return func() { lc.acl, lc.aclRead = entries, true }, err
	}}
}

// volumeReads are the content lists of the storages on node (every
// node's, for "") that hold one of contents: one read per storage, all
// of its content (PVE's content index without a filter lists every type
// the storage holds, each volume with its content: pve-storage
// PVE/API2/Storage/Content.pm), split by content into storageVolumes'
// cache.
func volumeReads(lc *liveConn, node string, contents []string) []listRead {
	var out []listRead
	for _, row := range lc.resources {
		if row.Type != "storage" || (node != "" && row.Node != node) {
			continue
		}
		var want []string
		for _, content := range contents {
			if slices.Contains(compare.SplitSet(row.Content), content) {
				want = append(want, content)
			}
		}
		if len(want) == 0 {
			continue
		}
		n, st := row.Node, row.Storage
		out = append(out, listRead{key: "volumes/" + n + "/" + st, fetch: func(ctx context.Context) (func(), error) {
			filter := ""
			if len(want) == 1 {
				filter = want[0]
			}
			vs, err := lc.client.StorageContent(ctx, n, st, filter)
			return func() {
				if lc.volumes == nil {
					lc.volumes = map[string][]pve.Volume{}
				}
				for _, content := range want {
					lc.volumes[n+"\x00"+st+"\x00"+content] = slices.DeleteFunc(slices.Clone(vs), func(v pve.Volume) bool { return v.Content != content })
				}
			}, err
		}})
	}
	return out
}

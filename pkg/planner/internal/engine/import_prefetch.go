package engine

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
type ListRead struct {
	Key   string // one read per key ("network/pve")
	Fetch func(ctx context.Context) (keep func(), err error)
}

// importLister kinds name the lists their importable and observe read.
type importLister interface {
	ImportLists(lc *LiveConn, node string) []ListRead
}

// prefetch reads the lists the kinds need, lc.readConc at a time.
func (ic *ImportCtx) prefetch(ctx context.Context, kindNames []string, node string) {
	var reads []ListRead
	seen := map[string]bool{}
	for _, kind := range kindNames {
		l, ok := Kinds[kind].(importLister)
		if !ok {
			continue
		}
		for _, r := range l.ImportLists(ic.Lc, node) {
			if !seen[r.Key] {
				seen[r.Key] = true
				reads = append(reads, r)
			}
		}
	}
	keeps := make([]func(), len(reads))
	sem := make(chan struct{}, max(ic.Lc.ReadConc, 1))
	var wg sync.WaitGroup
	for i, r := range reads {
		wg.Add(1)
		sem <- struct{}{} // a goroutine per free slot, not one per read waiting
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if keep, err := r.Fetch(ctx); err == nil {
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

// RowsRead reads the list at key ahead with read and keeps it at key in
// *cache (made on first use), where the kind's own reader finds it; a
// failed read is read again when the kind asks, which reports it.
func RowsRead(cache *map[string][]*pve.Config, key string, read func(context.Context) ([]*pve.Config, error)) ListRead {
	return ListRead{Key: key, Fetch: func(ctx context.Context) (func(), error) {
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
func importNodes(lc *LiveConn, node string) []string {
	if node != "" {
		return []string{node}
	}
	return lc.Nodes
}

// The lists, each as LiveConn's reader of it caches it.

func NetworkReads(lc *LiveConn, node string) []ListRead {
	var out []ListRead
	for _, n := range importNodes(lc, node) {
		out = append(out, ListRead{Key: "network/" + n, Fetch: func(ctx context.Context) (func(), error) {
			ifaces, changes, err := lc.Client.NetworkList(ctx, n)
			return func() { lc.Networks[n] = &LiveNetwork{Ifaces: ifaces, Changes: changes} }, err
		}})
	}
	return out
}

func StoragesRead(lc *LiveConn) ListRead {
	return ListRead{Key: "storages", Fetch: func(ctx context.Context) (func(), error) {
		rows, err := lc.Client.Storages(ctx)
		return func() { lc.storages, lc.storagesRead = rows, true }, err
	}}
}

func PoolsRead(lc *LiveConn) ListRead {
	return ListRead{Key: "pools", Fetch: func(ctx context.Context) (func(), error) {
		pools, err := lc.Client.Pools(ctx)
		return func() { lc.pools, lc.poolsRead = pools, true }, err
	}}
}

func UsersRead(lc *LiveConn) ListRead {
	return ListRead{Key: "users", Fetch: func(ctx context.Context) (func(), error) {
		users, err := lc.Client.Users(ctx)
		return func() { lc.users, lc.usersRead = users, true }, err
	}}
}

func ACLRead(lc *LiveConn) ListRead {
	return ListRead{Key: "acl", Fetch: func(ctx context.Context) (func(), error) {
		entries, err := lc.Client.ACL(ctx)
		return func() { lc.acl, lc.aclRead = entries, true }, err
	}}
}

// VolumeReads are the content lists of the storages on node (every
// node's, for "") that hold one of contents: one read per storage, all
// of its content (PVE's content index without a filter lists every type
// the storage holds, each volume with its content: pve-storage
// PVE/API2/Storage/Content.pm), split by content into storageVolumes'
// cache.
func VolumeReads(lc *LiveConn, node string, contents []string) []ListRead {
	var out []ListRead
	for _, row := range lc.Resources {
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
		out = append(out, ListRead{Key: "volumes/" + n + "/" + st, Fetch: func(ctx context.Context) (func(), error) {
			filter := ""
			if len(want) == 1 {
				filter = want[0]
			}
			vs, err := lc.Client.StorageContent(ctx, n, st, filter)
			return func() {
				if lc.Volumes == nil {
					lc.Volumes = map[string][]pve.Volume{}
				}
				for _, content := range want {
					lc.Volumes[n+"\x00"+st+"\x00"+content] = slices.DeleteFunc(slices.Clone(vs), func(v pve.Volume) bool { return v.Content != content })
				}
			}, err
		}})
	}
	return out
}

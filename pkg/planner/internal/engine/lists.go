package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The lists of PVE objects that several kinds read, each read once per
// connection through its cache (LiveConn).

// aclList reads GET /access/acl once.
func (lc *LiveConn) ACLList(ctx context.Context) ([]pve.ACLEntry, error) {
	return readOnce(&lc.aclRead, &lc.acl, func() ([]pve.ACLEntry, error) { return lc.Client.ACL(ctx) })
}

// StorageVolumes lists, once per Observe, the volumes of one content type
// on a storage as node sees it. A storage the node does not have (yet: a
// Storage of the same specs) holds nothing.
func (lc *LiveConn) StorageVolumes(ctx context.Context, node, storage, content string) ([]pve.Volume, error) {
	key := node + "\x00" + storage + "\x00" + content
	if vs, ok := lc.Volumes[key]; ok {
		return vs, nil
	}
	var vs []pve.Volume
	if lc.hasStorage(node, storage) {
		var err error
		if vs, err = lc.Client.StorageContent(ctx, node, storage, content); err != nil {
			return nil, fmt.Errorf("list %s content of storage %s on node %s: %w", content, storage, node, err)
		}
	}
	if lc.Volumes == nil {
		lc.Volumes = map[string][]pve.Volume{}
	}
	lc.Volumes[key] = vs
	return vs, nil
}

// hasStorage: /cluster/resources lists each storage once per node that
// has it.
func (lc *LiveConn) hasStorage(node, storage string) bool {
	return slices.ContainsFunc(lc.StorageRows(storage), func(r *pve.ClusterResource) bool {
		return r.Node == node
	})
}

// VolumeUsers reads, once per Observe, which VMs of the cluster have
// which volumes on their drives.
func (lc *LiveConn) VolumeUsers(ctx context.Context) (map[string][]int, error) {
	if lc.usersOfVolumes != nil {
		return lc.usersOfVolumes, nil
	}
	users, err := VolumeUsers(ctx, lc.Client, lc.Resources)
	if err != nil {
		return nil, err
	}
	lc.usersOfVolumes = users
	return users, nil
}

// Bridges reads node's bridges and vnets once.
func (lc *LiveConn) Bridges(ctx context.Context, node string) ([]*pve.Config, error) {
	if list, ok := lc.Pre.Bridges[node]; ok {
		return list, nil
	}
	list, err := lc.Client.NetworkIfaces(ctx, node, url.Values{"type": {"any_bridge"}})
	if err != nil {
		return nil, fmt.Errorf("list bridges of node %s: %w", node, err)
	}
	if lc.Pre.Bridges == nil {
		lc.Pre.Bridges = map[string][]*pve.Config{}
	}
	lc.Pre.Bridges[node] = list
	// A NIC on a vnet needs SDN.Use in the vnet's zone, which only the
	// vnet list says (sdn_vnetzone.go): read it once when vnets are in
	// use; a token that may not list them is checked on the local zone.
	if slices.ContainsFunc(list, func(row *pve.Config) bool { return row.Get("type") == "vnet" }) {
		_, _ = lc.SDNRows(ctx, "/cluster/sdn/vnets")
	}
	return list, nil
}

// hwmapRows reads a type's list once per connection.
func (lc *LiveConn) HWMapRows(ctx context.Context, typ string) ([]*pve.Config, error) {
	return cachedRows(&lc.CfgLists, HWMapListPath(typ), func() ([]*pve.Config, error) { return ReadHWMaps(ctx, lc.Client, typ) })
}

// sdnRows reads an SDN list once per connection (sdnFilesView).
func (lc *LiveConn) SDNRows(ctx context.Context, path string) ([]*pve.Config, error) {
	return lc.sharedRows(ctx, path, func(ctx context.Context) ([]*pve.Config, error) { return ReadSDN(ctx, lc.Client, path) })
}

// SectionRows reads a section list once per connection.
func (lc *LiveConn) SectionRows(ctx context.Context, path string) ([]*pve.Config, error) {
	return cachedRows(&lc.Sections, path, func() ([]*pve.Config, error) { return ReadSection(ctx, lc.Client, path) })
}

// StorageList reads GET /storage once per connection.
func (lc *LiveConn) StorageList(ctx context.Context) ([]*pve.Config, error) {
	return readOnce(&lc.storagesRead, &lc.storages, func() ([]*pve.Config, error) {
		rows, err := lc.Client.Storages(ctx)
		if err != nil {
			return nil, fmt.Errorf("list storages: %w", err)
		}
		return rows, nil
	})
}

// UserList reads GET /access/users?full=1 once: users and their tokens.
func (lc *LiveConn) UserList(ctx context.Context) (map[string]*pve.User, error) {
	return readOnce(&lc.usersRead, &lc.users, func() (map[string]*pve.User, error) { return lc.Client.Users(ctx) })
}

// cachedRows is the list at key of cache, read once (the cache made on
// first use).
func cachedRows(cache *map[string][]*pve.Config, key string, read func() ([]*pve.Config, error)) ([]*pve.Config, error) {
	if rows, ok := (*cache)[key]; ok {
		return rows, nil
	}
	rows, err := read()
	if err != nil {
		return nil, err
	}
	if *cache == nil {
		*cache = map[string][]*pve.Config{}
	}
	(*cache)[key] = rows
	return rows, nil
}

func ReadSection(ctx context.Context, cl *pve.Client, path string) ([]*pve.Config, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, path, nil, &rows); err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	return rows, nil
}

func HWMapListPath(typ string) string { return "/cluster/mapping/" + typ }

func ReadHWMaps(ctx context.Context, cl *pve.Client, typ string) ([]*pve.Config, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, HWMapListPath(typ), nil, &rows); err != nil {
		return nil, fmt.Errorf("list %s mappings: %w", typ, err)
	}
	return rows, nil
}

// ReadSDN reads an SDN list in its pending view (pending=1: SDN.pm
// pending_config), once for both views: each row as the files have it,
// with `state` (new, changed, deleted; "" when committed) kept.
func ReadSDN(ctx context.Context, cl *pve.Client, path string) ([]*pve.Config, error) {
	var rows []*pve.Config
	if err := cl.Do(ctx, http.MethodGet, path, url.Values{"pending": {"1"}}, &rows); err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	return sdnFilesView(rows), nil
}

// driveKey matches the config keys of a VM that hold a volume.
var DriveKey = lazyre.New(`^(ide|sata|scsi|virtio|unused)\d+$|^(efidisk0|tpmstate0)$`)

// VolumeUsers maps each volume on a drive of a QEMU VM in rows (templates
// included) to the vmids of those VMs. PVE does not say which VMs use a
// volume, and deletes an ISO that a VM has on its CD-ROM without a word
// (pve-storage src/PVE/API2/Storage/Content.pm, delete): the configs are
// the only place to look. They are read a few at a time.
func VolumeUsers(ctx context.Context, cl *pve.Client, rows []pve.ClusterResource) (map[string][]int, error) {
	var (
		mu    sync.Mutex
		users = map[string][]int{}
		errs  []error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, DefaultReadConcurrency)
	for _, row := range rows {
		if row.Type != string(pve.QEMU) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{} // a goroutine per free slot, not one per VM waiting
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg, err := cl.GuestConfig(ctx, pve.QEMU, row.Node, row.VMID)
			mu.Lock()
			defer mu.Unlock()
			if pve.IsNotFound(err) {
				return // gone meanwhile
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("read config of vm %d: %w", row.VMID, err))
				return
			}
			for k, v := range cfg.All() {
				if !DriveKey.MatchString(k) {
					continue
				}
				items, err := schema.SplitPropertyString(v)
				if err != nil || len(items) == 0 {
					continue
				}
				vol := items[0].Value
				if items[0].Key != "" && items[0].Key != "file" {
					continue
				}
				if !slices.Contains(users[vol], row.VMID) {
					users[vol] = append(users[vol], row.VMID)
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("find the VMs that use a volume: %w", errs[0])
	}
	for _, ids := range users {
		slices.Sort(ids)
	}
	return users, nil
}

// sdnFilesView turns pending_config's rows (the running values at the
// top, what the files changed under `pending`, a key the files dropped
// as "deleted") into the files' values.
func sdnFilesView(rows []*pve.Config) []*pve.Config {
	out := make([]*pve.Config, 0, len(rows))
	for _, row := range rows {
		cfg := pve.NewConfig(0)
		for k, v := range row.All() {
			if k != "pending" {
				cfg.Set(k, v)
			}
		}
		var pend map[string]any
		_ = json.Unmarshal([]byte(row.Get("pending")), &pend)
		for k, v := range pend {
			switch v := v.(type) {
			case string:
				if v == "deleted" {
					cfg.Delete(k)
				} else {
					cfg.Set(k, v)
				}
			case float64:
				cfg.Set(k, strconv.FormatFloat(v, 'f', -1, 64))
			case []any:
				var parts []string
				for _, x := range v {
					parts = append(parts, fmt.Sprint(x))
				}
				cfg.Set(k, strings.Join(parts, "\n"))
			case map[string]any:
			default:
				cfg.Set(k, fmt.Sprint(v))
			}
		}
		out = append(out, cfg)
	}
	return out
}

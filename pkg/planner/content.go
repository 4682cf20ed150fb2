package planner

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// storageVolumes lists, once per Observe, the volumes of one content type
// on a storage as node sees it. A storage the node does not have (yet: a
// Storage of the same specs) holds nothing.
func (lc *liveConn) storageVolumes(ctx context.Context, node, storage, content string) ([]pve.Volume, error) {
	key := node + "\x00" + storage + "\x00" + content
	if vs, ok := lc.volumes[key]; ok {
		return vs, nil
	}
	var vs []pve.Volume
	if lc.hasStorage(node, storage) {
		var err error
		if vs, err = lc.client.StorageContent(ctx, node, storage, content); err != nil {
			return nil, fmt.Errorf("list %s content of storage %s on node %s: %w", content, storage, node, err)
		}
	}
	if lc.volumes == nil {
		lc.volumes = map[string][]pve.Volume{}
	}
	lc.volumes[key] = vs
	return vs, nil
}

// hasStorage: /cluster/resources lists each storage once per node that
// has it.
func (lc *liveConn) hasStorage(node, storage string) bool {
	return slices.ContainsFunc(lc.storageRows(storage), func(r *pve.ClusterResource) bool {
		return r.Node == node
	})
}

// volumeUsers reads, once per Observe, which VMs of the cluster have
// which volumes on their drives.
func (lc *liveConn) volumeUsers(ctx context.Context) (map[string][]int, error) {
	if lc.usersOfVolumes != nil {
		return lc.usersOfVolumes, nil
	}
	users, err := volumeUsers(ctx, lc.client, lc.resources)
	if err != nil {
		return nil, err
	}
	lc.usersOfVolumes = users
	return users, nil
}

// driveKey matches the config keys of a VM that hold a volume.
var driveKey = lazyre.New(`^(ide|sata|scsi|virtio|unused)\d+$|^(efidisk0|tpmstate0)$`)

// volumeUsers maps each volume on a drive of a QEMU VM in rows (templates
// included) to the vmids of those VMs. PVE does not say which VMs use a
// volume, and deletes an ISO that a VM has on its CD-ROM without a word
// (pve-storage src/PVE/API2/Storage/Content.pm, delete): the configs are
// the only place to look. They are read a few at a time.
func volumeUsers(ctx context.Context, cl *pve.Client, rows []pve.ClusterResource) (map[string][]int, error) {
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
				if !driveKey.MatchString(k) {
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

package pve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
)

// Where a guest's disks and the guest itself live: moving a disk to
// another storage, migrating the guest to another node.

// MoveGuestVolume moves a guest's disk to storage and waits: POST
// …/qemu/{vmid}/move_disk (disk=KEY) for a VM — online too — and POST
// …/lxc/{vmid}/move_volume (volume=KEY) for a stopped container. params
// may carry delete=1 (free the source instead of keeping it as unusedN)
// and digest. A task that failed on the guest's lock copied nothing
// (qemu-server move_vm_disk locks before it copies; pve-container locks
// in the API process) and is started again.
func (c *Client) MoveGuestVolume(ctx context.Context, typ GuestType, node string, vmid int, key, storage string, params url.Values) error {
	p := url.Values{"storage": {storage}}
	for k, v := range params {
		p[k] = slices.Clone(v)
	}
	call := "move_disk"
	p.Set("disk", key)
	if typ == LXC {
		call = "move_volume"
		p.Del("disk")
		p.Set("volume", key)
	}
	return c.RunIdempotentTask(ctx, http.MethodPost, guestPath(typ, node, vmid, call), p)
}

// MigrateGuest migrates a guest to the node target and waits (POST
// …/migrate; params: online, with-local-disks for a VM, restart and
// timeout for a container). It is not repeated: a migration that failed
// reports "migration aborted" after its own cleanup.
func (c *Client) MigrateGuest(ctx context.Context, typ GuestType, node string, vmid int, target string, params url.Values) error {
	p := url.Values{"target": {target}}
	for k, v := range params {
		p[k] = slices.Clone(v)
	}
	return c.RunTask(ctx, http.MethodPost, guestPath(typ, node, vmid, "migrate"), p)
}

// MigrationCheck is a VM's GET …/qemu/{vmid}/migrate: what would keep it
// from migrating (qemu-server migrate_vm_precondition).
type MigrationCheck struct {
	Running bool
	// AllowedNodes are the nodes it may migrate to; NotAllowed says why
	// the others are not (unavailable storages, mapped devices missing).
	AllowedNodes []string
	NotAllowed   map[string]NodeBlockers
	// LocalDisks are its volumes on storages of its node only.
	LocalDisks []LocalDisk
	// LocalResources are devices that tie it to its node (a host PCI or
	// USB device, a serial port; a mapped device that cannot move live).
	LocalResources []string
	// Mapped are its mapped devices by config key (hostpci0 → gpu0) and
	// whether the mapping allows a live migration.
	Mapped map[string]MappedDevice
}

// NodeBlockers is why a VM may not migrate to one node.
type NodeBlockers struct {
	UnavailableStorages  []string `json:"unavailable_storages"`
	UnavailableResources []string `json:"unavailable-resources"`
}

// LocalDisk is a volume of a VM on a storage of its node only.
type LocalDisk struct {
	Volid     string
	Size      int64
	CDROM     bool
	Unused    bool
	DriveName string
}

// MappedDevice is a device a VM uses through a resource mapping.
type MappedDevice struct {
	Name          string
	LiveMigration bool
}

// MigrationCheck asks PVE what would keep a VM from migrating to target.
func (c *Client) MigrationCheck(ctx context.Context, node string, vmid int, target string) (*MigrationCheck, error) {
	var raw struct {
		Running        flexBool                `json:"running"`
		Allowed        []string                `json:"allowed_nodes"`
		NotAllowed     map[string]NodeBlockers `json:"not_allowed_nodes"`
		LocalResources []string                `json:"local_resources"`
		LocalDisks     []struct {
			Volid     string   `json:"volid"`
			Size      flexInt  `json:"size"`
			CDROM     flexBool `json:"cdrom"`
			Unused    flexBool `json:"is_unused"`
			DriveName string   `json:"drivename"`
		} `json:"local_disks"`
		Mapped map[string]json.RawMessage `json:"mapped-resource-info"`
	}
	if err := c.Do(ctx, http.MethodGet, guestPath(QEMU, node, vmid, "migrate"), url.Values{"target": {target}}, &raw); err != nil {
		return nil, err
	}
	mc := &MigrationCheck{Running: bool(raw.Running), AllowedNodes: raw.Allowed, NotAllowed: raw.NotAllowed,
		LocalResources: raw.LocalResources, Mapped: map[string]MappedDevice{}}
	for _, d := range raw.LocalDisks {
		mc.LocalDisks = append(mc.LocalDisks, LocalDisk{Volid: d.Volid, Size: int64(d.Size), CDROM: bool(d.CDROM), Unused: bool(d.Unused), DriveName: d.DriveName})
	}
	for key, m := range raw.Mapped {
		var dev struct {
			Name string   `json:"name"`
			Live flexBool `json:"live-migration"`
		}
		if err := json.Unmarshal(m, &dev); err != nil {
			return nil, err
		}
		mc.Mapped[key] = MappedDevice{Name: dev.Name, LiveMigration: bool(dev.Live)}
	}
	return mc, nil
}

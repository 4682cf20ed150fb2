package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// GuestType is the API family of a guest: QEMU VMs live under
// /nodes/{node}/qemu, containers under /nodes/{node}/lxc.
type GuestType string

const (
	QEMU GuestType = "qemu"
	LXC  GuestType = "lxc"
)

func guestPath(typ GuestType, node string, vmid int, rest ...string) string {
	return apiPath(append([]string{"nodes", node, string(typ), strconv.Itoa(vmid)}, rest...)...)
}

// GuestConfig is GET …/{vmid}/config: the config with pending changes
// applied, and its digest.
func (c *Client) GuestConfig(ctx context.Context, typ GuestType, node string, vmid int) (*Config, error) {
	cfg := &Config{} // Do decodes into it (decodeAnswer); null leaves it empty
	if err := c.Do(ctx, http.MethodGet, guestPath(typ, node, vmid, "config"), nil, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// GuestStatus is GET …/{vmid}/status/current.
func (c *Client) GuestStatus(ctx context.Context, typ GuestType, node string, vmid int) (*QemuStatus, error) {
	var st QemuStatus
	if err := c.Do(ctx, http.MethodGet, guestPath(typ, node, vmid, "status", "current"), nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// GuestPendingKeys lists the config keys of GET …/pending that hold a
// change PVE has not applied yet (it applies them when the guest next
// starts).
func (c *Client) GuestPendingKeys(ctx context.Context, typ GuestType, node string, vmid int) ([]string, error) {
	var rows []struct {
		Key     string          `json:"key"`
		Pending json.RawMessage `json:"pending"`
		Delete  json.RawMessage `json:"delete"`
	}
	if err := c.Do(ctx, http.MethodGet, guestPath(typ, node, vmid, "pending"), nil, &rows); err != nil {
		return nil, err
	}
	var keys []string
	for _, r := range rows {
		if len(r.Pending) > 0 || len(r.Delete) > 0 {
			keys = append(keys, r.Key)
		}
	}
	return keys, nil
}

// CreateGuest POSTs /nodes/{node}/{qemu|lxc} (params include vmid) and
// waits for the task. A create that failed in passing is looked for among
// the node's tasks and sent again only when PVE never started it
// (createretry.go).
func (c *Client) CreateGuest(ctx context.Context, typ GuestType, node string, params url.Values) error {
	return c.createGuest(ctx, typ, node, params)
}

// UpdateGuest changes a guest's config and waits: POST …/config (a task)
// for a VM, PUT …/config (synchronous) for a container, which has no POST.
// A task that failed on the guest's lock changed nothing (qemu-server runs
// the whole update under the lock) and is started again.
func (c *Client) UpdateGuest(ctx context.Context, typ GuestType, node string, vmid int, params url.Values) error {
	method := http.MethodPost
	if typ == LXC {
		method = http.MethodPut
	}
	return c.RunIdempotentTask(ctx, method, guestPath(typ, node, vmid, "config"), params)
}

// powerActions maps each power action to whether repeating it after a
// task that failed on the guest's lock is safe: start, stop, shutdown and
// reboot lead to the same state however often they run.
var powerActions = map[string]bool{
	"start": true, "stop": true, "shutdown": true, "reboot": true,
	"reset": false, "suspend": false, "resume": false,
}

// GuestPower POSTs …/{vmid}/status/{action} and waits.
func (c *Client) GuestPower(ctx context.Context, typ GuestType, node string, vmid int, action string, params url.Values) error {
	idempotent, ok := powerActions[action]
	if !ok {
		return fmt.Errorf("%s %d: unknown power action %q (want start, stop, shutdown, reboot, reset, suspend or resume)", typ, vmid, action)
	}
	path := guestPath(typ, node, vmid, "status", action)
	if idempotent {
		return c.RunIdempotentTask(ctx, http.MethodPost, path, params)
	}
	return c.RunTask(ctx, http.MethodPost, path, params)
}

// DeleteGuest DELETEs …/{vmid} with purge=1 and destroy-unreferenced-disks=1
// and waits.
func (c *Client) DeleteGuest(ctx context.Context, typ GuestType, node string, vmid int) error {
	return c.RunIdempotentTask(ctx, http.MethodDelete, guestPath(typ, node, vmid), url.Values{
		"purge":                      {"1"},
		"destroy-unreferenced-disks": {"1"},
	})
}

// ResizeGuest grows a disk (PUT …/resize) and waits. A resize to an
// absolute size is repeated after a task that failed on the guest's lock;
// a relative one ("+2G") is not: a second one would grow the disk twice
// if the first had got further than the lock.
func (c *Client) ResizeGuest(ctx context.Context, typ GuestType, node string, vmid int, disk, size string) error {
	return c.ResizeGuestIf(ctx, typ, node, vmid, disk, size, "")
}

// ResizeGuestIf is ResizeGuest sent with the config digest the caller
// read (when not ""): PVE refuses it when the config changed since
// (qemu-server API2/Qemu.pm resize_vm, pve-container API2/LXC.pm
// resize_vm: assert_if_modified).
func (c *Client) ResizeGuestIf(ctx context.Context, typ GuestType, node string, vmid int, disk, size, digest string) error {
	path := guestPath(typ, node, vmid, "resize")
	params := url.Values{"disk": {disk}, "size": {size}}
	if digest != "" {
		params.Set("digest", digest)
	}
	if strings.HasPrefix(size, "+") {
		return c.RunTask(ctx, http.MethodPut, path, params)
	}
	return c.RunIdempotentTask(ctx, http.MethodPut, path, params)
}

// CloneGuest clones a guest (POST …/clone, params include newid) and
// waits. A QEMU clone whose task failed on a lock is started again:
// qemu-server's worker locks the source and the target before it writes
// the target's first (temporary) config file, so such a task left nothing
// behind (API2/Qemu.pm clone_vm). A container's clone takes its locks
// before it answers, so those failures are retried as requests.
//
// A clone whose answer does not prove PVE refused it is looked up before
// it is sent again (cloneretry.go).
func (c *Client) CloneGuest(ctx context.Context, typ GuestType, node string, vmid int, params url.Values) error {
	return c.cloneGuest(ctx, typ, node, vmid, params)
}

// The QEMU forms of the guest calls.

func (c *Client) QemuConfig(ctx context.Context, node string, vmid int) (*Config, error) {
	return c.GuestConfig(ctx, QEMU, node, vmid)
}

func (c *Client) QemuStatus(ctx context.Context, node string, vmid int) (*QemuStatus, error) {
	return c.GuestStatus(ctx, QEMU, node, vmid)
}

func (c *Client) QemuPendingKeys(ctx context.Context, node string, vmid int) ([]string, error) {
	return c.GuestPendingKeys(ctx, QEMU, node, vmid)
}

func (c *Client) CreateQemu(ctx context.Context, node string, params url.Values) error {
	return c.CreateGuest(ctx, QEMU, node, params)
}

func (c *Client) UpdateQemu(ctx context.Context, node string, vmid int, params url.Values) error {
	return c.UpdateGuest(ctx, QEMU, node, vmid, params)
}

func (c *Client) QemuPower(ctx context.Context, node string, vmid int, action string, params url.Values) error {
	return c.GuestPower(ctx, QEMU, node, vmid, action, params)
}

func (c *Client) DeleteQemu(ctx context.Context, node string, vmid int) error {
	return c.DeleteGuest(ctx, QEMU, node, vmid)
}

// RegenerateCloudinit is PUT /nodes/{node}/qemu/{vmid}/cloudinit: qemu-server
// makes the VM's cloud-init image anew from its config (and swaps the
// medium of a running VM), synchronously under the config lock
// (API2/Qemu.pm cloudinit_update, QemuServer.pm
// vmconfig_update_cloudinit_drive). A VM without a cloud-init drive has
// nothing to regenerate; PVE answers success. The lock is taken in the API
// process, so a busy one is a lock-timeout answer, retried (regenerating
// twice is regenerating).
func (c *Client) RegenerateCloudinit(ctx context.Context, node string, vmid int) error {
	return c.RunIdempotentTask(ctx, http.MethodPut, guestPath(QEMU, node, vmid, "cloudinit"), nil)
}

// TemplateGuest converts a stopped guest into a template and waits; it
// is safe to repeat after a task that failed on the guest's lock. A
// container's call answers null although a worker runs (pve-container
// API2/LXC.pm template forks it under the lock taken in the API process):
// its config is polled until it says template.
func (c *Client) TemplateGuest(ctx context.Context, typ GuestType, node string, vmid int) error {
	err := c.RunIdempotentTask(ctx, http.MethodPost, guestPath(typ, node, vmid, "template"), nil)
	if err != nil || typ != LXC {
		return err
	}
	if c.cfg.taskTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.taskTimeout)
		defer cancel()
	}
	for delay := c.cfg.pollMin; ; delay = min(delay*2, c.cfg.pollMax) {
		cfg, err := c.GuestConfig(ctx, typ, node, vmid)
		if err != nil {
			return fmt.Errorf("wait for %s %d to become a template: %w", typ, vmid, err)
		}
		if cfg.Get("template") == "1" {
			return nil
		}
		if err := Sleep(ctx, delay); err != nil {
			return fmt.Errorf("wait for %s %d to become a template: %w", typ, vmid, err)
		}
	}
}

// NodeGuests lists GET /nodes/{node}/qemu or …/lxc: the guests of one type
// on a node, read from their configs and processes, so that a guest made a
// moment ago is there with its name and power state. /cluster/resources
// answers those from pvestatd's status data, up to ~10 s old (pve-manager
// API2Tools.pm extract_vm_stats). The rows are shaped like the guest rows
// of ClusterResources, with Type, Node and ID filled in (Pool is not).
func (c *Client) NodeGuests(ctx context.Context, typ GuestType, node string) ([]ClusterResource, error) {
	var rows resourceList
	if err := c.Do(ctx, http.MethodGet, apiPath("nodes", node, string(typ)), nil, &rows); err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Type, rows[i].Node = string(typ), node
		rows[i].ID = fmt.Sprintf("%s/%d", typ, rows[i].VMID)
	}
	return rows, nil
}

// AgentNetworkInterfaces is GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces:
// the guest agent's answer as PVE wraps it, {"result":[…]} (see
// provision.ParseAgentInterfaces). PVE fails it (500) while the VM is
// stopped, has no agent configured, or its agent is not running yet.
func (c *Client) AgentNetworkInterfaces(ctx context.Context, node string, vmid int) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.Do(ctx, http.MethodGet, guestPath(QEMU, node, vmid, "agent", "network-get-interfaces"), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

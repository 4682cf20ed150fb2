package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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
func (c *Client) GuestConfig(ctx context.Context, typ GuestType, node string, vmid int) (Config, error) {
	var cfg Config
	if err := c.Do(ctx, http.MethodGet, guestPath(typ, node, vmid, "config"), nil, &cfg); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = Config{}
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
// waits for the task.
func (c *Client) CreateGuest(ctx context.Context, typ GuestType, node string, params url.Values) error {
	return c.RunTask(ctx, http.MethodPost, apiPath("nodes", node, string(typ)), params)
}

// UpdateGuest changes a guest's config and waits: POST …/config (a task)
// for a VM, PUT …/config (synchronous) for a container, which has no POST.
func (c *Client) UpdateGuest(ctx context.Context, typ GuestType, node string, vmid int, params url.Values) error {
	method := http.MethodPost
	if typ == LXC {
		method = http.MethodPut
	}
	return c.RunTask(ctx, method, guestPath(typ, node, vmid, "config"), params)
}

var powerActions = map[string]bool{
	"start": true, "stop": true, "shutdown": true, "reboot": true,
	"reset": true, "suspend": true, "resume": true,
}

// GuestPower POSTs …/{vmid}/status/{action} and waits.
func (c *Client) GuestPower(ctx context.Context, typ GuestType, node string, vmid int, action string, params url.Values) error {
	if !powerActions[action] {
		return fmt.Errorf("%s %d: unknown power action %q (want start, stop, shutdown, reboot, reset, suspend or resume)", typ, vmid, action)
	}
	return c.RunTask(ctx, http.MethodPost, guestPath(typ, node, vmid, "status", action), params)
}

// DeleteGuest DELETEs …/{vmid} with purge=1 and destroy-unreferenced-disks=1
// and waits.
func (c *Client) DeleteGuest(ctx context.Context, typ GuestType, node string, vmid int) error {
	return c.RunTask(ctx, http.MethodDelete, guestPath(typ, node, vmid), url.Values{
		"purge":                      {"1"},
		"destroy-unreferenced-disks": {"1"},
	})
}

// The QEMU forms of the guest calls.

func (c *Client) QemuConfig(ctx context.Context, node string, vmid int) (Config, error) {
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

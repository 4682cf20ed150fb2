package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

func qemuPath(node string, vmid int, rest ...string) string {
	return apiPath(append([]string{"nodes", node, "qemu", strconv.Itoa(vmid)}, rest...)...)
}

func (c *Client) QemuConfig(ctx context.Context, node string, vmid int) (Config, error) {
	var cfg Config
	if err := c.Do(ctx, http.MethodGet, qemuPath(node, vmid, "config"), nil, &cfg); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = Config{}
	}
	return cfg, nil
}

func (c *Client) QemuStatus(ctx context.Context, node string, vmid int) (*QemuStatus, error) {
	var st QemuStatus
	if err := c.Do(ctx, http.MethodGet, qemuPath(node, vmid, "status", "current"), nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// QemuPendingKeys lists the config keys of GET …/pending that hold a change
// PVE has not applied yet (it applies them when the VM next starts).
func (c *Client) QemuPendingKeys(ctx context.Context, node string, vmid int) ([]string, error) {
	var rows []struct {
		Key     string          `json:"key"`
		Pending json.RawMessage `json:"pending"`
		Delete  json.RawMessage `json:"delete"`
	}
	if err := c.Do(ctx, http.MethodGet, qemuPath(node, vmid, "pending"), nil, &rows); err != nil {
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

// CreateQemu POSTs /nodes/{node}/qemu (params include vmid) and waits for the task.
func (c *Client) CreateQemu(ctx context.Context, node string, params url.Values) error {
	return c.RunTask(ctx, http.MethodPost, apiPath("nodes", node, "qemu"), params)
}

// UpdateQemu POSTs /nodes/{node}/qemu/{vmid}/config (async) and waits.
func (c *Client) UpdateQemu(ctx context.Context, node string, vmid int, params url.Values) error {
	return c.RunTask(ctx, http.MethodPost, qemuPath(node, vmid, "config"), params)
}

var powerActions = map[string]bool{
	"start": true, "stop": true, "shutdown": true, "reboot": true,
	"reset": true, "suspend": true, "resume": true,
}

// QemuPower POSTs /nodes/{node}/qemu/{vmid}/status/{action} and waits.
func (c *Client) QemuPower(ctx context.Context, node string, vmid int, action string, params url.Values) error {
	if !powerActions[action] {
		return fmt.Errorf("vm %d: unknown power action %q (want start, stop, shutdown, reboot, reset, suspend or resume)", vmid, action)
	}
	return c.RunTask(ctx, http.MethodPost, qemuPath(node, vmid, "status", action), params)
}

// DeleteQemu DELETEs /nodes/{node}/qemu/{vmid} with purge=1 and
// destroy-unreferenced-disks=1 and waits.
func (c *Client) DeleteQemu(ctx context.Context, node string, vmid int) error {
	return c.RunTask(ctx, http.MethodDelete, qemuPath(node, vmid), url.Values{
		"purge":                      {"1"},
		"destroy-unreferenced-disks": {"1"},
	})
}

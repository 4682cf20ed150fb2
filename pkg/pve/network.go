package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// NetworkList is GET /nodes/{node}/network: the staged view of every
// interface, and the staged diff ("" when nothing is pending).
func (c *Client) NetworkList(ctx context.Context, node string) (ifaces []*Config, changes string, err error) {
	path := apiPath("nodes", node, "network")
	resp, err := c.DoRaw(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, "", err
	}
	if !isNull(resp.Data) {
		if err := json.Unmarshal(resp.Data, &ifaces); err != nil {
			return nil, "", fmt.Errorf("GET %s: decode answer: %w", path, err)
		}
	}
	if !isNull(resp.Changes) {
		if json.Unmarshal(resp.Changes, &changes) != nil {
			changes = compactJSON(resp.Changes)
		}
	}
	return ifaces, changes, nil
}

// NetworkIfaces is GET /nodes/{node}/network filtered by params (e.g.
// type=any_bridge: the node's bridges, staged ones included, and the SDN
// vnets the caller may use or audit; pve-manager API2/Network.pm index).
func (c *Client) NetworkIfaces(ctx context.Context, node string, params url.Values) ([]*Config, error) {
	var ifaces []*Config
	if err := c.Do(ctx, http.MethodGet, apiPath("nodes", node, "network"), params, &ifaces); err != nil {
		return nil, err
	}
	return ifaces, nil
}

// CreateIface stages a new interface (POST /nodes/{node}/network).
func (c *Client) CreateIface(ctx context.Context, node string, params url.Values) error {
	return c.Do(ctx, http.MethodPost, apiPath("nodes", node, "network"), params, nil)
}

// UpdateIface stages a full redefinition (PUT /nodes/{node}/network/{iface});
// PVE wants type and every property, plus delete for removed ones.
func (c *Client) UpdateIface(ctx context.Context, node, iface string, params url.Values) error {
	return c.Do(ctx, http.MethodPut, apiPath("nodes", node, "network", iface), params, nil)
}

// DeleteIface stages removing an interface (DELETE /nodes/{node}/network/{iface}).
func (c *Client) DeleteIface(ctx context.Context, node, iface string) error {
	return c.Do(ctx, http.MethodDelete, apiPath("nodes", node, "network", iface), nil, nil)
}

// ApplyNetwork commits staged changes (PUT /nodes/{node}/network) and
// waits; committing what is staged is safe to repeat.
func (c *Client) ApplyNetwork(ctx context.Context, node string) error {
	return c.RunIdempotentTask(ctx, http.MethodPut, apiPath("nodes", node, "network"), nil)
}

// RevertNetwork discards staged changes (DELETE /nodes/{node}/network).
func (c *Client) RevertNetwork(ctx context.Context, node string) error {
	return c.Do(ctx, http.MethodDelete, apiPath("nodes", node, "network"), nil, nil)
}

package pve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Snapshot is one row of GET …/{vmid}/snapshot (the "current" row left
// out).
type Snapshot struct {
	Name        string
	Description string
	SnapTime    int64 // unix seconds; 0 when PVE gives none
	Parent      string
}

// Snapshots lists a guest's snapshots (qemu-server/pve-container
// snapshot_list), without the "current" pseudo-snapshot.
func (c *Client) Snapshots(ctx context.Context, typ GuestType, node string, vmid int) ([]Snapshot, error) {
	var rows []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		SnapTime    json.RawMessage `json:"snaptime"`
		Parent      string          `json:"parent"`
	}
	if err := c.Do(ctx, http.MethodGet, guestPath(typ, node, vmid, "snapshot"), nil, &rows); err != nil {
		return nil, err
	}
	var out []Snapshot
	for _, r := range rows {
		if r.Name == "current" {
			continue
		}
		t, _ := strconv.ParseInt(string(r.SnapTime), 10, 64)
		out = append(out, Snapshot{Name: r.Name, Description: r.Description, SnapTime: t, Parent: r.Parent})
	}
	return out, nil
}

// CreateSnapshot POSTs …/{vmid}/snapshot and waits for the task. It is
// not sent twice: a second create of the name fails on PVE's "snapshot
// name already used", so an answer that does not prove a refusal is
// settled by the caller reading the list.
func (c *Client) CreateSnapshot(ctx context.Context, typ GuestType, node string, vmid int, name, description string) error {
	params := url.Values{"snapname": {name}}
	if description != "" {
		params.Set("description", description)
	}
	return c.RunTask(ctx, http.MethodPost, guestPath(typ, node, vmid, "snapshot"), params)
}

// DeleteSnapshot DELETEs …/{vmid}/snapshot/{name} and waits; deleting
// one that is gone fails, so a repeat after a lock failure is safe.
func (c *Client) DeleteSnapshot(ctx context.Context, typ GuestType, node string, vmid int, name string) error {
	return c.RunIdempotentTask(ctx, http.MethodDelete, guestPath(typ, node, vmid, "snapshot", name), nil)
}

// RollbackSnapshot POSTs …/{vmid}/snapshot/{name}/rollback and waits.
func (c *Client) RollbackSnapshot(ctx context.Context, typ GuestType, node string, vmid int, name string) error {
	return c.RunTask(ctx, http.MethodPost, guestPath(typ, node, vmid, "snapshot", name, "rollback"), nil)
}

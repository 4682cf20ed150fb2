package pve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Pool is GET /pools?poolid=ID (members flattened).
type Pool struct {
	PoolID  string
	Comment string
	Members []ClusterResource
}

type poolJSON struct {
	PoolID  string            `json:"poolid"`
	Comment string            `json:"comment"`
	Members []ClusterResource `json:"members"`
}

// Pools lists GET /pools (ids and comments only).
func (c *Client) Pools(ctx context.Context) ([]Pool, error) {
	var rows []poolJSON
	if err := c.Do(ctx, http.MethodGet, "/pools", nil, &rows); err != nil {
		return nil, err
	}
	out := make([]Pool, 0, len(rows))
	for _, r := range rows {
		out = append(out, Pool{PoolID: r.PoolID, Comment: r.Comment})
	}
	return out, nil
}

// Pool reads one pool with members (GET /pools?poolid=ID). A pool PVE does
// not list is reported as a 404 *APIError, so IsNotFound holds.
func (c *Client) Pool(ctx context.Context, id string) (*Pool, error) {
	if id == "" {
		return nil, fmt.Errorf("read pool: empty pool id")
	}
	var rows []poolJSON
	if err := c.Do(ctx, http.MethodGet, "/pools", url.Values{"poolid": {id}}, &rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.PoolID == id {
			return &Pool{PoolID: r.PoolID, Comment: r.Comment, Members: r.Members}, nil
		}
	}
	return nil, &APIError{Method: http.MethodGet, Path: "/pools", Status: http.StatusNotFound, Message: fmt.Sprintf("pool '%s' does not exist", id)}
}

// CreatePool is POST /pools (poolid, comment).
func (c *Client) CreatePool(ctx context.Context, params url.Values) error {
	return c.Do(ctx, http.MethodPost, "/pools", params, nil)
}

// UpdatePool is PUT /pools (params include poolid).
func (c *Client) UpdatePool(ctx context.Context, params url.Values) error {
	return c.Do(ctx, http.MethodPut, "/pools", params, nil)
}

// DeletePool is DELETE /pools?poolid=ID.
func (c *Client) DeletePool(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("delete pool: empty pool id")
	}
	return c.Do(ctx, http.MethodDelete, "/pools", url.Values{"poolid": {id}}, nil)
}

package pve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Storages lists GET /storage: every storage.cfg entry the token may see
// (Datastore.Audit or Datastore.AllocateSpace on /storage/ID), each with
// its options as PVE's section-config parser reads them, and the digest
// of the whole storage.cfg. Secrets are never among them.
func (c *Client) Storages(ctx context.Context) ([]*Config, error) {
	var rows []*Config
	if err := c.Do(ctx, http.MethodGet, "/storage", nil, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// CreateStorage is POST /storage (params include storage and type). Its
// answer may echo a PBS encryption key: it is not kept.
func (c *Client) CreateStorage(ctx context.Context, params url.Values) error {
	return c.Do(ctx, http.MethodPost, "/storage", params, nil)
}

// UpdateStorage is PUT /storage/{id} (with delete and digest as given).
func (c *Client) UpdateStorage(ctx context.Context, id string, params url.Values) error {
	if id == "" {
		return fmt.Errorf("update storage: empty storage id")
	}
	return c.Do(ctx, http.MethodPut, "/storage/"+url.PathEscape(id), params, nil)
}

// DeleteStorage is DELETE /storage/{id}: it removes the configuration
// only; the data on the storage stays where it is.
func (c *Client) DeleteStorage(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("delete storage: empty storage id")
	}
	return c.Do(ctx, http.MethodDelete, "/storage/"+url.PathEscape(id), nil, nil)
}

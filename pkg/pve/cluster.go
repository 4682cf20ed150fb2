package pve

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// apiPath joins escaped path segments: apiPath("nodes", node, "qemu").
// An empty segment yields "//", which DoRaw refuses with a clear error.
func apiPath(segs ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/")
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// ClusterResources lists GET /cluster/resources?type=typ (typ may be "").
func (c *Client) ClusterResources(ctx context.Context, typ string) ([]ClusterResource, error) {
	var params url.Values
	if typ != "" {
		params = url.Values{"type": {typ}}
	}
	var out resourceList
	if err := c.Do(ctx, http.MethodGet, "/cluster/resources", params, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// NextID asks GET /cluster/nextid. The answer is only a hint: another
// client may take the id before it is used.
func (c *Client) NextID(ctx context.Context) (int, error) {
	var id flexInt
	if err := c.Do(ctx, http.MethodGet, "/cluster/nextid", nil, &id); err != nil {
		return 0, err
	}
	return int(id), nil
}

// VMIDFree asks GET /cluster/nextid?vmid=N whether N is free: PVE answers
// 400 "VM N already exists" when it is taken.
func (c *Client) VMIDFree(ctx context.Context, vmid int) (bool, error) {
	err := c.Do(ctx, http.MethodGet, "/cluster/nextid", url.Values{"vmid": {strconv.Itoa(vmid)}}, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		return false, nil
	}
	return err == nil, err
}

// Version is GET /version.
type Version struct {
	Version string `json:"version"`
	Release string `json:"release"`
	RepoID  string `json:"repoid"`
}

func (c *Client) Version(ctx context.Context) (*Version, error) {
	var v Version
	if err := c.Do(ctx, http.MethodGet, "/version", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// NodeNames lists GET /nodes, sorted.
func (c *Client) NodeNames(ctx context.Context) ([]string, error) {
	var nodes []struct {
		Node string `json:"node"`
	}
	if err := c.Do(ctx, http.MethodGet, "/nodes", nil, &nodes); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Node)
	}
	sort.Strings(names)
	return names, nil
}

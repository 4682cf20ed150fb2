package pve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIDocPath is where pveproxy serves PVE's API documentation (the
// api-viewer's schema with every parameter's description), beside the API
// and without authentication (pve-manager PVE/Service/pveproxy.pm serves
// /pve-docs/ from /usr/share/pve-docs).
const APIDocPath = "/pve-docs/api-viewer/apidoc.js"

// maxDocument bounds a static document read (PVE 9's apidoc.js is ~8 MiB).
const maxDocument = 64 << 20

// Document reads a static file pveproxy serves beside the API (path from
// the server root, e.g. APIDocPath), over the client's TLS settings and
// deadlines. It sends no credentials: these files are public.
func (c *Client) Document(ctx context.Context, path string) ([]byte, error) {
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "..") {
		return nil, fmt.Errorf("GET %s: invalid document path", path)
	}
	root := *c.base
	root.Path = strings.TrimSuffix(root.Path, "/api2/json") + path
	ctx, cancel := context.WithTimeout(ctx, c.timeoutFor(http.MethodGet, path))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if c.cfg.userAgent != "" {
		req.Header.Set("User-Agent", c.cfg.userAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(http.MethodGet, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &APIError{Method: http.MethodGet, Path: path, Status: resp.StatusCode, Message: resp.Status}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, c.transportError(http.MethodGet, path, err)
	}
	if len(b) > maxDocument {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", path, maxDocument)
	}
	return b, nil
}

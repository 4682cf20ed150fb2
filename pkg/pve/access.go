package pve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Permissions is what GET /access/permissions answers for the caller: by
// ACL path, the privileges held there, each with whether it propagates to
// the paths below. PVE lists the top-level paths, every path an ACL names
// and the paths of pool members, and leaves out paths where nothing is
// held.
type Permissions map[string]map[string]bool

// TokenID is the API token the client authenticates with (user@realm!name).
func (c *Client) TokenID() string { return c.cfg.tokenID }

// Permissions reads the caller's effective permissions on every path that
// matters, in one call.
func (c *Client) Permissions(ctx context.Context) (Permissions, error) {
	var raw map[string]map[string]json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/access/permissions", nil, &raw); err != nil {
		return nil, fmt.Errorf("read permissions: %w", err)
	}
	out := Permissions{}
	for path, privs := range raw {
		out[path] = map[string]bool{}
		for p, v := range privs {
			// The propagate flag: 1/0, as a number or a string.
			s := strings.Trim(string(v), `"`)
			out[path][p] = s != "0" && s != "" && s != "false"
		}
	}
	return out, nil
}

// Has reports whether priv is held on path. A path PVE did not list gets
// what its nearest listed parent holds with propagation: that is how ACLs
// reach below the path they name (pve-access-control AccessControl.pm
// roles). A parent listing only unpropagated privileges passes nothing
// down, so the search goes on above it. The derivation cannot see a
// NoAccess or a privilege-less ACL on an unlisted path, which PVE leaves
// out of the listing: such a path looks like its parent.
func (p Permissions) Has(path, priv string) bool {
	if privs, ok := p[path]; ok {
		_, held := privs[priv]
		return held
	}
	for parent := parentPath(path); parent != ""; parent = parentPath(parent) {
		privs, ok := p[parent]
		if !ok {
			continue
		}
		propagated := false
		for _, prop := range privs {
			propagated = propagated || prop
		}
		if propagated {
			return privs[priv]
		}
	}
	return false
}

// parentPath is the ACL path above path ("" above "/").
func parentPath(path string) string {
	if path == "/" || path == "" {
		return ""
	}
	i := strings.LastIndex(path, "/")
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// PermissionsAt asks PVE for the caller's privileges on one path. Unlike
// the full listing, which leaves out every path where nothing is held
// (pve-access-control RPCEnvironment.pm get_effective_permissions), PVE
// answers a path asked for even when nothing is held there
// (API2/AccessControl.pm permissions: `{ $path => {} }`), so a NoAccess
// on the path shows as an empty set instead of the parent's privileges.
func (c *Client) PermissionsAt(ctx context.Context, path string) (map[string]bool, error) {
	var raw map[string]map[string]json.RawMessage
	if err := c.Do(ctx, http.MethodGet, "/access/permissions", url.Values{"path": {path}}, &raw); err != nil {
		return nil, fmt.Errorf("read permissions on %s: %w", path, err)
	}
	out := map[string]bool{}
	for p, v := range raw[path] {
		s := strings.Trim(string(v), `"`)
		out[p] = s != "0" && s != "" && s != "false"
	}
	return out, nil
}

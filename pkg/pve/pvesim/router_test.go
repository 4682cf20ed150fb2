package pvesim

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// TestRoutesAreInTheAPI fails when a handler is registered under a path
// PVE does not have (a typo, or an invented endpoint).
func TestRoutesAreInTheAPI(t *testing.T) {
	s := &Server{}
	served := map[string]bool{}
	for _, set := range s.surfaces() {
		for _, rt := range set {
			served[rt.key] = true
			method, path, ok := cutKey(rt.key)
			if !ok {
				t.Errorf("route key %q is not \"METHOD /path\"", rt.key)
				continue
			}
			if _, ok := schema.Default().Lookup(method, path); !ok {
				t.Errorf("route %q is not in the PVE 9.1 API schema", rt.key)
			}
		}
	}
	// One key per surface: a surface left out of surfaces() shows here.
	for _, key := range []string{"GET /version", "GET /nodes/{node}/tasks", "POST /nodes/{node}/qemu",
		"POST /nodes/{node}/lxc", "GET /pools", "PUT /nodes/{node}/network", "GET /nodes/{node}/dns",
		"PUT /access/acl", "POST /storage", "DELETE /nodes/{node}/storage/{storage}/content/{volume}"} {
		if !served[key] {
			t.Errorf("got no route %q", key)
		}
	}
}

func cutKey(key string) (method, path string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == ' ' {
			return key[:i], key[i+1:], i > 0 && i+1 < len(key) && key[i+1] == '/'
		}
	}
	return "", "", false
}

func TestRouteTableRefuses(t *testing.T) {
	h := func(*request) (any, error) { return nil, nil }
	tests := []struct {
		name   string
		routes []route
	}{
		{"a path PVE does not have", []route{r("GET /nodes/{node}/kubernetes", h)}},
		{"a variable renamed", []route{r("GET /nodes/{name}/qemu", h)}},
		{"registered twice", []route{r("GET /version", h), r("GET /version", h)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := routeTable(schema.Default(), tc.routes); err == nil {
				t.Errorf("routeTable: got nil error, want one")
			}
		})
	}
}

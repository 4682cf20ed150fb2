package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		method, path string
		wantTemplate string
		wantVars     map[string]string
	}{
		{"GET", "/nodes/pve/qemu/100/config", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "pve", "vmid": "100"}},
		{"get", "/nodes/pve/qemu/100/config/", "/nodes/{node}/qemu/{vmid}/config", map[string]string{"node": "pve", "vmid": "100"}},
		{"POST", "/nodes/pve/qemu", "/nodes/{node}/qemu", map[string]string{"node": "pve"}},
		{"GET", "/nodes/pve/qemu/100/status/current", "/nodes/{node}/qemu/{vmid}/status/current", map[string]string{"node": "pve", "vmid": "100"}},
		{"POST", "/nodes/pve/qemu/100/status/start", "/nodes/{node}/qemu/{vmid}/status/start", map[string]string{"node": "pve", "vmid": "100"}},
		{"GET", "/version", "/version", map[string]string{}},
		{"GET", "/cluster/resources", "/cluster/resources", map[string]string{}},
		{"PUT", "/nodes/pve/network", "/nodes/{node}/network", map[string]string{"node": "pve"}},
		{"PUT", "/nodes/pve/network/vmbr1", "/nodes/{node}/network/{iface}", map[string]string{"node": "pve", "iface": "vmbr1"}},
		{"GET", "/nodes/pve/tasks/UPID:pve:00001234:00005678:65000000:qmcreate:100:root@pam:/status", "/nodes/{node}/tasks/{upid}/status",
			map[string]string{"node": "pve", "upid": "UPID:pve:00001234:00005678:65000000:qmcreate:100:root@pam:"}},
		{"DELETE", "/nodes/pve/storage/local/content/local%3Aiso%2Fnoble.iso", "/nodes/{node}/storage/{storage}/content/{volume}",
			map[string]string{"node": "pve", "storage": "local", "volume": "local:iso/noble.iso"}},
		{"DELETE", "/nodes/pve/storage/local/content/local:iso/noble.iso", "/nodes/{node}/storage/{storage}/content/{volume}",
			map[string]string{"node": "pve", "storage": "local", "volume": "local:iso/noble.iso"}},
		{"POST", "/access/users/deploy@pve/token/ci", "/access/users/{userid}/token/{tokenid}", map[string]string{"userid": "deploy@pve", "tokenid": "ci"}},
		{"GET", "/pools", "/pools", map[string]string{}},
		{"POST", "/nodes/pve/storage/local/download-url", "/nodes/{node}/storage/{storage}/download-url", map[string]string{"node": "pve", "storage": "local"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			m, vars, ok := Default().Match(tt.method, tt.path)
			if !ok {
				t.Fatalf("Match: not found")
			}
			if m.Path != tt.wantTemplate {
				t.Errorf("template: got %q want %q", m.Path, tt.wantTemplate)
			}
			if diff := cmp.Diff(tt.wantVars, vars); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatchMisses(t *testing.T) {
	tests := []struct{ method, path string }{
		{"GET", "/nope"},
		{"PATCH", "/nodes/pve/qemu"},
		{"GET", "/version/extra"},
		{"GET", "/nodes/pve/kubernetes"},
		{"GET", "/nodes//qemu"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if m, _, ok := Default().Match(tt.method, tt.path); ok {
				t.Errorf("Match: got %s %s want no match", m.Method, m.Path)
			}
		})
	}
}

func TestMatchPrefersLiterals(t *testing.T) {
	tbl := &Table{Methods: map[string]*Method{
		"GET /a/{x}/c":    {Method: "GET", Path: "/a/{x}/c"},
		"GET /a/b/{y}":    {Method: "GET", Path: "/a/b/{y}"},
		"GET /a/{x}":      {Method: "GET", Path: "/a/{x}"},
		"GET /a/b":        {Method: "GET", Path: "/a/b"},
		"GET /v/{volume}": {Method: "GET", Path: "/v/{volume}"},
	}}
	tests := []struct{ path, want string }{
		{"/a/b/c", "/a/b/{y}"},
		{"/a/z/c", "/a/{x}/c"},
		{"/a/b", "/a/b"},
		{"/a/q", "/a/{x}"},
		{"/v/local:iso/a.iso", "/v/{volume}"}, // a volume ID swallows the rest
		{"/a/q/r/s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			m, _, ok := tbl.Match("GET", tt.path)
			if tt.want == "" {
				if ok {
					t.Errorf("got %q want no match", m.Path)
				}
				return
			}
			if !ok {
				t.Fatalf("Match: not found")
			}
			if m.Path != tt.want {
				t.Errorf("got %q want %q", m.Path, tt.want)
			}
		})
	}
}

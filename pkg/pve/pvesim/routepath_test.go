package pvesim_test

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestContentPathSlash routes a volume id whose "/" is raw in the path as
// PVE does (pve-storage registers the content API with an empty fragment
// delimiter, so the rest of the path is the volume id, as proxmoxer sends
// it), while an escaped "/" in any other variable still splits it in two
// (pve-http-server unescapes the path before it is split).
func TestContentPathSlash(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	for _, f := range []string{"a.iso", "b.iso"} {
		e.run("POST", "/nodes/pve/storage/local/download-url", "url", "https://releases.ubuntu.com/24.04/"+f, "content", "iso", "filename", f)
	}
	e.ok(nil, "GET", "/nodes/pve/storage/local/content/local:iso/a.iso")
	e.ok(nil, "PUT", "/nodes/pve/storage/local/content/local:iso//a.iso", "notes", "n")
	e.run("DELETE", "/nodes/pve/storage/local/content/local:iso/a.iso")
	e.run("DELETE", "/nodes/pve/storage/local/content/local:iso%2Fb.iso")
	rows := e.rows("/nodes/pve/storage/local/content", "content", "iso")
	for _, r := range rows {
		if r["volid"] == "local:iso/a.iso" || r["volid"] == "local:iso/b.iso" {
			t.Errorf("%v still listed after its DELETE", r["volid"])
		}
	}
	for _, tc := range []struct{ path, msg string }{
		{"/access/users/u%2Fx", "Method 'GET /access/users/u/x' not implemented"},
		{"/nodes/pve/qemu/100/config/x", "Method 'GET /nodes/pve/qemu/100/config/x' not implemented"},
	} {
		if r := e.call("GET", tc.path); r.Status != 501 || r.Message != tc.msg {
			t.Errorf("GET %s: got %d %q, want 501 %q", tc.path, r.Status, r.Message, tc.msg)
		}
	}
}

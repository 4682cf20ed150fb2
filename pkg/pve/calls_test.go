package pve

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTypedCalls checks that every typed call hits PVE's exact path with the
// right method and parameters, and waits for the task where there is one.
func TestTypedCalls(t *testing.T) {
	f := newFakePVE(t, false)
	done := status("stopped", "OK")
	f.handle("GET "+taskStatusPath, done)
	task := data(testUPID)
	routes := map[string]http.HandlerFunc{
		"GET /cluster/resources":                   data([]any{map[string]any{"id": "qemu/100", "type": "qemu", "vmid": 100, "template": 1}}),
		"GET /cluster/nextid":                      data("104"),
		"GET /version":                             data(map[string]any{"version": "9.1.1", "release": "9.1", "repoid": "ab12"}),
		"GET /nodes":                               data([]any{map[string]any{"node": "pve2"}, map[string]any{"node": "pve"}}),
		"GET /nodes/pve/qemu/100/config":           data(map[string]any{"memory": 2048, "digest": "d1"}),
		"GET /nodes/pve/qemu/100/status/current":   data(map[string]any{"status": "running", "qmpstatus": "running", "template": 0}),
		"POST /nodes/pve/qemu":                     task,
		"POST /nodes/pve/qemu/100/config":          task,
		"POST /nodes/pve/qemu/100/status/shutdown": task,
		"DELETE /nodes/pve/qemu/100":               task,
		"POST /nodes/pve/network":                  data(nil),
		"PUT /nodes/pve/network/vmbr1":             data(nil),
		"DELETE /nodes/pve/network/vmbr1":          data(nil),
		"PUT /nodes/pve/network":                   task,
		"DELETE /nodes/pve/network":                data(nil),
		"GET /pools": func(w http.ResponseWriter, r *http.Request) {
			if id := r.URL.Query().Get("poolid"); id != "" {
				data([]any{map[string]any{"poolid": id, "comment": "c", "members": []any{
					map[string]any{"id": "qemu/100", "type": "qemu", "vmid": 100, "node": "pve"},
					map[string]any{"id": "storage/pve/local", "type": "storage", "storage": "local", "node": "pve"},
				}}})(w, r)
				return
			}
			data([]any{map[string]any{"poolid": "prod", "comment": "c"}, map[string]any{"poolid": "dev"}})(w, r)
		},
		"POST /pools":   data(nil),
		"PUT /pools":    data(nil),
		"DELETE /pools": data(nil),
	}
	for k, h := range routes {
		f.handle(k, h)
	}
	c := f.client(t)
	ctx := context.Background()

	tests := []struct {
		name string
		call func() (any, error)
		want any
		reqs []string // "METHOD path?params" (query or form, encoded)
	}{
		{name: "cluster resources", call: func() (any, error) { return c.ClusterResources(ctx, "vm") },
			want: []ClusterResource{{ID: "qemu/100", Type: "qemu", VMID: 100, Template: true}},
			reqs: []string{"GET /cluster/resources?type=vm"}},
		{name: "cluster resources all", call: func() (any, error) { return c.ClusterResources(ctx, "") },
			want: []ClusterResource{{ID: "qemu/100", Type: "qemu", VMID: 100, Template: true}},
			reqs: []string{"GET /cluster/resources?"}},
		{name: "next id", call: func() (any, error) { return c.NextID(ctx) }, want: 104, reqs: []string{"GET /cluster/nextid?"}},
		{name: "version", call: func() (any, error) { return c.Version(ctx) },
			want: &Version{Version: "9.1.1", Release: "9.1", RepoID: "ab12"}, reqs: []string{"GET /version?"}},
		{name: "node names sorted", call: func() (any, error) { return c.NodeNames(ctx) }, want: []string{"pve", "pve2"}, reqs: []string{"GET /nodes?"}},
		{name: "qemu config", call: func() (any, error) { return c.QemuConfig(ctx, "pve", 100) },
			want: ConfigOf(map[string]string{"memory": "2048", "digest": "d1"}), reqs: []string{"GET /nodes/pve/qemu/100/config?"}},
		{name: "qemu status", call: func() (any, error) { return c.QemuStatus(ctx, "pve", 100) },
			want: &QemuStatus{Status: "running", QMPStatus: "running"}, reqs: []string{"GET /nodes/pve/qemu/100/status/current?"}},
		{name: "create qemu", call: func() (any, error) {
			return nil, c.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "memory": {"2048"}})
		},
			reqs: []string{"POST /nodes/pve/qemu?memory=2048&vmid=100", "GET " + taskStatusPath + "?"}},
		{name: "update qemu", call: func() (any, error) {
			return nil, c.UpdateQemu(ctx, "pve", 100, url.Values{"delete": {"net1"}, "digest": {"d1"}})
		}, reqs: []string{"POST /nodes/pve/qemu/100/config?delete=net1&digest=d1", "GET " + taskStatusPath + "?"}},
		{name: "power", call: func() (any, error) {
			return nil, c.QemuPower(ctx, "pve", 100, "shutdown", url.Values{"timeout": {"60"}})
		},
			reqs: []string{"POST /nodes/pve/qemu/100/status/shutdown?timeout=60", "GET " + taskStatusPath + "?"}},
		{name: "delete qemu", call: func() (any, error) { return nil, c.DeleteQemu(ctx, "pve", 100) },
			reqs: []string{"DELETE /nodes/pve/qemu/100?destroy-unreferenced-disks=1&purge=1", "GET " + taskStatusPath + "?"}},
		{name: "create iface", call: func() (any, error) {
			return nil, c.CreateIface(ctx, "pve", url.Values{"iface": {"vmbr1"}, "type": {"bridge"}})
		}, reqs: []string{"POST /nodes/pve/network?iface=vmbr1&type=bridge"}},
		{name: "update iface", call: func() (any, error) { return nil, c.UpdateIface(ctx, "pve", "vmbr1", url.Values{"type": {"bridge"}}) },
			reqs: []string{"PUT /nodes/pve/network/vmbr1?type=bridge"}},
		{name: "delete iface", call: func() (any, error) { return nil, c.DeleteIface(ctx, "pve", "vmbr1") },
			reqs: []string{"DELETE /nodes/pve/network/vmbr1?"}},
		{name: "apply network", call: func() (any, error) { return nil, c.ApplyNetwork(ctx, "pve") },
			reqs: []string{"PUT /nodes/pve/network?", "GET " + taskStatusPath + "?"}},
		{name: "revert network", call: func() (any, error) { return nil, c.RevertNetwork(ctx, "pve") },
			reqs: []string{"DELETE /nodes/pve/network?"}},
		{name: "pools", call: func() (any, error) { return c.Pools(ctx) },
			want: []Pool{{PoolID: "prod", Comment: "c"}, {PoolID: "dev"}}, reqs: []string{"GET /pools?"}},
		{name: "pool", call: func() (any, error) { return c.Pool(ctx, "prod") },
			want: &Pool{PoolID: "prod", Comment: "c", Members: []ClusterResource{
				{ID: "qemu/100", Type: "qemu", VMID: 100, Node: "pve"},
				{ID: "storage/pve/local", Type: "storage", Storage: "local", Node: "pve"},
			}}, reqs: []string{"GET /pools?poolid=prod"}},
		{name: "create pool", call: func() (any, error) { return nil, c.CreatePool(ctx, url.Values{"poolid": {"prod"}, "comment": {"c"}}) },
			reqs: []string{"POST /pools?comment=c&poolid=prod"}},
		{name: "update pool", call: func() (any, error) {
			return nil, c.UpdatePool(ctx, url.Values{"poolid": {"prod"}, "vms": {"100"}, "delete": {"1"}})
		}, reqs: []string{"PUT /pools?delete=1&poolid=prod&vms=100"}},
		{name: "delete pool", call: func() (any, error) { return nil, c.DeletePool(ctx, "prod") },
			reqs: []string{"DELETE /pools?poolid=prod"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.requests())
			got, err := tc.call()
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
			}
			var reqs []string
			for _, r := range f.requests()[before:] {
				reqs = append(reqs, r.Method+" "+r.Path+"?"+formOf(t, r).Encode())
			}
			if diff := cmp.Diff(tc.reqs, reqs); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPathEscaping(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("DELETE /nodes/pve/network/we ird", data(nil))
	c := f.client(t)
	if err := c.DeleteIface(context.Background(), "pve", "we ird"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.requests()[0].RawPath, "/api2/json/nodes/pve/network/we%20ird"; got != want {
		t.Errorf("got raw path %q, want %q", got, want)
	}
	if err := c.DeleteIface(context.Background(), "pve", "a/b"); err == nil {
		t.Error("got no error for an iface with a slash, want the fake's 501")
	}
	if got, want := f.requests()[1].RawPath, "/api2/json/nodes/pve/network/a%2Fb"; got != want {
		t.Errorf("got raw path %q, want %q", got, want)
	}
	if _, err := c.QemuConfig(context.Background(), "", 100); err == nil {
		t.Error("got no error for an empty node, want one")
	}
}

func TestPoolMissing(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /pools", data([]any{}))
	c := f.client(t)
	if _, err := c.Pool(context.Background(), "ghost"); !IsNotFound(err) {
		t.Errorf("got %v, want IsNotFound", err)
	}
}

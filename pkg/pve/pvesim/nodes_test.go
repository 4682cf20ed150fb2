package pvesim_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// pve-manager Nodes.pm index with API2Tools.pm extract_node_stats.
func TestNodesHaveEveryField(t *testing.T) {
	e := startEnv(t, simtest.Options{TLS: true, Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	nodes := e.rows("/nodes")
	if len(nodes) != 2 {
		t.Fatalf("got %d nodes, want 2", len(nodes))
	}
	for _, n := range nodes {
		var keys []string
		for k := range n {
			keys = append(keys, k)
		}
		want := []string{"cpu", "disk", "id", "level", "maxcpu", "maxdisk", "maxmem", "mem", "node", "ssl_fingerprint", "status", "type", "uptime"}
		if diff := cmp.Diff(want, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("node %v keys (-want +got)\n%s", n["node"], diff)
		}
		if n["id"] != "node/"+n["node"].(string) || n["type"] != "node" || n["ssl_fingerprint"] != e.Fingerprint {
			t.Errorf("got node %v, want id node/NAME, type node and the served certificate's fingerprint %s", n, e.Fingerprint)
		}
	}

	// Without TLS every node still has a certificate of its own.
	plain := newEnv(t, pvesim.Options{Nodes: []string{"a", "b"}})
	plain.ok(&nodes, "GET", "/nodes")
	fa, fb := nodes[0]["ssl_fingerprint"].(string), nodes[1]["ssl_fingerprint"].(string)
	if len(fa) != 95 || fa == fb || strings.ToUpper(fa) != fa {
		t.Errorf("got fingerprints %q and %q, want two different SHA-256 ones in AA:BB form", fa, fb)
	}
}

// pve-manager Nodes.pm query_url_metadata, answered by the simulated
// network: never a real request.
func TestQueryURLMetadata(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	tests := []struct {
		url    string
		want   map[string]any
		status int
		msg    string
	}{
		{url: "https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img?x=1",
			want: map[string]any{"filename": "noble-server-cloudimg-amd64.img", "size": float64(512 << 20), "mimetype": "application/octet-stream"}},
		{url: "http://download.proxmox.com/images/system/debian-12-standard_12.7-1_amd64.tar.zst",
			want: map[string]any{"filename": "debian-12-standard_12.7-1_amd64.tar.zst", "size": float64(128 << 20), "mimetype": "application/zstd"}},
		{url: "https://releases.ubuntu.com/24.04/ubuntu-24.04-live-server-amd64.iso",
			want: map[string]any{"filename": "ubuntu-24.04-live-server-amd64.iso", "size": float64(512 << 20), "mimetype": "application/x-iso9660-image"}},
		{url: "https://mirror.example/x.iso", status: 500,
			msg: "invalid server response: '500 Can't connect to mirror.example:443 (Name or service not known)'"},
		{url: "http://images.invalid:8080/x.iso", status: 500,
			msg: "invalid server response: '500 Can't connect to images.invalid:8080 (Name or service not known)'"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			if tc.status != 0 {
				r := e.call("GET", "/nodes/pve/query-url-metadata", "url", tc.url)
				if r.Status != tc.status || r.Message != tc.msg {
					t.Errorf("got %d %q, want %d %q", r.Status, r.Message, tc.status, tc.msg)
				}
				return
			}
			got := e.object("/nodes/pve/query-url-metadata", "url", tc.url)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metadata (-want +got)\n%s", diff)
			}
		})
	}
}

// pve-manager API2/Cluster.pm get_status: a standalone node answers one
// fake entry (nodeid 0, no cluster row); several nodes are a cluster with
// a row of its own and a numbered row per member.
func TestClusterStatus(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	rows := e.rows("/cluster/status")
	want := []map[string]any{{
		"type": "node", "id": "node/pve", "name": "pve", "nodeid": float64(0), "ip": "192.168.100.2",
		"local": float64(1), "online": float64(1), "level": "",
	}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("standalone node (-want +got)\n%s", diff)
	}

	e = startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}}})
	rows = nil
	e.ok(&rows, "GET", "/cluster/status")
	want = []map[string]any{
		{"type": "cluster", "id": "cluster", "name": "pvesim", "nodes": float64(2), "version": float64(2), "quorate": float64(1)},
		{"type": "node", "id": "node/pve", "name": "pve", "nodeid": float64(1), "ip": "192.168.100.2",
			"local": float64(1), "online": float64(1), "level": ""},
		{"type": "node", "id": "node/pve2", "name": "pve2", "nodeid": float64(2), "ip": "192.168.100.2",
			"local": float64(0), "online": float64(1), "level": ""},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("two-node cluster (-want +got)\n%s", diff)
	}
}

package pvesim_test

import (
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// An offline node as pveproxy and pve-manager show it (nodeoffline.go):
// proxied calls answer 595 before parameter checks, /nodes and
// /cluster/status say offline, and /cluster/resources keeps the node's
// guests with their last status data, then with status "unknown" only.
func TestOfflineNode(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{
		Nodes: []string{"pve", "pve2"}, StatusInterval: 5 * time.Millisecond, StatusExpiry: 300 * time.Millisecond,
	}})
	e.run("POST", "/nodes/pve2/qemu", "vmid", "101", "name", "db", "memory", "512")
	e.resource("qemu/101", func(r map[string]any) bool { return r["name"] == "db" })
	if err := e.Server.SetNodeOffline("pve2", true); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, method, path string
		kv                 []string
		status             int
		msg                string
	}{
		{"guest list", "GET", "/nodes/pve2/qemu", nil, 595, "No route to host"},
		{"config", "GET", "/nodes/pve2/qemu/101/config", nil, 595, "No route to host"},
		{"create: the node would refuse it", "POST", "/nodes/pve2/qemu", []string{"vmid", "101"}, 595, "No route to host"},
		{"create", "POST", "/nodes/pve2/qemu", []string{"vmid", "102"}, 595, "No route to host"},
		{"network", "GET", "/nodes/pve2/network", nil, 595, "No route to host"},
		{"healthy node", "GET", "/nodes/pve/qemu", nil, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call(tt.method, tt.path, tt.kv...)
			if r.Status != tt.status || r.Message != tt.msg && tt.msg != "" {
				t.Errorf("got %d %q, want %d %q", r.Status, r.Message, tt.status, tt.msg)
			}
		})
	}
	if e.Server.HasGuest(102) {
		t.Error("a create on the offline node made guest 102")
	}

	nodes := e.rows("/nodes")
	for _, n := range nodes {
		want := map[string]string{"pve": "online", "pve2": "offline"}[n["node"].(string)]
		if n["status"] != want {
			t.Errorf("GET /nodes %v: status %v, want %s", n["node"], n["status"], want)
		}
		if n["node"] == "pve2" && n["uptime"] != nil {
			t.Errorf("an offline node has no uptime (extract_node_stats): %v", n)
		}
	}
	cs := e.rows("/cluster/status")
	for _, row := range cs {
		if row["name"] == "pve2" && row["online"] != float64(0) {
			t.Errorf("/cluster/status pve2: %v, want online 0", row)
		}
	}

	// The guest stays listed with what pvestatd last said …
	row := e.resource("qemu/101", func(map[string]any) bool { return true })
	if row["name"] != "db" || row["node"] != "pve2" || row["status"] != "stopped" {
		t.Errorf("right after the node went offline: %v, want name db, node pve2, status stopped", row)
	}
	// … until pmxcfs drops the status data: then only its identity.
	row = e.resource("qemu/101", func(r map[string]any) bool { return r["status"] == "unknown" })
	if _, named := row["name"]; named || row["vmid"] != float64(101) || row["node"] != "pve2" {
		t.Errorf("after the status data expired: %v, want vmid 101 on pve2, status unknown, no name", row)
	}

	if err := e.Server.SetNodeOffline("pve", true); err == nil {
		t.Error("the node answering the API went offline")
	}
	if err := e.Server.SetNodeOffline("pve2", false); err != nil {
		t.Fatal(err)
	}
	if r := e.call("GET", "/nodes/pve2/qemu/101/config"); r.Status != 200 {
		t.Errorf("back online: config read %d %s", r.Status, r.Message)
	}
}

func TestOfflineNodeOptions(t *testing.T) {
	for _, tt := range []struct {
		nodes, offline []string
		ok             bool
	}{
		{[]string{"pve", "pve2"}, []string{"pve2"}, true},
		{[]string{"pve", "pve2"}, []string{"pve"}, false},
		{[]string{"pve"}, []string{"pve3"}, false},
	} {
		s, err := pvesim.New(pvesim.Options{Nodes: tt.nodes, OfflineNodes: tt.offline, TokenSecret: "x"})
		if (err == nil) != tt.ok {
			t.Errorf("nodes %v offline %v: err %v, want ok=%v", tt.nodes, tt.offline, err, tt.ok)
		}
		if s != nil {
			s.Close()
		}
	}
}

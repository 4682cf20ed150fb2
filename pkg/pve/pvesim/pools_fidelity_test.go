package pvesim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func poolMemberIDs(e *env, pool string) []string {
	var pools []struct {
		Members []map[string]any `json:"members"`
	}
	e.ok(&pools, "GET", "/pools", "poolid", pool)
	var ids []string
	for _, m := range pools[0].Members {
		ids = append(ids, m["id"].(string))
	}
	return ids
}

// pve-manager PVE/API2/Pool.pm index: a storage member is listed once, on
// the node answering (the first), or, when its nodes leave that one out,
// on the first of them by name; guests come in Perl's string order.
func TestPoolStorageMemberOnce(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve1", "pve2", "pve3"}}})
	e.ok(nil, "POST", "/storage", "storage", "only3", "type", "dir", "path", "/srv/x", "nodes", "pve3,pve2")
	e.ok(nil, "POST", "/pools", "poolid", "lab")
	e.ok(nil, "PUT", "/pools", "poolid", "lab", "storage", "local,only3", "vms", "999,1000")
	want := []string{"storage/pve1/local", "storage/pve2/only3"}
	if diff := cmp.Diff(want, poolMemberIDs(e, "lab")); diff != "" {
		t.Errorf("lab members (-want +got)\n%s", diff)
	}
}

// Pool.pm delete_pool walks `sort keys` of the VMIDs: strings, so VM 1000
// is named before VM 999.
func TestPoolDeleteNamesFirstVMAsString(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/pools", "poolid", "lab")
	e.run("POST", "/nodes/pve/qemu", "vmid", "999")
	e.run("POST", "/nodes/pve/qemu", "vmid", "1000")
	e.ok(nil, "PUT", "/pools", "poolid", "lab", "vms", "999,1000")
	r := e.call("DELETE", "/pools", "poolid", "lab")
	if want := "delete pool failed: pool 'lab' is not empty (contains VM 1000)"; r.Message != want {
		t.Errorf("got %d %q, want %q", r.Status, r.Message, want)
	}
}

// AccessControl.pm parse_user_config keeps a pool comment only when Perl
// holds it true: "0" is no comment.
func TestPoolCommentZero(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/pools", "poolid", "lab", "comment", "0")
	for _, row := range e.rows("/pools") {
		if _, ok := row["comment"]; ok && row["poolid"] == "lab" {
			t.Errorf("pool lab lists comment %v, PVE keeps none", row["comment"])
		}
	}
}

// AccessControl.pm delete_pool_acl removes /pool/<id>'s ACL node, which it
// finds for a top-level pool only: a nested pool's ACLs stay.
func TestPoolDeleteNestedKeepsACL(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/pools", "poolid", "team")
	e.ok(nil, "POST", "/pools", "poolid", "team/dev")
	// Not root@pam: write_user_config never keeps an entry of it.
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve")
	e.ok(nil, "PUT", "/access/acl", "path", "/pool/team/dev", "roles", "PVEAuditor", "users", "ci@pve")
	e.ok(nil, "DELETE", "/pools", "poolid", "team/dev")
	found := false
	for _, row := range e.rows("/access/acl") {
		found = found || row["path"] == "/pool/team/dev"
	}
	if !found {
		t.Errorf("the ACL on /pool/team/dev went with the nested pool; PVE keeps it")
	}
	e.ok(nil, "PUT", "/access/acl", "path", "/pool/team", "roles", "PVEAuditor", "users", "ci@pve")
	e.ok(nil, "DELETE", "/pools", "poolid", "team")
	for _, row := range e.rows("/access/acl") {
		if p, _ := row["path"].(string); p == "/pool/team" || p == "/pool/team/dev" {
			t.Errorf("ACL on %s outlived top-level pool team", p)
		}
	}
}

// Pool.pm read_pool returns index's row (poolid too); a guest member is
// API2Tools.pm extract_vm_stats: no tags, lock or pool from the config.
func TestPoolReadRow(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/pools", "poolid", "lab")
	e.ok(nil, "PUT", "/nodes/pve/qemu/9000/config", "tags", "gold")
	e.ok(nil, "PUT", "/pools", "poolid", "lab", "vms", "9000")
	got := e.object("/pools/lab")
	if got["poolid"] != "lab" {
		t.Errorf("GET /pools/lab has poolid %v, want lab", got["poolid"])
	}
	m := got["members"].([]any)[0].(map[string]any)
	for _, k := range []string{"tags", "pool", "lock"} {
		if v, ok := m[k]; ok {
			t.Errorf("pool member has %s %v; extract_vm_stats has no such key", k, v)
		}
	}
}

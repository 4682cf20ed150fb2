package pvesim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// pve-manager PVE/API2/Pool.pm update_pool, create_pool, delete_pool.
func TestPoolMembership(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/pools", "poolid", "lab")
	e.ok(nil, "POST", "/pools", "poolid", "prod")
	e.ok(nil, "PUT", "/pools", "poolid", "lab", "vms", "9000", "storage", "local")
	members := func(pool string) []string { return poolMemberIDs(e, pool) }
	tests := []refusal{
		{"VM added twice", "PUT", "/pools", []string{"poolid", "lab", "vms", "9000"}, 500,
			"update pools failed: VM 9000 is already a pool member"},
		{"twice in one call", "PUT", "/pools", []string{"poolid", "prod", "vms", "100,100"}, 500,
			"update pools failed: VM 100 is already a pool member"},
		{"VM of another pool", "PUT", "/pools", []string{"poolid", "prod", "vms", "9000"}, 500,
			"update pools failed: VM 9000 belongs already to pool 'lab' and 'allow-move' is not set"},
		{"storage added twice", "PUT", "/pools", []string{"poolid", "lab", "storage", "local"}, 500,
			"update pools failed: Storage 'local' is already a pool member"},
		{"removing a VM that is not a member", "PUT", "/pools", []string{"poolid", "prod", "vms", "9000", "delete", "1"}, 500,
			"update pools failed: VM 9000 is not a pool member"},
		{"removing a storage that is not a member", "PUT", "/pools", []string{"poolid", "prod", "storage", "local", "delete", "1"}, 500,
			"update pools failed: Storage 'local' is not a pool member"},
		{"missing pool", "PUT", "/pools", []string{"poolid", "nope", "vms", "9000"}, 500,
			"update pools failed: pool 'nope' does not exist"},
		{"name without a letter first", "POST", "/pools", []string{"poolid", "1lab"}, 500,
			"create pool failed: pool name must start with a letter"},
		{"nested without parent", "POST", "/pools", []string{"poolid", "team/dev"}, 500,
			"create pool failed: parent 'team' of pool 'team/dev' does not exist"},
		{"deleting a missing pool", "DELETE", "/pools", []string{"poolid", "nope"}, 500,
			"delete pool failed: pool 'nope' does not exist"},
	}
	e.refuses(t, tests)
	// A refused call changes nothing, not even the members it named first.
	if diff := cmp.Diff([]string{"qemu/9000", "storage/pve/local"}, members("lab")); diff != "" {
		t.Errorf("lab members after refused calls (-want +got)\n%s", diff)
	}
	if got := members("prod"); len(got) != 0 {
		t.Errorf("got prod members %v after refused calls, want none", got)
	}

	// PVE does not check that a guest exists before it adds it.
	e.ok(nil, "PUT", "/pools", "poolid", "prod", "vms", "9000,4242", "allow-move", "1")
	if diff := cmp.Diff([]string{"qemu/9000"}, members("prod")); diff != "" {
		t.Errorf("prod members after a move (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"storage/pve/local"}, members("lab")); diff != "" {
		t.Errorf("lab members after the move (-want +got)\n%s", diff)
	}
	// A member that no longer exists does not keep a pool from going.
	e.ok(nil, "PUT", "/pools", "poolid", "prod", "vms", "9000", "delete", "1")
	e.ok(nil, "DELETE", "/pools", "poolid", "prod")

	e.ok(nil, "POST", "/pools", "poolid", "lab/dev")
	if r := e.call("DELETE", "/pools", "poolid", "lab"); r.Message != "delete pool failed: pool 'lab' is not empty (contains pool 'lab/dev')" {
		t.Errorf("got %d %q deleting a pool with a sub-pool", r.Status, r.Message)
	}
}

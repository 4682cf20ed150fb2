package pvesim_test

import (
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// haSetup is two nodes with VM 100, 101 and 102 as HA resources (no
// conformance check: the tests send what PVE's schema refuses).
func haSetup(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond})
	for _, id := range []string{"100", "101", "102"} {
		e.run("POST", "/nodes/pve/qemu", "vmid", id, "scsi0", "local-lvm:1")
		e.ok(nil, "POST", "/cluster/ha/resources", "sid", "vm:"+id, "state", "stopped")
	}
	return e
}

// The HA sid and node formats are pve-ha-manager Tools.pm's
// pve_verify_ha_resource_id, pve_verify_ha_resource_or_vm_id and
// pve_verify_ha_node: a sid that fails them is a 400 before the handler.
func TestHAFormats(t *testing.T) {
	e := haSetup(t)
	const bad = "Parameter verification failed."
	e.refuses(t, []refusal{
		{"sid upper case", "POST", "/cluster/ha/resources", []string{"sid", "VM:100"}, 400, bad},
		{"sid no name", "GET", "/cluster/ha/resources/vm:", nil, 400, bad},
		{"rule bare vmid", "POST", "/cluster/ha/rules", []string{"rule", "r1", "type", "node-affinity", "resources", "100", "nodes", "pve"}, 400, bad},
		{"rule bad node", "POST", "/cluster/ha/rules", []string{"rule", "r1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve:x"}, 400, bad},
		// foo:1 has the form: the handler finds it is not a resource.
		{"rule other type", "POST", "/cluster/ha/rules", []string{"rule", "r1", "type", "node-affinity", "resources", "foo:1", "nodes", "pve"}, 500,
			"create ha rule failed: cannot use unmanaged resource(s) foo:1."},
	})
}

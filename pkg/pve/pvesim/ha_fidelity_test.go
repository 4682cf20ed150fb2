package pvesim_test

import (
	"fmt"
	"strings"
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

// The feasibility checks PVE runs on a rule it writes (Rules.pm
// check_feasibility, with ResourceAffinity.pm's and the inter-plugin
// checks): a write that makes its own rule infeasible is refused.
func TestHARuleFeasibility(t *testing.T) {
	e := haSetup(t)
	const rules = "/cluster/ha/rules"
	invalid := func(id, why string) string {
		return "create ha rule failed: 400 Rule '" + id + "' is invalid.\nresources: " + why
	}
	e.refuses(t, []refusal{
		{"negative beyond nodes", "POST", rules, []string{"rule", "n1", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101,vm:102"}, 500,
			invalid("n1", "rule defines more resources than available nodes")},
	})
	e.ok(nil, "POST", rules, "rule", "p1", "type", "resource-affinity", "affinity", "positive", "resources", "vm:100,vm:101")
	e.ok(nil, "POST", rules, "rule", "a1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve")
	e.refuses(t, []refusal{
		{"positive and negative share two", "POST", rules, []string{"rule", "n2", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:101"}, 500,
			invalid("n2", "rule shares two or more resources with a positive resource affinity rule")},
		{"second node affinity in a positive set", "POST", rules, []string{"rule", "a2", "type", "node-affinity", "resources", "vm:101", "nodes", "pve2"}, 500,
			invalid("a2", "at least one resource is in a positive resource affinity rule and there are other resources in at least one other node affinity rule already")},
	})
	// A disabled rule is not checked; enabling it is.
	e.ok(nil, "POST", rules, "rule", "a2", "type", "node-affinity", "resources", "vm:102", "nodes", "pve", "disable", "1")
	e.ok(nil, "POST", rules, "rule", "n3", "type", "resource-affinity", "affinity", "negative", "resources", "vm:100,vm:102")
	r := e.call("PUT", rules+"/a2", "type", "node-affinity", "delete", "disable")
	if want := "update HA rules failed: 400 Rule 'a2' is invalid.\nresources: at least one resource is in a negative resource affinity rule and this rule would restrict these to less nodes than available to the resources"; r.Status != 500 || r.Message != want {
		t.Errorf("enable a2: got %d %q, want %q", r.Status, r.Message, want)
	}
}

// Updates as PVE makes them: a resource's delete takes any option of its
// plugin, refuses others with SectionConfig's message and wins over a
// value set in the same call (Config.pm update_single_resource_config_inplace);
// a rule's update refuses another type (check_value), an unknown option,
// and setting and deleting one option (delete_from_config). A refusal
// writes nothing.
func TestHAUpdates(t *testing.T) {
	e := haSetup(t)
	e.ok(nil, "POST", "/cluster/ha/rules", "rule", "a1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve", "comment", "x")
	e.refuses(t, []refusal{
		{"resource unknown option", "PUT", "/cluster/ha/resources/vm:100", []string{"comment", "new", "delete", "nodes"}, 500,
			"update resources config failed: no such option 'nodes'"},
		{"rule other type", "PUT", "/cluster/ha/rules/a1", []string{"type", "resource-affinity", "comment", "y"}, 500,
			"update HA rules failed: unexpected property 'type'"},
		{"rule unknown option", "PUT", "/cluster/ha/rules/a1", []string{"type", "node-affinity", "delete", "comment,affinity"}, 500,
			"update HA rules failed: no such option 'affinity'"},
		{"rule set and delete", "PUT", "/cluster/ha/rules/a1", []string{"type", "node-affinity", "strict", "1", "delete", "strict"}, 500,
			"update HA rules failed: cannot set and delete property 'strict' at the same time!"},
	})
	if res := e.object("/cluster/ha/resources/vm:100"); res["comment"] != nil {
		t.Errorf("a refused update wrote: %v", res)
	}
	if rule := e.object("/cluster/ha/rules/a1"); rule["comment"] != "x" {
		t.Errorf("a refused rule update wrote: %v", rule)
	}
	e.ok(nil, "PUT", "/cluster/ha/resources/vm:100", "max_restart", "3", "delete", "group,max_restart")
	if res := e.object("/cluster/ha/resources/vm:100"); res["max_restart"] != nil || res["state"] != "stopped" {
		t.Errorf("set and delete max_restart: got %v", res)
	}
}

// Config.pm parse_sid: a bare vmid is looked up as written (0100 is no
// guest), and TYPE:NAME splits at the last colon; an unknown type is
// SectionConfig.pm lookup's refusal.
func TestHASidForms(t *testing.T) {
	e := haSetup(t)
	e.refuses(t, []refusal{
		{"leading zero", "GET", "/cluster/ha/resources/0100", nil, 500, "unable to detect SID from VMID - VM/CT 0100 does not exist"},
		{"two colons", "POST", "/cluster/ha/resources", []string{"sid", "vm:100:1"}, 500, "unknown section type 'vm:100'"},
		{"other type", "POST", "/cluster/ha/resources", []string{"sid", "foo:100"}, 500, "unknown section type 'foo'"},
	})
}

// Rules' order as rules.cfg keeps it: get_next_ordinal is the lowest
// ordinal plus one, and the file read back numbers its sections 1, 2, …
// (SectionConfig.pm parse_config), so a fourth rule lands before the
// third and a deletion closes the gap.
func TestHARuleOrder(t *testing.T) {
	e := haSetup(t)
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		e.ok(nil, "POST", "/cluster/ha/rules", "rule", id, "type", "node-affinity", "resources", "vm:100", "nodes", "pve", "disable", "1")
	}
	order := func() (out []string) {
		for _, r := range e.rows("/cluster/ha/rules") {
			out = append(out, r["rule"].(string)+":"+fmt.Sprint(r["order"]))
		}
		return out
	}
	if got := strings.Join(order(), " "); got != "r1:1 r2:2 r4:3 r3:4" {
		t.Errorf("order: got %s", got)
	}
	e.ok(nil, "DELETE", "/cluster/ha/rules/r2")
	if got := strings.Join(order(), " "); got != "r1:1 r4:2 r3:3" {
		t.Errorf("order after a deletion: got %s", got)
	}
}

// SectionConfig.pm check_value refuses a value with a line feed, even
// with the schema check skipped (both HA config files).
func TestHALineFeed(t *testing.T) {
	e := haSetup(t)
	e.refuses(t, []refusal{
		{"resource create", "POST", "/cluster/ha/resources", []string{"sid", "vm:100", "comment", "a\nb"}, 500, "property contains a line feed"},
		{"resource update", "PUT", "/cluster/ha/resources/vm:100", []string{"comment", "a\nb"}, 500, "update resources config failed: property contains a line feed"},
		{"rule create", "POST", "/cluster/ha/rules", []string{"rule", "r1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve", "comment", "a\rb"}, 500, "property contains a line feed"},
	})
}

// A create with ha-managed adds the guest as an HA resource (qemu-server
// and pve-container create_vm run "ha-manager add"), stopped unless the
// create starts it.
func TestHAManagedCreate(t *testing.T) {
	e := haSetup(t)
	e.run("POST", "/nodes/pve/qemu", "vmid", "110", "scsi0", "local-lvm:1", "ha-managed", "1")
	res := e.object("/cluster/ha/resources/110")
	if res["sid"] != "vm:110" || res["state"] != "stopped" {
		t.Errorf("resource of a create with ha-managed: got %v", res)
	}
}

// The LRM stops a guest with the resource plugin's shutdown: a shutdown
// task (timeout 60) when the requested state becomes stopped, a stop only
// for vm_stop's "crm-command stop <sid> 0".
func TestHAStopTask(t *testing.T) {
	e := haSetup(t)
	e.ok(nil, "PUT", "/cluster/ha/resources/vm:100", "state", "started")
	e.running("100", true)
	e.ok(nil, "PUT", "/cluster/ha/resources/vm:100", "state", "stopped")
	e.running("100", false)
	found := map[string]bool{}
	for _, row := range e.rows("/nodes/pve/tasks", "vmid", "100") {
		found[row["type"].(string)] = true
	}
	if !found["qmshutdown"] || found["qmstop"] {
		t.Errorf("tasks of the HA stop: got %v, want qmshutdown", found)
	}
}

// pve-container checks a CT's state before it hands the CT to the HA
// manager (API2/LXC/Status.pm): a start of a running HA-managed CT, or
// a stop of a stopped one, is refused rather than an hastart/hastop. A
// CT created with ha-managed is one (ct:N, started with start=1).
func TestHACTState(t *testing.T) {
	e := haSetup(t)
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "hostname", "ct-1",
		"ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:8", "ha-managed", "1", "start", "1")
	if res := e.object("/cluster/ha/resources/200"); res["sid"] != "ct:200" || res["state"] != "started" {
		t.Errorf("resource of the CT: got %v", res)
	}
	e.refuses(t, []refusal{
		{"start running", "POST", "/nodes/pve/lxc/200/status/start", nil, 500, "CT 200 already running"},
	})
}

// The migration of an HA-managed VM is an hamigrate task that asks the HA
// manager; the LRM then migrates the VM (qemu-server migrate_vm,
// Resources/PVEVM.pm migrate).
func TestHAMigrate(t *testing.T) {
	e := haSetup(t)
	upid := e.task("POST", "/nodes/pve/qemu/100/migrate", "target", "pve2")
	if !strings.Contains(upid, ":hamigrate:100:") {
		t.Fatalf("migrate of an HA VM: got %s, want an hamigrate task", upid)
	}
	e.wait(upid)
	for range 500 {
		if r := e.call("GET", "/nodes/pve2/qemu/100/status/current"); r.Status == 200 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Errorf("VM 100 never reached pve2")
}

// POST /cluster/ha/resources/{sid}/migrate (Resources.pm migrate): only
// an HA-managed resource, the answer names the resources in positive
// affinity, and the HA stack moves them together.
func TestHAResourceMigrate(t *testing.T) {
	e := haSetup(t)
	e.ok(nil, "PUT", "/cluster/ha/resources/vm:102", "state", "ignored")
	e.ok(nil, "POST", "/cluster/ha/rules", "rule", "p1", "type", "resource-affinity", "affinity", "positive", "resources", "vm:100,vm:101")
	e.refuses(t, []refusal{
		{"ignored", "POST", "/cluster/ha/resources/vm:102/migrate", []string{"node", "pve2"}, 500, "resource 'vm:102' is not HA managed"},
	})
	var out map[string]any
	e.ok(&out, "POST", "/cluster/ha/resources/100/migrate", "node", "pve2")
	if out["sid"] != "vm:100" || out["requested-node"] != "pve2" || fmt.Sprint(out["comigrated-resources"]) != "[vm:101]" {
		t.Errorf("migrate answer: got %v", out)
	}
	for _, id := range []string{"100", "101"} {
		ok := false
		for range 500 {
			if r := e.call("GET", "/nodes/pve2/qemu/"+id+"/status/current"); r.Status == 200 {
				ok = true
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if !ok {
			t.Errorf("VM %s never reached pve2", id)
		}
	}
}

package pvesim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// running waits (bounded) until VM vmid's current status is want.
func (e *env) running(vmid string, want bool) {
	e.t.Helper()
	for range 500 {
		st := e.object("/nodes/pve/qemu/" + vmid + "/status/current")
		if (st["status"] == "running") == want {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	e.t.Fatalf("VM %s: running never became %v", vmid, want)
}

func TestHAResourceLifecycle(t *testing.T) {
	e := twoNodes(t)
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:1")
	for _, tc := range []struct {
		kv      []string
		status  int
		message string
	}{
		{[]string{"sid", "vm:101"}, 500, "resource 'vm:101' does not exist in cluster"},
		{[]string{"sid", "101"}, 500, "unable to detect SID from VMID - VM/CT 101 does not exist"},
		{[]string{"sid", "ct:100"}, 500, "resource 'ct:100' - guest with ID 100 is not a CT"},
		{[]string{"sid", "vm:100", "group", "g1"}, 500, "invalid parameter 'group': ha groups have been migrated to rules"},
		{[]string{"sid", "vm:100", "state", "started", "max_restart", "2", "comment", "web"}, 200, ""},
		{[]string{"sid", "100"}, 500, "create resource failed: resource ID 'vm:100' already defined"},
	} {
		r := e.call("POST", "/cluster/ha/resources", tc.kv...)
		if r.Status != tc.status || r.Message != tc.message && tc.status != 200 {
			t.Errorf("create %v: got %d %q, want %d %q", tc.kv, r.Status, r.Message, tc.status, tc.message)
		}
	}
	res := e.object("/cluster/ha/resources/100")
	if res["sid"] != "vm:100" || res["type"] != "vm" || res["max_restart"] != float64(2) || res["state"] != "started" {
		t.Errorf("read: got %v", res)
	}
	// The CRM starts a guest whose requested state is started.
	e.running("100", true)
	// A stop of an HA-managed VM becomes an hastop task that sets the
	// requested state; the HA stack stops the VM.
	upid := e.task("POST", "/nodes/pve/qemu/100/status/stop")
	if !strings.Contains(upid, ":hastop:100:") {
		t.Errorf("stop of an HA VM: got %s, want an hastop task", upid)
	}
	e.wait(upid)
	e.ok(&res, "GET", "/cluster/ha/resources/vm:100")
	if res["state"] != "stopped" {
		t.Errorf("after hastop: requested state %v, want stopped", res["state"])
	}
	e.running("100", false)
	upid = e.task("POST", "/nodes/pve/qemu/100/status/start")
	if !strings.Contains(upid, ":hastart:100:") {
		t.Errorf("start of an HA VM: got %s, want an hastart task", upid)
	}
	e.wait(upid)
	e.running("100", true)
	status := e.rows("/cluster/ha/status/current")
	found := false
	for _, row := range status {
		if row["sid"] == "vm:100" {
			found = row["state"] == "started" && row["request_state"] == "started" && row["node"] == "pve"
		}
	}
	if !found {
		t.Errorf("status/current: got %v, want vm:100 started on pve", status)
	}
	e.ok(nil, "DELETE", "/cluster/ha/resources/vm:100")
	if r := e.call("DELETE", "/cluster/ha/resources/vm:100"); r.Message != "cannot delete service 'vm:100', not HA managed!" {
		t.Errorf("delete again: got %d %q", r.Status, r.Message)
	}
	// Not HA-managed any more: a stop is a plain qmstop again.
	if upid := e.task("POST", "/nodes/pve/qemu/100/status/stop"); !strings.Contains(upid, ":qmstop:100:") {
		t.Errorf("stop after the resource went: got %s", upid)
	}
}

func TestHARules(t *testing.T) {
	e := twoNodes(t)
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:1")
	e.run("POST", "/nodes/pve/qemu", "vmid", "101", "scsi0", "local-lvm:1")
	for _, tc := range []struct {
		kv      []string
		message string
	}{
		{[]string{"rule", "r1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve"}, "create ha rule failed: cannot use unmanaged resource(s) vm:100."},
		{[]string{"rule", "r1", "type", "node-affinity", "resources", "vm:100"}, "missing value for required option 'nodes'"},
		{[]string{"rule", "r1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve", "affinity", "positive"}, "unexpected property 'affinity'"},
	} {
		if r := e.call("POST", "/cluster/ha/rules", tc.kv...); r.Status != 500 || r.Message != tc.message {
			t.Errorf("create %v: got %d %q, want %q", tc.kv, r.Status, r.Message, tc.message)
		}
	}
	e.ok(nil, "POST", "/cluster/ha/resources", "sid", "vm:100")
	e.ok(nil, "POST", "/cluster/ha/resources", "sid", "vm:101", "state", "stopped")
	if r := e.call("POST", "/cluster/ha/rules", "rule", "r1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve3"); r.Message != "create ha rule failed: cannot use non-existent node(s) pve3." {
		t.Errorf("rule on a missing node: got %d %q", r.Status, r.Message)
	}
	e.ok(nil, "POST", "/cluster/ha/rules", "rule", "r1", "type", "node-affinity", "resources", "vm:100", "nodes", "pve2:1,pve:2", "strict", "1")
	if r := e.call("POST", "/cluster/ha/rules", "rule", "r2", "type", "node-affinity", "resources", "vm:100", "nodes", "pve"); r.Message != "create ha rule failed: 400 Rule 'r2' is invalid.\nresources: resource 'vm:100' is already used in another node affinity rule" {
		t.Errorf("second node-affinity rule for vm:100: got %d %q", r.Status, r.Message)
	}
	// Rules.pm check_single_priority_node_affinity_in_resource_affinity_rules:
	// r1 has two priorities, so vm:100 cannot be in a resource-affinity rule.
	if r := e.call("POST", "/cluster/ha/rules", "rule", "r3", "type", "resource-affinity", "resources", "vm:101,vm:100", "affinity", "negative"); r.Message != "create ha rule failed: 400 Rule 'r3' is invalid.\nresources: resources are in node affinity rules with multiple priorities" {
		t.Errorf("resource-affinity rule beside a multi-priority node-affinity rule: got %d %q", r.Status, r.Message)
	}
	rule := e.object("/cluster/ha/rules/r1")
	if rule["nodes"] != "pve:2,pve2:1" || rule["resources"] != "vm:100" || rule["strict"] != float64(1) || rule["type"] != "node-affinity" {
		t.Errorf("read r1: got %v", rule)
	}
	e.ok(nil, "PUT", "/cluster/ha/rules/r1", "type", "node-affinity", "nodes", "pve", "delete", "strict")
	rule = nil
	e.ok(&rule, "GET", "/cluster/ha/rules/r1")
	if rule["nodes"] != "pve" || rule["strict"] != nil {
		t.Errorf("updated r1: got %v", rule)
	}
	e.ok(nil, "POST", "/cluster/ha/rules", "rule", "r3", "type", "resource-affinity", "resources", "vm:101,vm:100", "affinity", "negative")
	// Deleting a resource (purge, the default) takes it out of its rules
	// and drops a rule left empty.
	e.ok(nil, "DELETE", "/cluster/ha/resources/vm:100")
	rules := e.rows("/cluster/ha/rules")
	if len(rules) != 1 || rules[0]["rule"] != "r3" || rules[0]["resources"] != "vm:101" {
		t.Errorf("rules after the resource went: got %v", rules)
	}
	// r3 is kept with one resource; GET shows why it is not applied
	// (API2/HA/Rules.pm $get_api_ha_rule: errors).
	if errs, _ := rules[0]["errors"].(map[string]any); fmt.Sprint(errs["resources"]) != "[rule is ineffective as there are less than two resources]" {
		t.Errorf("r3's errors: got %v", rules[0]["errors"])
	}
}

package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

func sectionRows(t *testing.T, cl *pve.Client, path string) []*pve.Config {
	t.Helper()
	var rows []*pve.Config
	if err := cl.Do(context.Background(), http.MethodGet, path, nil, &rows); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return rows
}

// sectionEntry is one entry a section list must hold: at path, with key
// set to want.
type sectionEntry struct{ path, key, want string }

// checkSectionEntries requires each list to hold exactly one entry, the
// one named.
func checkSectionEntries(t *testing.T, cl *pve.Client, entries []sectionEntry) {
	t.Helper()
	for _, c := range entries {
		rows := sectionRows(t, cl, c.path)
		if len(rows) != 1 || rows[0].Get(c.key) != c.want {
			t.Errorf("%s: got %v, want one entry with %s %s", c.path, rows, c.key, c.want)
		}
	}
}

// Issue 21 over testdata/examples/05-cluster-ops.yaml on a two-node
// simulator: a zfspool storage, a VM, its HA resource and node-affinity
// rule, a backup job and a replication job apply in one go with the VM's
// vmid; the next plan is clean; a hand edit of the backup schedule is
// planned and restored; destroy removes everything.
func TestE2EClusterOps(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond}, nil)
	f := example(t, "05-cluster-ops.yaml", nil)
	env.mustRun(0, "validate", "-f", f)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
	cl := env.client
	checkSectionEntries(t, cl, []sectionEntry{
		{"/cluster/ha/resources", "sid", "vm:140"},
		{"/cluster/ha/rules", "resources", "vm:140"},
		{"/cluster/backup", "vmid", "140"},
		{"/cluster/replication", "guest", "140"},
	})

	err := cl.Do(context.Background(), http.MethodPut, "/cluster/backup/nightly", url.Values{"schedule": {"sun 04:00"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(2, "plan", "-f", f, "--detailed-exitcode")
	if !strings.Contains(r.stdout, "BackupJob/nightly") || !strings.Contains(r.stdout, "sun 04:00") {
		t.Errorf("plan after a hand edit of the schedule:\n%s", r.stdout)
	}
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if rows := sectionRows(t, cl, "/cluster/backup"); rows[0].Get("schedule") != "mon..fri 21:00" {
		t.Errorf("schedule after apply: got %q", rows[0].Get("schedule"))
	}
	env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")

	env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	for _, path := range []string{"/cluster/ha/resources", "/cluster/ha/rules", "/cluster/backup"} {
		if rows := sectionRows(t, cl, path); len(rows) != 0 {
			t.Errorf("%s after destroy: got %v", path, rows)
		}
	}
}

// A replication job for a guest on local-lvm is refused with PVE's
// reason; one whose target is the guest's own node is refused at plan
// time; an HA rule naming a node the cluster lacks too.
func TestE2EClusterOpsRefusals(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond}, nil)
	vm := writeSpec(t, "vm.yaml", `kind: QemuVM
name: lvm-vm
spec: {vmid: 150, memory: 512, scsi0: "local-lvm:1"}
`)
	env.mustRun(0, "apply", "-f", vm, "--auto-approve")
	repl := writeSpec(t, "repl.yaml", `kind: ReplicationJob
name: lvm-to-pve2
spec: {guest: 150, target: pve2}
`)
	r := env.run("apply", "-f", repl, "--auto-approve")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "missing replicate feature on volume 'local-lvm:vm-150-disk-0'") {
		t.Errorf("replication of a local-lvm guest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	self := writeSpec(t, "self.yaml", `kind: ReplicationJob
name: to-self
spec: {guest: 150, target: pve}
`)
	r = env.run("plan", "-f", self)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "Source and target must not be identical") {
		t.Errorf("replication to the guest's own node: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rule := writeSpec(t, "rule.yaml", `kind: HARule
name: on-pve3
spec: {type: node-affinity, resources: "vm:150", nodes: "pve3"}
`)
	r = env.run("plan", "-f", rule)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "cannot use non-existent node(s) pve3.") {
		t.Errorf("a rule on a missing node: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bad := writeSpec(t, "bad.yaml", "kind: BackupJob\nname: nightly\nspec:\n  all: true\n  schedule: \"mon..fri 25:00\"\n")
	r = env.run("validate", "-f", bad)
	if r.code != 3 || !strings.Contains(r.stderr, "bad.yaml:5") || !strings.Contains(r.stderr, "value '25' out of range") {
		t.Errorf("a schedule PVE cannot parse: exit %d\n%s", r.code, r.stderr)
	}
}

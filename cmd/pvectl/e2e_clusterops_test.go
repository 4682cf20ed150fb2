package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// clusterOpsSpec is issue 21's acceptance set: a zfspool storage on both
// nodes, a VM without vmid on it, its HA resource and rule, a backup and a
// replication job naming it, a pci mapping, a role, a group, an ACL
// granting the one to the other, an LDAP realm whose bind password comes
// from the environment, the cluster's options and a metric server.
const clusterOpsSpec = `kind: Storage
name: tank
spec: {type: zfspool, pool: rpool/data, content: [images, rootdir], nodes: [pve, pve2]}
---
kind: QemuVM
name: ops-vm
spec: {node: pve, memory: 1024, cores: 1, scsi0: "tank:4"}
---
kind: HAResource
name: ops-vm
spec: {guest: QemuVM/ops-vm, state: started, max_restart: 2}
---
kind: HARule
name: ops-vm-on-pve
spec: {type: node-affinity, guests: [QemuVM/ops-vm], nodes: "pve:2,pve2:1"}
---
kind: BackupJob
name: ops-nightly
spec: {schedule: "21:00", guests: [QemuVM/ops-vm], storage: local, mode: snapshot}
---
kind: ReplicationJob
name: ops-vm-to-pve2
spec: {guest: QemuVM/ops-vm, target: pve2, schedule: "*/15"}
---
kind: HardwareMapping
name: ops-gpu
spec:
  type: pci
  map:
    - node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454
    - node=pve2,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454
---
kind: Role
name: ops-operator
spec: {privs: "VM.Audit,VM.PowerMgmt,Mapping.Use"}
---
kind: Group
name: operators
spec: {comment: Operators}
---
kind: ACL
name: operators-on-vms
spec: {path: /vms, groups: operators, roles: ops-operator}
---
kind: Realm
name: corp
spec:
  type: ldap
  server1: 127.0.0.5
  base_dn: dc=corp,dc=example
  user_attr: uid
  bind_dn: cn=pve,dc=corp,dc=example
  password: ${LDAP_BIND_PW}
---
kind: ClusterOptions
name: cluster
spec: {keyboard: de, migration: {type: secure}}
---
kind: MetricServer
name: influx
spec: {type: influxdb, server: 127.0.0.7, port: 8089, token: "${INFLUX_TOKEN}"}
`

const (
	clusterOpsBindPW = "bind-Secret-4711"
	clusterOpsToken  = "influx-Token-0815"
)

// TestE2EClusterOpsAcceptance is issue 21's acceptance on a two-node
// simulator with the schema checked in front: one apply (from a saved
// plan) makes everything, every job carries the VM's allocated vmid, PVE
// shows each object as specified, the secrets are in no output and no
// file, the next plan is clean; apply --snapshot of a change to the VM's
// disk takes a pvectl-… snapshot first and the plan said it would;
// destroy removes everything in reverse dependency order. The other
// acceptance points are TestE2EClusterOps (a hand-edited backup schedule
// planned and restored), TestE2EClusterOpsRefusals (a schedule PVE cannot
// parse: validate exit 3 at file:line; a replication job of a local-lvm
// guest refused with PVE's reason) and TestE2EAccessAndClusterKinds (an
// unknown privilege: validate exit 3 at file:line).
func TestE2EClusterOpsAcceptance(t *testing.T) {
	env := startSimOpts(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, TaskDuration: 30 * time.Millisecond}, nil)
	f := writeSpec(t, "ops.yaml", clusterOpsSpec)
	vars := []string{"PROXMOX_URL=" + env.url, "PROXMOX_TOKEN_ID=" + e2eTokenID, "PROXMOX_TOKEN_SECRET=" + e2eTokenSecret,
		"LDAP_BIND_PW=" + clusterOpsBindPW, "INFLUX_TOKEN=" + clusterOpsToken}
	var outputs []string
	run := func(want int, args ...string) result {
		t.Helper()
		r := env.runEnv(want, vars, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	run(0, "validate", "-f", f)
	planFile := filepath.Join(filepath.Dir(f), "ops.plan")
	run(2, "plan", "-f", f, "--out", planFile, "--detailed-exitcode")
	run(0, "apply", planFile)
	run(0, "plan", "-f", f, "--detailed-exitcode")

	vmid := clusterOpsVMID(t, env.client)
	clusterOpsCheckLive(t, env.client, vmid)
	for _, secret := range []string{clusterOpsBindPW, clusterOpsToken} {
		for i, out := range outputs {
			if strings.Contains(out, secret) {
				t.Errorf("output %d shows a secret:\n%s", i, out)
			}
		}
		clusterOpsNoSecretIn(t, filepath.Dir(f), secret)
	}

	clusterOpsSnapshot(t, env, run, f, vmid)

	r := run(0, "destroy", "-f", f, "--auto-approve")
	clusterOpsDestroyOrder(t, r.stdout)
	for _, path := range []string{"/cluster/ha/resources", "/cluster/ha/rules", "/cluster/backup", "/cluster/replication", "/cluster/mapping/pci", "/cluster/metrics/server"} {
		if rows := sectionRows(t, env.client, path); len(rows) != 0 {
			t.Errorf("%s after destroy: got %v", path, rows)
		}
	}
	if _, err := env.client.GuestConfig(context.Background(), pve.QEMU, "pve", vmid); !pve.IsNotFound(err) {
		t.Errorf("VM %d after destroy: %v, want gone", vmid, err)
	}
}

// clusterOpsVMID is the vmid the VM got (none was written).
func clusterOpsVMID(t *testing.T, cl *pve.Client) int {
	t.Helper()
	for _, row := range sectionRows(t, cl, "/nodes/pve/qemu") {
		if row.Get("name") == "ops-vm" {
			n, err := strconv.Atoi(row.Get("vmid"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("VM ops-vm not made")
	return 0
}

// clusterOpsCheckLive: PVE's API shows each object as specified.
func clusterOpsCheckLive(t *testing.T, cl *pve.Client, vmid int) {
	t.Helper()
	id := strconv.Itoa(vmid)
	checkSectionEntries(t, cl, []sectionEntry{
		{"/cluster/ha/resources", "sid", "vm:" + id},
		{"/cluster/ha/rules", "resources", "vm:" + id},
		{"/cluster/backup", "vmid", id},
		{"/cluster/replication", "guest", id},
		{"/cluster/replication", "target", "pve2"},
		{"/cluster/mapping/pci", "id", "ops-gpu"},
		{"/cluster/metrics/server", "server", "127.0.0.7"},
	})
	var one *pve.Config
	get := func(path string) *pve.Config {
		t.Helper()
		one = nil
		if err := cl.Do(context.Background(), http.MethodGet, path, nil, &one); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return one
	}
	if c := get("/storage/tank"); c.Get("type") != "zfspool" || c.Get("nodes") != "pve,pve2" {
		t.Errorf("storage tank: %v", c)
	}
	if c := get("/cluster/mapping/pci/ops-gpu"); !strings.Contains(c.Get("map"), "node=pve2,") {
		t.Errorf("pci mapping: %v", c)
	}
	if c := get("/access/domains/corp"); c.Get("type") != "ldap" || c.Get("password") != "" {
		t.Errorf("realm: %v", c)
	}
	if c := get("/cluster/options"); c.Get("keyboard") != "de" {
		t.Errorf("cluster options: %v", c)
	}
	roles := sectionRows(t, cl, "/access/roles")
	found := false
	for _, r := range roles {
		found = found || r.Get("roleid") == "ops-operator" && strings.Contains(r.Get("privs"), "Mapping.Use")
	}
	if !found {
		t.Errorf("role ops-operator missing: %v", roles)
	}
	acl := sectionRows(t, cl, "/access/acl")
	found = false
	for _, a := range acl {
		found = found || a.Get("ugid") == "operators" && a.Get("roleid") == "ops-operator" && a.Get("path") == "/vms"
	}
	if !found {
		t.Errorf("ACL of operators missing: %v", acl)
	}
}

// clusterOpsNoSecretIn: no file below dir (the specs, the saved plan)
// holds the secret.
func clusterOpsNoSecretIn(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds a secret", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// clusterOpsSnapshot: apply --snapshot of a bigger disk; the plan says a
// pvectl-… snapshot comes first, and the snapshot holds the disk as it
// was before the change.
func clusterOpsSnapshot(t *testing.T, env *simEnv, run func(int, ...string) result, f string, vmid int) {
	t.Helper()
	bigger := strings.Replace(clusterOpsSpec, `scsi0: "tank:4"`, `scsi0: "tank:6"`, 1)
	if err := os.WriteFile(f, []byte(bigger), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "takes a snapshot pvectl-<time> of qemu " + strconv.Itoa(vmid) + " first (it changes scsi0)"
	if r := run(2, "plan", "-f", f, "--snapshot", "--detailed-exitcode"); !strings.Contains(r.stdout, want) {
		t.Errorf("plan --snapshot does not say %q:\n%s", want, r.stdout)
	}
	run(0, "apply", "-f", f, "--snapshot", "--auto-approve")
	ctx := context.Background()
	snaps, err := env.client.Snapshots(ctx, pve.QEMU, "pve", vmid)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for _, s := range snaps {
		if strings.HasPrefix(s.Name, "pvectl-") {
			name = s.Name
		}
	}
	if name == "" {
		t.Fatalf("no pvectl-… snapshot of VM %d: %v", vmid, snaps)
	}
	var before *pve.Config
	path := "/nodes/pve/qemu/" + strconv.Itoa(vmid) + "/snapshot/" + url.PathEscape(name) + "/config"
	if err := env.client.Do(ctx, http.MethodGet, path, nil, &before); err != nil {
		t.Fatal(err)
	}
	now, err := env.client.GuestConfig(ctx, pve.QEMU, "pve", vmid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before.Get("scsi0"), "size=4G") || !strings.Contains(now.Get("scsi0"), "size=6G") {
		t.Errorf("snapshot %s has scsi0 %q, the VM %q: want the snapshot taken before the change", name, before.Get("scsi0"), now.Get("scsi0"))
	}
	run(0, "plan", "-f", f, "--detailed-exitcode")
}

// clusterOpsDestroyOrder: what depends on something is removed before
// it (the jobs and the rule before the VM's HA resource, those before the
// VM, the VM before its storage, the ACL before its role and group).
func clusterOpsDestroyOrder(t *testing.T, out string) {
	t.Helper()
	at := func(addr string) int {
		i := strings.Index(out, addr+": Destroying")
		if i < 0 {
			t.Errorf("destroy says nothing of %s:\n%s", addr, out)
		}
		return i
	}
	for _, pair := range [][2]string{
		{"HARule/ops-vm-on-pve", "HAResource/ops-vm"}, {"HAResource/ops-vm", "QemuVM/ops-vm"},
		{"BackupJob/ops-nightly", "QemuVM/ops-vm"}, {"ReplicationJob/ops-vm-to-pve2", "QemuVM/ops-vm"},
		{"QemuVM/ops-vm", "Storage/tank"}, {"ACL/operators-on-vms", "Role/ops-operator"}, {"ACL/operators-on-vms", "Group/operators"},
	} {
		if a, b := at(pair[0]), at(pair[1]); a > b {
			t.Errorf("destroy removed %s before %s", pair[1], pair[0])
		}
	}
}

// TestE2EImportHardwareMappings: import --all writes the pci, usb and dir
// mappings (a usb one sharing a pci one's id as usb-<id>, with its id),
// and the documents plan clean.
func TestE2EImportHardwareMappings(t *testing.T) {
	env := startSim(t)
	f := writeSpec(t, "maps.yaml", `kind: HardwareMapping
name: gpu
spec:
  type: pci
  description: the GPU
  map: ["node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"]
---
kind: HardwareMapping
name: stick
spec:
  type: usb
  map: [{node: pve, id: "0781:5583", path: "1-2"}]
---
kind: HardwareMapping
name: share
spec:
  type: dir
  map: [{node: pve, path: /srv/share}]
`)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	err := env.client.Do(context.Background(), http.MethodPost, "/cluster/mapping/usb", url.Values{"id": {"gpu"}, "map": {"node=pve,id=051d:0002"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(0, "import", "--all")
	for _, want := range []string{
		"kind: HardwareMapping\nname: gpu\nspec:\n  type: pci\n",
		"kind: HardwareMapping\nname: usb-gpu\nspec:\n  id: gpu\n  type: usb\n",
		"kind: HardwareMapping\nname: stick\n", "node=pve,path=1-2,id=0781:5583",
		"kind: HardwareMapping\nname: share\n", "node=pve,path=/srv/share",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import output lacks %q:\n%s", want, r.stdout)
		}
	}
	imported := writeSpec(t, "all.yaml", r.stdout)
	env.mustRun(0, "plan", "-f", imported, "--detailed-exitcode")
}

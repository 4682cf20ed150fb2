package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/internal/ansibletest"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// startTLSSim is startSim over TLS, as the Ansible modules (proxmoxer)
// only speak HTTPS; pvectl pins the certificate.
func startTLSSim(t *testing.T) (*simEnv, ansibletest.Target) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{
		TLS: true, Conformance: true,
		Sim: pvesim.Options{TokenID: e2eTokenID, TokenSecret: e2eTokenSecret, TaskDuration: 30 * time.Millisecond, Seed: 1,
			StatusInterval: 50 * time.Millisecond},
		ClientOptions: []pve.Option{pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond)},
	})
	env := &simEnv{t: t, url: s.URL, requests: s.Requests, client: s.Client,
		extraEnv: []string{"PROXMOX_TLS_FINGERPRINT=" + s.Fingerprint}}
	return env, ansibletest.Target{URL: s.URL, TokenID: e2eTokenID, Secret: e2eTokenSecret}
}

// What Ansible's proxmox modules made imports with pvectl and plans
// clean: a user can take over guests made by their playbooks.
func TestE2EAnsibleMadeImportsClean(t *testing.T) {
	e, tg := startTLSSim(t)
	ansibletest.Playbook(t, tg, filepath.Join("..", "..", "internal", "ansibletest", "testdata", "made-by-ansible.yml"), nil)
	r := e.mustRun(0, "import", "QemuVM/310", "LxcContainer/311")
	containsAll(t, "import output", r.stdout, "vmid: 310", "vmid: 311", "ans-import-vm", "ans-import-ct")
	// PVE does not record a container's template: import names the
	// variable that must give it, as the playbook did.
	if !strings.Contains(r.stderr, "CONTAINER_311_OSTEMPLATE") {
		t.Errorf("import does not name the container's template variable:\n%s", r.stderr)
	}
	e.extraEnv = append(e.extraEnv, "CONTAINER_311_OSTEMPLATE=local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst")
	e.mustRun(0, "plan", "-f", writeFile(t, "ansible.yaml", r.stdout), "--detailed-exitcode")

	// And Ansible's inventory reads both back, snapshot lists included
	// (want_facts asks …/qemu/310/snapshot and …/lxc/311/snapshot).
	hv, _ := ansibletest.Inventory(t, tg)["_meta"].(map[string]any)["hostvars"].(map[string]any)
	for _, host := range []string{"ans-import-vm", "ans-import-ct"} {
		h, ok := hv[host].(map[string]any)
		if !ok {
			t.Errorf("the inventory lacks %s: %v", host, hv)
			continue
		}
		if snaps, ok := h["proxmox_snapshots"].([]any); !ok || len(snaps) != 0 {
			t.Errorf("%s proxmox_snapshots: got %v, want an empty list", host, h["proxmox_snapshots"])
		}
	}
}

// What pvectl made is seen by Ansible: the community.general.proxmox
// inventory plugin (want_facts reads every guest's config and snapshot
// list) finds pvectl's VM with its settings and its snapshot; the
// snapshot does not make pvectl's plan dirty.
func TestE2EAnsibleSeesWhatPvectlMade(t *testing.T) {
	e, tg := startTLSSim(t)
	spec := `kind: QemuVM
name: made-by-pvectl
spec:
  node: pve
  vmid: 320
  memory: 1536
  cores: 2
  scsi0: local-lvm:4
  net0: virtio,bridge=vmbr0
  tags: [pvectl, web]
`
	specFile := writeFile(t, "vm.yaml", spec)
	e.mustRun(0, "apply", "-f", specFile, "--auto-approve")
	upid := ""
	if err := e.client.Do(t.Context(), "POST", "/nodes/pve/qemu/320/snapshot", map[string][]string{"snapname": {"golden"}}, &upid); err != nil {
		t.Fatal(err)
	}
	u, err := pve.ParseUPID(upid)
	if err == nil {
		_, err = e.client.WaitTask(t.Context(), u)
	}
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot taken outside pvectl (its config now names a parent) is
	// no drift.
	e.mustRun(0, "plan", "-f", specFile, "--detailed-exitcode")
	inv := ansibletest.Inventory(t, tg)
	hv, _ := inv["_meta"].(map[string]any)["hostvars"].(map[string]any)
	vm, ok := hv["made-by-pvectl"].(map[string]any)
	if !ok {
		t.Fatalf("the inventory has no made-by-pvectl: %v", inv)
	}
	if vm["proxmox_memory"] != "1536" && vm["proxmox_memory"] != 1536.0 {
		t.Errorf("proxmox_memory: got %v", vm["proxmox_memory"])
	}
	if snaps, _ := vm["proxmox_snapshots"].([]any); len(snaps) != 1 || snaps[0] != "golden" {
		t.Errorf("proxmox_snapshots: got %v", vm["proxmox_snapshots"])
	}
	if tags, _ := vm["proxmox_tags_parsed"].([]any); len(tags) != 2 {
		t.Errorf("proxmox_tags_parsed: got %v", vm["proxmox_tags_parsed"])
	}
}

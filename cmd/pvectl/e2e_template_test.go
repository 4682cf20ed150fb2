package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// templateByName finds the QEMU template named name on node pve.
func (e *simEnv) templateByName(name string) (pve.ClusterResource, bool) {
	e.t.Helper()
	return e.qemuByName(name, true)
}

func (e *simEnv) describe(vmid int, desc string) {
	e.t.Helper()
	if err := e.client.UpdateGuest(context.Background(), pve.QEMU, "pve", vmid, url.Values{"description": {desc}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *simEnv) description(vmid int) string {
	e.t.Helper()
	cfg, err := e.client.QemuConfig(context.Background(), "pve", vmid)
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg.Get("description")
}

// markerPlaybook appends a line to dir/name.log on each run: a real,
// harmless change that counts the runs.
func markerPlaybook(dir, name, extra string) string {
	return fmt.Sprintf("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: mark %s%s\n      ansible.builtin.shell: echo ran >> %s\n",
		name, extra, filepath.Join(dir, name+".log"))
}

func runs(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".log"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "ran\n")
}

// loosePlan reads plan --json without refusing fields added since
// jsonPlan (provision).
func loosePlan(t *testing.T, s string) jsonPlan {
	t.Helper()
	var p jsonPlan
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, s)
	}
	return p
}

// jsonEvents splits apply --json output into events.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

// Issue 9's acceptance for templates, on the design's example 03 with the
// template provisioned over a real sshd on loopback: the template is baked
// once, both VMs are cloned from it in parallel, a second apply opens no
// SSH connection, editing its playbook rebuilds it on the next apply, and
// a user's note in any description survives every apply byte for byte.
func TestE2EGoldenTemplate(t *testing.T) {
	provisiontest.Require(t, "sshd", "ansible-playbook")
	sshd := provisiontest.StartSSHD(t)
	// Tasks long enough that clones made together overlap.
	env := startSimOpts(t, pvesim.Options{TaskDuration: 200 * time.Millisecond}, nil)
	env.extraEnv = append(env.extraEnv, "PROXMOX_SSH_PRIVATE_KEY="+sshd.KeyPath)
	out := t.TempDir()
	f := example(t, "03-golden-template.yaml", func(s string) string {
		s = strings.Replace(s, "  sshUser: ubuntu\n", fmt.Sprintf("  sshUser: %s\n  sshPort: %d\n  ip: %s\n", sshd.User, sshd.Port, sshd.Host), 1)
		return s
	})
	dir := filepath.Join(filepath.Dir(f), "playbooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, extra string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(markerPlaybook(out, name, extra)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docker", "")
	write("security-hardening", "")

	p := loosePlan(t, env.mustRun(0, "plan", "-f", f, "--json").stdout)
	acts := map[string]string{}
	for _, c := range p.Changes {
		acts[c.Address] = c.Action
	}
	if acts["Template/ubuntu-docker-base"] != "create" || acts["QemuVM/prod-game-01"] != "create" || acts["QemuVM/prod-game-02"] != "create" || acts["QemuVM/prod-game-00"] != "noop" {
		t.Fatalf("first plan: %v", acts)
	}

	// First apply: the bake runs each playbook once; the VMs wait for it.
	r := env.mustRun(0, "apply", "-f", f, "--auto-approve", "--json")
	if runs(t, out, "docker") != 1 || runs(t, out, "security-hardening") != 1 {
		t.Fatalf("after the first apply: docker ran %d, hardening %d times, want 1 each\n%s", runs(t, out, "docker"), runs(t, out, "security-hardening"), r.stdout)
	}
	tpl, ok := env.templateByName("ubuntu-docker-base")
	if !ok {
		t.Fatalf("no template ubuntu-docker-base after apply:\n%s", r.stdout)
	}
	// In parallel: both clone changes start once the template is done, and
	// both clone tasks are started before either ends.
	evs := jsonEvents(t, r.stdout)
	pos := func(typ, addr, progress, task string) int {
		for i, ev := range evs {
			if ev["type"] != typ || ev["address"] != addr || progress != "" && ev["progress"] != progress {
				continue
			}
			if tk, _ := ev["task"].(map[string]any); task != "" && (tk == nil || tk["type"] != task) {
				continue
			}
			return i
		}
		t.Fatalf("no %s %s %s %s event in:\n%s", typ, addr, progress, task, r.stdout)
		return -1
	}
	tplDone := pos("change_complete", "Template/ubuntu-docker-base", "", "")
	var starts, ends []int
	for _, vm := range []string{"QemuVM/prod-game-01", "QemuVM/prod-game-02"} {
		if s := pos("change_start", vm, "", ""); s < tplDone {
			t.Errorf("%s started (event %d) before its template was baked (event %d)", vm, s, tplDone)
		}
		starts = append(starts, pos("change_progress", vm, "task_started", "qmclone"))
		ends = append(ends, pos("change_progress", vm, "task_done", "qmclone"))
	}
	if starts[0] > ends[1] || starts[1] > ends[0] {
		t.Errorf("clone tasks did not overlap: started at events %v, done at %v", starts, ends)
	}
	for _, vm := range []string{"prod-game-01", "prod-game-02"} {
		cfg := env.vmConfig(vm)
		if cfg.Get("cores") != "4" || cfg.Get("memory") != "4096" {
			t.Errorf("%s: %v, want the template's cores and memory", vm, cfg)
		}
	}
	desc := env.description(tpl.VMID)
	if !strings.Contains(desc, "[pvectl-template: recipe=") || !strings.Contains(desc, "docker.yaml=") {
		t.Errorf("template description %q: want the recipe and provision blocks", desc)
	}

	// A user's note in each description (PVE itself strips trailing
	// whitespace from a VM's description: what it keeps is the note).
	note := "golden image — ask #ops   \n\tbefore rebuilding"
	env.describe(tpl.VMID, note+"\n"+desc)
	vm1, _ := env.vmByName("prod-game-01")
	env.describe(vm1.VMID, "  prod game 01:\n player data on disk 2 \n\n  ")
	vmNote := env.description(vm1.VMID)

	// Second apply: nothing to do, no SSH connection, the notes untouched.
	conns := sshd.Connections()
	r = env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if n := sshd.Connections() - conns; n != 0 {
		t.Errorf("second apply opened %d SSH connections, want 0\n%s", n, r.stdout)
	}
	if runs(t, out, "docker") != 1 {
		t.Errorf("second apply ran docker.yaml again")
	}
	if got := env.description(tpl.VMID); got != note+"\n"+desc {
		t.Errorf("template description after a no-op apply: %q, want %q", got, note+"\n"+desc)
	}
	if got := env.description(vm1.VMID); got != vmNote {
		t.Errorf("vm description after a no-op apply: %q, want %q", got, vmNote)
	}

	// Editing its playbook rebuilds the template; the VMs are left alone.
	write("docker", " again")
	p = loosePlan(t, env.mustRun(0, "plan", "-f", f, "--json").stdout)
	for _, c := range p.Changes {
		switch c.Address {
		case "Template/ubuntu-docker-base":
			if c.Action != "replace" || !strings.Contains(strings.Join(c.Reasons, "; "), "docker.yaml (changed)") {
				t.Errorf("after editing docker.yaml: %s %v, want a rebuild naming it", c.Action, c.Reasons)
			}
		default:
			if c.Action != "noop" {
				t.Errorf("after editing docker.yaml: %s %s %v, want noop", c.Address, c.Action, c.Reasons)
			}
		}
	}
	r = env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if runs(t, out, "docker") != 2 || runs(t, out, "security-hardening") != 2 {
		t.Errorf("rebuild: docker ran %d, hardening %d times in all, want 2 each (a rebuild runs every file)\n%s", runs(t, out, "docker"), runs(t, out, "security-hardening"), r.stdout)
	}
	again, ok := env.templateByName("ubuntu-docker-base")
	if !ok || again.VMID != tpl.VMID {
		t.Fatalf("after the rebuild: template %v, want it rebuilt as vmid %d", again, tpl.VMID)
	}
	if got := env.description(tpl.VMID); !strings.HasPrefix(got, note+"\n[pvectl-") {
		t.Errorf("rebuilt template's description %q: want the user's note first, byte for byte", got)
	}
	if got := env.description(vm1.VMID); got != vmNote {
		t.Errorf("vm description after the rebuild: %q, want %q", got, vmNote)
	}
	if r := env.mustRun(0, "plan", "-f", f, "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after the rebuild: exit %d\n%s", r.code, r.stdout)
	}

	// A playbook that fails fails the bake with its output; the VM it
	// left is no template, and the run after the fix bakes it again.
	if err := os.WriteFile(filepath.Join(dir, "docker.yaml"), []byte("- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.fail:\n        msg: boom-docker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = env.run("apply", "-f", f, "--auto-approve")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "boom-docker") {
		t.Fatalf("failing playbook: exit %d, want 1 with its output\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, ok := env.templateByName("ubuntu-docker-base"); ok {
		t.Errorf("a failed bake left a template")
	}
	write("docker", " fixed")
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if again, ok := env.templateByName("ubuntu-docker-base"); !ok || again.VMID != tpl.VMID {
		t.Errorf("after the fix: template %v, want vmid %d", again, tpl.VMID)
	}
	if r := env.mustRun(0, "plan", "-f", f, "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after the fix: exit %d\n%s", r.code, r.stdout)
	}
}

// A template that linked clones hold cannot be rebuilt: plan refuses,
// naming the VMs, before anything is destroyed.
func TestE2ETemplateLinkedCloneRefusal(t *testing.T) {
	env := startSim(t)
	spec := `kind: Storage
name: golden-dir
spec: {type: dir, path: /srv/golden, content: images}
---
kind: Template
name: golden
spec:
  baseImage: "9000"
  storage: golden-dir
  cores: 2
---
kind: QemuVM
name: linked-a
spec:
  fromTemplate: golden
  full: false
---
kind: QemuVM
name: linked-b
spec:
  fromTemplate: golden
  full: false
`
	f := writeSpec(t, "golden.yaml", spec)
	env.mustRun(0, "apply", "-f", f, "--auto-approve")
	if err := os.WriteFile(f, []byte(strings.Replace(spec, "cores: 2", "cores: 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(1, "plan", "-f", f)
	containsAll(t, "plan stderr", r.stderr, "Template/golden: cannot rebuild template", "(linked-a)", "(linked-b)", "destroy them first")
	if _, ok := env.templateByName("golden"); !ok {
		t.Errorf("the template is gone after a refused plan")
	}
	// destroy takes the clones first, then the template.
	env.mustRun(0, "destroy", "-f", f, "--auto-approve")
	if _, ok := env.templateByName("golden"); ok {
		t.Errorf("the template is still there after destroy")
	}
}

package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// provRig is one provisioning e2e setup: the simulator, a real sshd on
// 127.0.0.x standing in for the guests, the spec directory with its
// playbooks, and the directory the playbooks change (the "machine").
type provRig struct {
	*simEnv
	sshd *provisiontest.SSHD
	dir  string // the spec file's directory
	out  string // where the playbooks write runs.log
	spec string // the spec file
}

func newProvRig(t *testing.T, env *simEnv, tools ...string) *provRig {
	t.Helper()
	provisiontest.Require(t, append([]string{"sshd", "ssh"}, tools...)...)
	r := &provRig{simEnv: env, sshd: provisiontest.StartSSHD(t), dir: t.TempDir(), out: t.TempDir()}
	r.extraEnv = append(r.extraEnv, "PROXMOX_SSH_PRIVATE_KEY="+r.sshd.KeyPath)
	return r
}

// playbook writes an Ansible playbook that appends word to runs.log, or
// fails printing word.
func (r *provRig) playbook(name, word string, fail bool) {
	r.t.Helper()
	task := fmt.Sprintf("ansible.builtin.shell: echo %s >> %s/runs.log", word, r.out)
	if fail {
		task = fmt.Sprintf("ansible.builtin.fail:\n        msg: %q", word)
	}
	r.write(name, fmt.Sprintf("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: %s\n      %s\n", word, task))
}

func (r *provRig) write(name, text string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// runs is what the playbooks did so far, one word a line.
func (r *provRig) runs() string {
	b, _ := os.ReadFile(filepath.Join(r.out, "runs.log"))
	return string(b)
}

// stagingSpec is example 02 with its addresses on loopback (the app VM at
// the sshd), sshPort and sshUser set to the sshd's, and the bridge and
// network commit its VLAN needs.
func (r *provRig) stagingSpec() {
	r.t.Helper()
	s := example(r.t, "02-staging-stack.yaml", func(s string) string {
		s = strings.ReplaceAll(s, "ip: 10.8.10.50", "ip: 127.0.0.250")
		s = strings.ReplaceAll(s, "ip: 10.8.10.51", "ip: "+r.sshd.Host)
		s = strings.ReplaceAll(s, "gateway: 10.8.10.254", fmt.Sprintf("gateway: 127.0.0.1\n  sshPort: %d\n  sshUser: %s", r.sshd.Port, r.sshd.User))
		return s + "\n---\nkind: LinuxBridge\nname: vmbr1\nspec:\n  bridge_vlan_aware: true\n---\nkind: NetworkApply\nname: pve\n"
	})
	data, err := os.ReadFile(s)
	if err != nil {
		r.t.Fatal(err)
	}
	r.spec = filepath.Join(r.dir, "staging.yaml")
	r.write("staging.yaml", string(data))
}

func (r *provRig) description(vm string) string {
	return r.vmConfig(vm).Get("description")
}

func (r *provRig) setDescription(vm, desc string) {
	r.t.Helper()
	row, _ := r.vmByName(vm)
	if err := r.client.UpdateQemu(context.Background(), row.Node, row.VMID, url.Values{"description": {desc}}); err != nil {
		r.t.Fatal(err)
	}
}

// noSecrets fails when output holds the private key (any line of its
// base64) or the key's passphrase-free PEM header.
func (r *provRig) noSecrets(what, output string) {
	r.t.Helper()
	for _, line := range strings.Split(string(r.sshd.KeyPEM), "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(output, line) {
			r.t.Errorf("%s shows a line of the private key", what)
		}
	}
	if strings.Contains(output, "PRIVATE KEY") {
		r.t.Errorf("%s shows a private key", what)
	}
}

var blockRE = regexp.MustCompile(`\[pvectl-provision: ([^\]]*)\]`)

// recorded is the hash the VM's description records for file.
func (r *provRig) recorded(vm, file string) string {
	m := blockRE.FindStringSubmatch(r.description(vm))
	if m == nil {
		return ""
	}
	for _, e := range strings.Split(m[1], ",") {
		if n, h, _ := strings.Cut(e, "="); n == file {
			return h
		}
	}
	return ""
}

// TestE2EProvisionStagingStack is issue 9's acceptance for QemuVM
// provisioning against the simulator and a real sshd and ansible-playbook:
// the first apply runs every file once; a second opens no SSH connection;
// an edited playbook runs alone; a failing one exits non-zero with its
// output and keeps its old hash; a rerun after the fix converges; the
// user's note survives byte for byte; a new host key fails closed naming
// both fingerprints and runs nothing; no key in any output.
func TestE2EProvisionStagingStack(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook")
	r.playbook("playbooks/common.yaml", "common-1", false)
	r.playbook("playbooks/app.yaml", "app-1", false)
	r.stagingSpec()
	const app = "ix-sto1-app01"
	var outputs []string

	// The plan says what will run and why, without SSH.
	res := r.mustRun(0, "plan", "-f", r.spec)
	outputs = append(outputs, res.stdout+res.stderr)
	containsAll(t, "plan", res.stdout, "> run playbooks/common.yaml (new)", "> run playbooks/app.yaml (new)")
	if n := r.sshd.Connections(); n != 0 {
		t.Errorf("plan opened %d ssh connections, want 0", n)
	}

	res = r.mustRun(0, "apply", "-f", r.spec, "--auto-approve")
	outputs = append(outputs, res.stdout+res.stderr)
	if got := r.runs(); got != "common-1\napp-1\n" {
		t.Errorf("first apply ran %q, want common-1 then app-1", got)
	}
	if !strings.Contains(res.stdout, "QemuVM/"+app+": | ") {
		t.Errorf("apply output lacks the playbooks' output prefixed with the resource:\n%s", res.stdout)
	}
	desc := r.description(app)
	if !strings.Contains(desc, "[pvectl-provision: playbooks/common.yaml=") || !strings.Contains(desc, "[pvectl-hostkey: ssh-ed25519 SHA256:") {
		t.Fatalf("description after the first apply: %q", desc)
	}
	// A user's note, with characters that need care, stays byte for byte.
	const note = "Web frontend — ask #team-web before touching.\n  indented, trailing space \n"
	r.setDescription(app, note+desc)

	// Nothing changed: the plan is clean and apply opens no SSH connection.
	conns := r.sshd.Connections()
	r.mustRun(0, "plan", "-f", r.spec, "--detailed-exitcode")
	res = r.mustRun(0, "apply", "-f", r.spec, "--auto-approve")
	outputs = append(outputs, res.stdout+res.stderr)
	if n := r.sshd.Connections(); n != conns {
		t.Errorf("second apply opened %d ssh connections, want 0", n-conns)
	}
	if got := r.runs(); got != "common-1\napp-1\n" {
		t.Errorf("second apply ran files: %q", got)
	}

	// Editing one playbook runs only it; plan --json carries it.
	r.playbook("playbooks/app.yaml", "app-2", false)
	res = r.mustRun(2, "plan", "-f", r.spec, "--json", "--detailed-exitcode")
	var plan struct {
		Changes []struct {
			Address   string `json:"address"`
			Action    string `json:"action"`
			Provision []struct {
				File, Reason, Hash, Recorded string
			} `json:"provision"`
		} `json:"changes"`
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, res.stdout)
	}
	found := false
	for _, c := range plan.Changes {
		if c.Address != "QemuVM/"+app {
			continue
		}
		found = true
		if c.Action != "provision" || len(c.Provision) != 1 || c.Provision[0].File != "playbooks/app.yaml" || c.Provision[0].Reason != "changed" ||
			c.Provision[0].Recorded != r.recorded(app, "playbooks/app.yaml") || len(c.Provision[0].Hash) != 12 {
			t.Errorf("plan --json change of %s: %+v", app, c)
		}
	}
	if !found || plan.Summary["provision"] != 1 {
		t.Errorf("plan --json: %s", res.stdout)
	}
	res = r.mustRun(0, "apply", "-f", r.spec, "--auto-approve")
	outputs = append(outputs, res.stdout+res.stderr)
	if got := r.runs(); got != "common-1\napp-1\napp-2\n" {
		t.Errorf("after editing app.yaml ran %q, want only app-2 more", got)
	}
	if d := r.description(app); !strings.HasPrefix(d, note) {
		t.Errorf("the user's note did not survive: %q", d)
	}

	// A failing playbook: exit non-zero with its output, hash not written.
	before := r.recorded(app, "playbooks/app.yaml")
	r.playbook("playbooks/app.yaml", "app-broken-on-purpose", true)
	res = r.mustRun(1, "apply", "-f", r.spec, "--auto-approve")
	outputs = append(outputs, res.stdout+res.stderr)
	// Its output is printed once, as it runs; the failure line and the
	// summary name the file and its exit status, not the output again.
	if n := strings.Count(res.stdout, `"msg": "app-broken-on-purpose"`); n != 1 || !strings.Contains(res.stdout, `| fatal: [`) {
		t.Errorf("the playbook's output is printed %d times, want once as it runs:\nstdout:\n%s\nstderr:\n%s", n, res.stdout, res.stderr)
	}
	if _, summary, _ := strings.Cut(res.stdout, "Apply incomplete"); !strings.Contains(summary, "provision file playbooks/app.yaml failed: exit status 2 (its output is above)") {
		t.Errorf("failed apply's summary does not name the file and its exit status:\nstdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}
	if got := r.recorded(app, "playbooks/app.yaml"); got != before {
		t.Errorf("failed playbook's hash was written: %s, want still %s", got, before)
	}
	// Fixed: the rerun converges, and the next plan is clean.
	r.playbook("playbooks/app.yaml", "app-3", false)
	res = r.mustRun(0, "apply", "-f", r.spec, "--auto-approve")
	outputs = append(outputs, res.stdout+res.stderr)
	if got := r.runs(); got != "common-1\napp-1\napp-2\napp-3\n" {
		t.Errorf("after the fix ran %q", got)
	}
	r.mustRun(0, "plan", "-f", r.spec, "--detailed-exitcode")

	// The guest's host key changes: fail closed, both fingerprints, nothing ran.
	pinned := regexp.MustCompile(`\[pvectl-hostkey: ([^\]]*)\]`).FindStringSubmatch(r.description(app))[1]
	r.sshd.RotateHostKey()
	r.playbook("playbooks/common.yaml", "common-2", false)
	res = r.mustRun(1, "apply", "-f", r.spec, "--auto-approve", "--debug")
	outputs = append(outputs, res.stdout+res.stderr)
	_, oldFP, _ := strings.Cut(pinned, " ")
	newFP := fingerprintOf(r.sshd)
	for _, want := range []string{"host key changed", oldFP, newFP} {
		if _, summary, _ := strings.Cut(res.stdout, "Apply incomplete"); !strings.Contains(summary, want) {
			t.Errorf("host key change: error lacks %q:\n%s", want, res.stdout)
		}
	}
	if got := r.runs(); strings.Contains(got, "common-2") {
		t.Errorf("a file ran against a changed host key: %q", got)
	}
	if d := r.description(app); !strings.HasPrefix(d, note) || !strings.Contains(d, pinned) {
		t.Errorf("description after the refused run: %q", d)
	}

	for i, out := range outputs {
		r.noSecrets(fmt.Sprintf("output %d", i), out)
	}
}

// fingerprintOf is the sshd's current host key as ssh-keygen -l shows it.
func fingerprintOf(s *provisiontest.SSHD) string {
	return ssh.FingerprintSHA256(s.HostKey)
}

// TestE2EProvisionAddresses: a VM without ip is provisioned at the
// address its DNS record gives, another at the guest agent's DHCP lease
// (the simulator's --dhcp-range); an unreachable one fails at its
// provisionTimeout naming the VM and the address, and the VM it
// replaces is left alone, while a replace that provisioned destroys its
// old VM.
func TestE2EProvisionAddresses(t *testing.T) {
	sshd := func() *provisiontest.SSHD {
		provisiontest.Require(t, "sshd", "ssh", "ansible-playbook")
		return provisiontest.StartSSHD(t)
	}()
	env := startSimOpts(t, pvesim.Options{TaskDuration: 30 * time.Millisecond, DHCPRange: netip.MustParsePrefix(sshd.Host + "/32")}, nil)
	r := &provRig{simEnv: env, sshd: sshd, dir: t.TempDir(), out: t.TempDir()}
	dns := provisiontest.StartDNS(t, map[string]string{"dns-vm.lab.test": sshd.Host})
	closed := freeLoopbackPort(t, sshd.Host)
	r.extraEnv = append(r.extraEnv, "PROXMOX_SSH_PRIVATE_KEY="+sshd.KeyPath,
		"PROXMOX_DNS_DOMAIN=lab.test", "PROXMOX_DNS_SERVERS="+dns.Addr, "PROXMOX_SSH_USER="+sshd.User)
	r.write("site.yaml", fmt.Sprintf("- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.shell: echo {{ inventory_hostname }} >> %s/runs.log\n", r.out))

	// Old VMs that the new ones replace.
	r.write("old.yaml", "kind: QemuVM\nname: old-good\nspec:\n  memory: 512\n---\nkind: QemuVM\nname: old-dead\nspec:\n  memory: 512\n")
	r.mustRun(0, "apply", "-f", filepath.Join(r.dir, "old.yaml"), "--auto-approve")

	vm := func(name, extra string) string {
		return fmt.Sprintf("---\nkind: QemuVM\nname: %s\nspec:\n  image: \"9000\"\n  sshPort: %d\n  provision: site.yaml\n%s", name, sshd.Port, extra)
	}
	spec := vm("dns-vm", "  replace: old-good\n") + vm("agent-vm", "") +
		strings.Replace(vm("dead-vm", fmt.Sprintf("  ip: %s\n  provisionTimeout: 2s\n  replace: old-dead\n", sshd.Host)), fmt.Sprintf("sshPort: %d", sshd.Port), fmt.Sprintf("sshPort: %d", closed), 1)
	r.write("vms.yaml", spec)
	res := r.mustRun(1, "apply", "-f", filepath.Join(r.dir, "vms.yaml"), "--auto-approve")

	runs := r.runs()
	if strings.Count(runs, sshd.Host+"\n") != 2 {
		t.Errorf("runs %q, want the playbook once on each of dns-vm and agent-vm, at %s", runs, sshd.Host)
	}
	if got := r.vmConfig("dns-vm").Get("ipconfig0"); !strings.HasPrefix(got, "ip="+sshd.Host+"/") {
		t.Errorf("dns-vm's ipconfig0 %q, want its DNS address", got)
	}
	if got := r.vmConfig("agent-vm").Get("ipconfig0"); got != "ip=dhcp" {
		t.Errorf("agent-vm's ipconfig0 %q, want dhcp (found through the guest agent)", got)
	}
	_, summary, _ := strings.Cut(res.stdout, "Apply incomplete")
	// What was done before it failed: the VM was created, the one it
	// replaces kept.
	for _, want := range []string{"QemuVM/dead-vm", "; provisioning failed:", fmt.Sprintf("%s:%d", sshd.Host, closed), "provisionTimeout"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the unreachable VM's error lacks %q:\n%s", want, res.stdout)
		}
	}
	if _, ok := r.vmByName("old-good"); ok {
		t.Error("old-good is still there after dns-vm, which replaces it, was provisioned")
	}
	if _, ok := r.vmByName("old-dead"); !ok {
		t.Error("old-dead was destroyed although dead-vm, which replaces it, was never provisioned")
	} else if old, _ := r.vmByName("old-dead"); !regexp.MustCompile(fmt.Sprintf(`created vm \d+ on pve, kept vm %d that it replaces; provisioning failed`, old.VMID)).MatchString(summary) {
		t.Errorf("the unreachable VM's error does not say it was created and old-dead kept:\n%s", summary)
	}
	for _, name := range []string{"dns-vm", "agent-vm"} {
		if r.recorded(name, "site.yaml") == "" {
			t.Errorf("%s has no hash recorded: %q", name, r.description(name))
		}
	}
	r.noSecrets("apply", res.stdout+res.stderr)

	// Destroy never provisions (nor waits for SSH).
	conns := sshd.Connections()
	r.mustRun(0, "destroy", "-f", filepath.Join(r.dir, "vms.yaml"), "--auto-approve")
	if sshd.Connections() != conns {
		t.Error("destroy opened an ssh connection")
	}
}

// freeLoopbackPort is a port on host where nothing listens.
func freeLoopbackPort(t *testing.T, host string) int {
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestE2EProvisionKeyNeverShown: a VM's own sshPrivateKey, the PEM from
// ${VAR}, logs in, and no line of it shows in validate, plan (text, JSON,
// the saved file), apply or --debug; a saved plan made with the
// connection's key from PROXMOX_SSH_PRIVATE_KEY applies and provisions.
func TestE2EProvisionKeyNeverShown(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook")
	r.extraEnv = []string{"APP_KEY=" + string(r.sshd.KeyPEM)} // no PROXMOX_SSH_PRIVATE_KEY: the spec's key must do
	r.playbook("site.yaml", "keyed", false)
	vm := func(name, extra string) string {
		return fmt.Sprintf("---\nkind: QemuVM\nname: %s\nspec:\n  image: \"9000\"\n  ip: %s\n  sshPort: %d\n  sshUser: %s\n  provision: [site.yaml]\n%s",
			name, r.sshd.Host, r.sshd.Port, r.sshd.User, extra)
	}
	r.write("key.yaml", vm("keyed", "  sshPrivateKey: ${APP_KEY}\n"))
	spec := filepath.Join(r.dir, "key.yaml")
	planFile := filepath.Join(r.dir, "keyed.plan")
	var outs []string
	for _, args := range [][]string{
		{"validate", "-f", spec},
		{"plan", "-f", spec},
		{"plan", "-f", spec, "--json"},
		{"plan", "-f", spec, "--out", planFile},
		{"apply", "-f", spec, "--auto-approve", "--debug"},
	} {
		res := r.mustRun(0, args...)
		outs = append(outs, res.stdout+res.stderr)
	}
	saved, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(saved))
	for i, out := range outs {
		r.noSecrets(fmt.Sprintf("output %d", i), out)
	}
	if got := r.runs(); got != "keyed\n" {
		t.Fatalf("the VM's own key did not provision: runs %q", got)
	}

	// A saved plan: the connection's key is read again from the variable.
	r.extraEnv = []string{"PROXMOX_SSH_PRIVATE_KEY=" + string(r.sshd.KeyPEM)}
	r.playbook("other.yaml", "from-plan-file", false)
	r.write("saved.yaml", strings.Replace(vm("saved", ""), "[site.yaml]", "[other.yaml]", 1))
	planFile = filepath.Join(r.dir, "saved.plan")
	r.mustRun(0, "plan", "-f", filepath.Join(r.dir, "saved.yaml"), "--out", planFile)
	res := r.mustRun(0, "apply", planFile)
	saved, _ = os.ReadFile(planFile)
	r.noSecrets("saved plan", string(saved))
	r.noSecrets("apply of the saved plan", res.stdout+res.stderr)
	if got := r.runs(); got != "keyed\nfrom-plan-file\n" {
		t.Errorf("apply of the saved plan: runs %q", got)
	}
}

// TestE2EProvisionPuppetAndAbsent: a Puppet manifest and a playbook run
// in list order through the planner (the manifest over the SSH
// connection, puppet apply on the "guest"); editing the manifest reruns
// it alone; state: absent destroys without provisioning.
func TestE2EProvisionPuppetAndAbsent(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook", "puppet")
	r.write("site.pp", fmt.Sprintf("exec { 'record site-1':\n  command => \"/bin/sh -c 'echo site-1 >> %s/runs.log'\",\n}\n", r.out))
	r.playbook("app.yml", "app-1", false)
	doc := func(state string) string {
		return fmt.Sprintf("kind: QemuVM\nname: pp\n%sspec:\n  image: \"9000\"\n  ip: %s\n  sshPort: %d\n  sshUser: %s\n  provision: [site.pp, app.yml]\n",
			state, r.sshd.Host, r.sshd.Port, r.sshd.User)
	}
	r.write("pp.yaml", doc(""))
	spec := filepath.Join(r.dir, "pp.yaml")
	r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	if got := r.runs(); got != "site-1\napp-1\n" {
		t.Fatalf("first apply ran %q, want site-1 then app-1", got)
	}
	r.write("site.pp", fmt.Sprintf("exec { 'record site-2':\n  command => \"/bin/sh -c 'echo site-2 >> %s/runs.log'\",\n}\n", r.out))
	res := r.mustRun(0, "plan", "-f", spec)
	if !strings.Contains(res.stdout, "> run site.pp (changed)") || strings.Contains(res.stdout, "app.yml") {
		t.Errorf("plan after editing the manifest:\n%s", res.stdout)
	}
	r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	if got := r.runs(); got != "site-1\napp-1\nsite-2\n" {
		t.Errorf("after editing site.pp ran %q, want site-2 alone", got)
	}

	// state: absent with a changed file: destroyed, nothing runs.
	r.playbook("app.yml", "app-2", false)
	conns := r.sshd.Connections()
	r.write("pp.yaml", doc("state: absent\n"))
	res = r.mustRun(0, "plan", "-f", spec)
	if strings.Contains(res.stdout, "> run") {
		t.Errorf("plan of state: absent provisions:\n%s", res.stdout)
	}
	r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	if _, ok := r.vmByName("pp"); ok {
		t.Error("state: absent left the VM")
	}
	if r.sshd.Connections() != conns || strings.Contains(r.runs(), "app-2") {
		t.Error("state: absent provisioned")
	}
}

// TestE2EProvisionDescriptionEditedMeanwhile: a description edited by
// someone else while a playbook runs is never overwritten. The write of
// the file's hash carries the digest of the config it follows, PVE
// refuses it, apply fails saying so, and the rerun runs the file again
// and keeps the other edit.
func TestE2EProvisionDescriptionEditedMeanwhile(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook")
	started, proceed := filepath.Join(r.out, "started"), filepath.Join(r.out, "proceed")
	// The playbook says it started, then waits (at most 60 s) for the
	// test to edit the description.
	r.write("slow.yaml", fmt.Sprintf("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: wait\n      ansible.builtin.shell: touch %s; for i in $(seq 600); do [ -f %s ] && break; sleep 0.1; done; echo slow >> %s/runs.log\n",
		started, proceed, r.out))
	r.write("vm.yaml", fmt.Sprintf("kind: QemuVM\nname: ed\nspec:\n  image: \"9000\"\n  ip: %s\n  sshPort: %d\n  sshUser: %s\n  provision: [slow.yaml]\n",
		r.sshd.Host, r.sshd.Port, r.sshd.User))
	spec := filepath.Join(r.dir, "vm.yaml")

	edited := make(chan struct{})
	go func() {
		defer close(edited)
		for i := 0; i < 1200; i++ { // 120 s at most
			if _, err := os.Stat(started); err == nil {
				r.setDescription("ed", "edited by hand")
				os.WriteFile(proceed, nil, 0o644)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	res := r.run("apply", "-f", spec, "--auto-approve")
	<-edited
	if res.code == 0 || !strings.Contains(res.stdout+res.stderr, "changed while it was being provisioned (digest)") {
		t.Fatalf("apply while the description was edited: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if d := r.description("ed"); d != "edited by hand" {
		t.Fatalf("description after the refused write: %q, want the hand edit kept", d)
	}

	// The rerun runs the file again (its hash was not recorded) and keeps
	// the hand edit byte for byte, the block after it.
	os.WriteFile(proceed, nil, 0o644)
	r.mustRun(0, "apply", "-f", spec, "--auto-approve")
	if got := r.runs(); got != "slow\nslow\n" {
		t.Errorf("runs %q, want the file run twice", got)
	}
	if d := r.description("ed"); !strings.HasPrefix(d, "edited by hand") || r.recorded("ed", "slow.yaml") == "" {
		t.Errorf("description after the rerun: %q", d)
	}
}

// TestE2EProvisionPlanWithoutKey: a plan that will provision, made where
// no SSH key is to be had, says so (a notice: plan-only jobs may lack the
// key) instead of leaving it to apply after the approval; with a key it
// says nothing. The plan opens no SSH either way.
func TestE2EProvisionPlanWithoutKey(t *testing.T) {
	env := startSim(t)
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("site.yaml", "- hosts: all\n  gather_facts: false\n  tasks: []\n")
	write("vm.yaml", "kind: QemuVM\nname: nokey\nspec:\n  image: \"9000\"\n  ip: 127.0.0.250\n  provision: [site.yaml]\n")
	spec := filepath.Join(dir, "vm.yaml")
	const notice = "warning: provisioning will fail here: no ssh key"

	res := env.mustRun(0, "plan", "-f", spec)
	if !strings.Contains(res.stdout, notice) {
		t.Errorf("plan without a key lacks %q:\n%s", notice, res.stdout)
	}

	// A key given as base64 of its PEM (as some CI secret stores hold
	// it) is neither PEM nor a path: the notice says so without the
	// value, in the output and in the saved plan.
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(block))
	saved := filepath.Join(dir, "plan.json")
	withEnv := env.extraEnv
	env.extraEnv = append(withEnv, "PROXMOX_SSH_PRIVATE_KEY="+encoded)
	res = env.mustRun(0, "plan", "-f", spec, "--out", saved)
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.stdout, "warning: provisioning will fail here") || !strings.Contains(string(data), "warning: provisioning will fail here") {
		t.Errorf("plan with an unusable key lacks the notice:\n%s", res.stdout)
	}
	for what, text := range map[string]string{"plan output": res.stdout + res.stderr, "saved plan": string(data)} {
		if strings.Contains(text, encoded[:40]) {
			t.Errorf("%s shows the key", what)
		}
	}
	env.extraEnv = withEnv

	_, priv, err = ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err = ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	env.extraEnv = append(env.extraEnv, "PROXMOX_SSH_PRIVATE_KEY="+keyPath)
	res = env.mustRun(0, "plan", "-f", spec)
	if strings.Contains(res.stdout, "warning: provisioning") || !strings.Contains(res.stdout, "> run site.yaml (new)") {
		t.Errorf("plan with a key:\n%s", res.stdout)
	}
}

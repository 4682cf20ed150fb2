package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EProvisionEnvironmentNoSecret is issue 17's acceptance: a
// playbook that prints its environment (on the controller) shows no
// Connection secret, whatever variable it came from, no private key and
// none of pvectl's configuration; only the documented allow-list and
// pvectl's own agent.
func TestE2EProvisionEnvironmentNoSecret(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook")
	r.extraEnv = []string{
		"CI_PVE_SECRET=" + e2eTokenSecret, // the Connection's ${CI_PVE_SECRET}
		"PROXMOX_SSH_PRIVATE_KEY=" + string(r.sshd.KeyPEM),
		"SOME_OTHER_SETTING=not-for-playbooks",
		"LC_ALL=C.UTF-8",
	}
	r.write("env.yaml", `- hosts: all
  gather_facts: false
  tasks:
    - delegate_to: localhost
      ansible.builtin.shell: env > `+r.out+`/env.txt
`)
	r.write("vm.yaml", fmt.Sprintf(`kind: Connection
name: ci
spec:
  url: %s
  tokenId: %s
  tokenSecret: ${CI_PVE_SECRET}
---
kind: QemuVM
name: envvm
connection: ci
spec:
  image: "9000"
  ip: %s
  sshPort: %d
  sshUser: %s
  provision: [env.yaml]
`, r.url, e2eTokenID, r.sshd.Host, r.sshd.Port, r.sshd.User))
	res := r.mustRun(0, "apply", "-f", filepath.Join(r.dir, "vm.yaml"), "--auto-approve")
	r.noSecrets("apply", res.stdout+res.stderr)
	data, err := os.ReadFile(filepath.Join(r.out, "env.txt"))
	if err != nil {
		t.Fatalf("the playbook did not run: %v\n%s", err, res.stdout)
	}
	env := string(data)
	r.noSecrets("the playbook's environment", env)
	for _, bad := range []string{e2eTokenSecret, "CI_PVE_SECRET", "PROXMOX_", "SOME_OTHER_SETTING"} {
		if strings.Contains(env, bad) {
			t.Errorf("the playbook's environment holds %q:\n%s", bad, env)
		}
	}
	containsAll(t, "the playbook's environment", env, "PATH=", "LC_ALL=C.UTF-8", "SSH_AUTH_SOCK=", "/agent.sock")
}

// TestE2EProvisionSIGKILLLeavesNoKey is issue 17's acceptance: pvectl
// killed (SIGKILL: no deferred cleanup runs) while a playbook runs leaves
// no copy of the private key in TMPDIR, and the next run removes the dead
// run's directory (its agent socket and known_hosts).
func TestE2EProvisionSIGKILLLeavesNoKey(t *testing.T) {
	r := newProvRig(t, startSim(t), "ansible-playbook")
	tmp, err := os.MkdirTemp("", "pvectl-kill-") // short: the agent socket's path must fit sun_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	r.extraEnv = append(r.extraEnv, "TMPDIR="+tmp, "PROXMOX_SSH_USER="+r.sshd.User)
	started := filepath.Join(r.out, "started")
	r.write("slow.yaml", `- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.shell: touch `+started+`; sleep 20
`)
	r.write("vm.yaml", fmt.Sprintf("kind: QemuVM\nname: slow\nspec:\n  image: \"9000\"\n  ip: %s\n  sshPort: %d\n  provision: [slow.yaml]\n", r.sshd.Host, r.sshd.Port))
	run := r.start(nil, "apply", "-f", filepath.Join(r.dir, "vm.yaml"), "--auto-approve")
	for i := 0; ; i++ {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case <-run.done:
			t.Fatalf("apply ended before the playbook started:\n%s\n%s", run.out, run.err)
		case <-time.After(50 * time.Millisecond):
		}
		if i > 1200 {
			t.Fatal("the playbook did not start within a minute")
		}
	}
	run.signal(syscall.SIGKILL)
	<-run.done
	dirs, _ := filepath.Glob(filepath.Join(tmp, "pvectl-provision-*"))
	if len(dirs) == 0 {
		t.Errorf("no run directory in TMPDIR after SIGKILL: the test did not catch pvectl provisioning")
	}
	assertNoKeyMaterial(t, tmp, r.sshd.KeyPEM)

	// The next run (the playbook, now quick, runs again: its hash was
	// never recorded) removes the dead run's directory.
	r.write("slow.yaml", "- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.shell: echo ok\n")
	// (The killed run's lock is stale: its holder is gone.)
	r.mustRun(0, "apply", "-f", filepath.Join(r.dir, "vm.yaml"), "--auto-approve", "--lock=false")
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s: the killed run's directory is still there after the next run", d)
		}
	}
	assertNoKeyMaterial(t, tmp, r.sshd.KeyPEM)
}

// assertNoKeyMaterial fails when a file under dir holds a line of the key
// or a PEM private key.
func assertNoKeyMaterial(t *testing.T, dir string, pem []byte) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if strings.Contains(string(b), "PRIVATE KEY") {
			t.Errorf("%s holds a private key", p)
		}
		for _, l := range strings.Split(string(pem), "\n") {
			if len(l) >= 16 && !strings.HasPrefix(l, "-----") && strings.Contains(string(b), l) {
				t.Errorf("%s holds private key material", p)
				break
			}
		}
		return nil
	})
}

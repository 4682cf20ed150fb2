package provision_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/provision"
)

// TestRunPlaybookEnvironment: a playbook that prints its environment (on
// the controller, where lookup('env') and local tasks read it) sees the
// allow-list and pvectl's own agent, never the Connection's secrets (by
// name or by value), the user's ssh-agent or anything else of pvectl's
// environment; no key file is handed to it.
func TestRunPlaybookEnvironment(t *testing.T) {
	t.Parallel()
	r := newRig(t, "ansible-playbook")
	const tokenSecret = "5e2f0c1a-token-secret-of-the-connection"
	r.write("env.yaml", `- hosts: all
  gather_facts: false
  tasks:
    - name: print the controller's environment
      delegate_to: localhost
      ansible.builtin.shell: env > `+r.out+`/env.txt; echo "$SSH_AUTH_SOCK" > `+r.out+`/sock.txt; ls -la "$(dirname "$SSH_AUTH_SOCK")" > `+r.out+`/dir.txt
`)
	o := r.options()
	o.Env = append(testEnv(),
		"PROXMOX_TOKEN_SECRET="+tokenSecret,
		"PROXMOX_SSH_PRIVATE_KEY="+string(r.sshd.KeyPEM),
		"PROXMOX_TOKEN_ID=root@pam!ci",
		"MY_PVE_SECRET="+tokenSecret, // a Connection's ${MY_PVE_SECRET}
		"SSH_AUTH_SOCK=/tmp/the-users-own-agent.sock",
		"UNRELATED_SETTING=kept-out",
		"LC_ALL=C.UTF-8",
		"ANSIBLE_NOCOLOR=1",
		"EXTRA_WANTED=passed-on-request",
		provision.EnvPass+"=EXTRA_WANTED,MY_PVE_SECRET",
	)
	o.Secrets = []string{tokenSecret}
	res, err := provision.Run(t.Context(), r.target("env.yaml"), o)
	if err != nil || len(res.Ran) != 1 {
		t.Fatalf("run: %v (ran %v)\n%s", err, ran(res), strings.Join(r.output, "\n"))
	}
	data, err := os.ReadFile(filepath.Join(r.out, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(data)
	for _, bad := range []string{tokenSecret, "PROXMOX_", "MY_PVE_SECRET", "the-users-own-agent", "UNRELATED_SETTING", "PRIVATE KEY"} {
		if strings.Contains(env, bad) {
			t.Errorf("the playbook's environment holds %q:\n%s", bad, env)
		}
	}
	for _, want := range []string{"PATH=", "HOME=", "LC_ALL=C.UTF-8", "ANSIBLE_NOCOLOR=1", "EXTRA_WANTED=passed-on-request"} {
		if !strings.Contains(env, want) {
			t.Errorf("the playbook's environment lacks %q:\n%s", want, env)
		}
	}
	sock, _ := os.ReadFile(filepath.Join(r.out, "sock.txt"))
	if !strings.HasPrefix(strings.TrimSpace(string(sock)), o.TempDir) || !strings.HasSuffix(strings.TrimSpace(string(sock)), "/agent.sock") {
		t.Errorf("SSH_AUTH_SOCK %q: want pvectl's own agent in %s", sock, o.TempDir)
	}
	// What the run's directory held while the playbook ran: no key file.
	listing, _ := os.ReadFile(filepath.Join(r.out, "dir.txt"))
	for _, line := range strings.Split(string(listing), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "total" {
			continue
		}
		if name := f[len(f)-1]; !slices.Contains([]string{".", "..", "agent.sock", "known_hosts", "id.pub", "cm"}, name) {
			t.Errorf("run directory holds %q:\n%s", name, listing)
		}
		if strings.HasPrefix(line, "d") && f[len(f)-1] == "." && f[0] != "drwx------" {
			t.Errorf("run directory mode %s, want drwx------", f[0])
		}
	}
	for _, kp := range []string{string(r.sshd.KeyPEM)} {
		assertNoKeyIn(t, o.TempDir, kp)
	}
	if left, _ := filepath.Glob(filepath.Join(o.TempDir, "pvectl-provision-*")); len(left) != 0 {
		t.Errorf("run directories left: %v", left)
	}
}

// assertNoKeyIn fails when a file under dir holds a line of the key.
func assertNoKeyIn(t *testing.T, dir, pem string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, l := range strings.Split(pem, "\n") {
			if len(l) >= 16 && !strings.HasPrefix(l, "-----") && strings.Contains(string(b), l) {
				t.Errorf("%s holds private key material", p)
				return nil
			}
		}
		return nil
	})
}

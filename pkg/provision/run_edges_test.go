package provision_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
)

// TestNoSecretsInOutput: the key, given as PEM in the environment as CI
// secrets hold it, shows nowhere — progress, tool output, errors, the
// description — even when a playbook prints it by mistake; the playbook's
// environment does not carry it; Run's temp files are gone afterwards.
func TestNoSecretsInOutput(t *testing.T) {
	t.Parallel()
	r := newRig(t, "ansible-playbook")
	pemText := string(r.sshd.KeyPEM)
	auth, err := provision.LoadAuth("", func(k string) string {
		if k == provision.EnvPrivateKey {
			return pemText
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Close()
	r.write("leak.yaml", fmt.Sprintf(`- hosts: all
  gather_facts: false
  tasks:
    - name: what the playbook's environment holds
      ansible.builtin.copy:
        dest: %s/env-key
        content: "{{ lookup('env', 'PROXMOX_SSH_PRIVATE_KEY') }}"
    - name: print a key by mistake
      ansible.builtin.command: cat %s
    - name: show it again in a failure
      ansible.builtin.command: sh -c 'cat %s; exit 3'
`, r.out, r.sshd.KeyPath, r.sshd.KeyPath))
	tg := r.target("leak.yaml")
	tg.Auth = auth
	o := r.options()
	o.Env = append(testEnv(), provision.EnvPrivateKey+"="+pemText)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = provision.Run(ctx, tg, o)
	if err == nil {
		t.Fatal("the failing playbook succeeded")
	}
	all := strings.Join(append(append(r.progress, r.output...), err.Error(), r.desc), "\n")
	if !strings.Contains(all, "REDACTED") {
		t.Errorf("the printed key was not seen redacted; output:\n%s", all)
	}
	for _, line := range strings.Split(pemText, "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(all, line) {
			t.Fatalf("private key material in the output:\n%s", all)
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.out, "env-key")); err != nil || len(b) != 0 {
		t.Errorf("the playbook's environment held %q (%v), want nothing", b, err)
	}
	if left, _ := os.ReadDir(o.TempDir); len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

// TestEncryptedKeyThroughAgent: an encrypted key is used through the
// ssh-agent that holds it, by pvectl and by ansible's ssh alike.
func TestEncryptedKeyThroughAgent(t *testing.T) {
	t.Parallel()
	r := newRig(t, "ansible-playbook")
	blk, err := ssh.MarshalPrivateKeyWithPassphrase(r.sshd.ClientKey, "enc", []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	sock := provisiontest.StartAgent(t, r.sshd.ClientKey)
	auth, err := provision.LoadAuth(string(pem.EncodeToMemory(blk)), func(k string) string {
		if k == provision.EnvAgent {
			return sock
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer auth.Close()
	r.playbook("site.yaml", "agent", false)
	tg := r.target("site.yaml")
	tg.Auth = auth
	o := r.options()
	o.Env = withoutEnv(testEnv(), provision.EnvAgent)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := provision.Run(ctx, tg, o); err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(r.output, "\n"))
	}
	if got := strings.Join(r.runs(), " "); got != "agent" {
		t.Errorf("guest saw %q", got)
	}
}

func withoutEnv(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestRunDeadline: a guest that never opens its SSH port fails Run at the
// deadline, naming the VM and the address, and nothing is written.
func TestRunDeadline(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	spec := t.TempDir()
	if err := os.WriteFile(filepath.Join(spec, "site.yaml"), []byte("- hosts: all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := provision.NewFile("site.yaml", filepath.Join(spec, "site.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	saved := 0
	_, err = provision.Run(context.Background(), provision.Target{
		VM: "db-3", Files: []provision.File{f}, Lookup: provision.Lookup{IP: "127.0.0.1"}, Port: addr.Port,
		Auth: &provision.Auth{},
	}, provision.Options{Timeout: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond,
		SaveDescription: func(context.Context, string) error { saved++; return nil }})
	var we *provision.WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err %v, want a WaitError", err)
	}
	for _, want := range []string{"vm db-3", addr.String(), "connection refused", "provisionTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if saved != 0 {
		t.Errorf("description written %d times", saved)
	}
}

func TestRunRefusesIncompleteCalls(t *testing.T) {
	spec := t.TempDir()
	if err := os.WriteFile(filepath.Join(spec, "a.pp"), []byte("notice(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := provision.NewFile("a.pp", filepath.Join(spec, "a.pp"))
	if err != nil {
		t.Fatal(err)
	}
	save := func(context.Context, string) error { return nil }
	tests := []struct {
		name string
		t    provision.Target
		o    provision.Options
		want string
	}{
		{"no name", provision.Target{Files: []provision.File{f}}, provision.Options{SaveDescription: save}, "no vm name"},
		{"no save hook", provision.Target{VM: "a", Files: []provision.File{f}, Auth: &provision.Auth{}}, provision.Options{}, "SaveDescription is required"},
		{"no key", provision.Target{VM: "a", Files: []provision.File{f}}, provision.Options{SaveDescription: save}, "no ssh key"},
		{"broken block", provision.Target{VM: "a", Files: []provision.File{f}, Description: "[pvectl-hostkey: x]"}, provision.Options{SaveDescription: save}, "vm a: description block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := provision.Run(context.Background(), tc.t, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	// Nothing pending needs neither a key nor a hook: no work, no error.
	rec := "[pvectl-provision: a.pp=" + f.Hash + "]"
	if res, err := provision.Run(context.Background(), provision.Target{VM: "a", Files: []provision.File{f}, Description: rec}, provision.Options{}); err != nil || res.Description != rec {
		t.Errorf("nothing pending: %+v, %v", res, err)
	}
}

package provision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
)

// TestAnsibleTrustsOnlyTheVerifiedKey: ansible's ssh checks the guest
// against the one key pvectl verified, strictly, even when an ansible.cfg
// beside the playbook turns host key checking off.
func TestAnsibleTrustsOnlyTheVerifiedKey(t *testing.T) {
	t.Parallel()
	provisiontest.Require(t, "sshd", "ssh", "ansible-playbook")
	sshd := provisiontest.StartSSHD(t)
	auth, err := LoadAuth(string(sshd.KeyPEM), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	spec, out := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(spec, "ansible.cfg"), "[defaults]\nhost_key_checking = False\n")
	writeFile(t, filepath.Join(spec, "site.yaml"), "- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.shell: touch "+out+"/ran\n")
	f := newFile(t, spec, "site.yaml")
	_, wrong, _ := generateKey(t)

	for _, tc := range []struct {
		name    string
		trusted bool
	}{{"another key", false}, {"the guest's key", true}} {
		t.Run(tc.name, func(t *testing.T) {
			key := wrong.PublicKey()
			if tc.trusted {
				key = sshd.HostKey
			}
			s := &session{vm: "vm1", host: sshd.Host, port: sshd.Port, user: sshd.User, auth: auth,
				hostKey: key, dir: t.TempDir(), opts: &Options{}}
			defer s.closeAnsible()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := s.run(ctx, f)
			_, statErr := os.Stat(filepath.Join(out, "ran"))
			if tc.trusted {
				if err != nil || statErr != nil {
					t.Fatalf("with the verified key: %v (ran: %v)", err, statErr)
				}
				return
			}
			var re *RunError
			if !errors.As(err, &re) || !strings.Contains(strings.Join(re.Tail, "\n"), "Host key verification failed") {
				t.Fatalf("err %v, want ansible's ssh to refuse the host", err)
			}
			if statErr == nil {
				t.Fatalf("the playbook ran against an unverified host")
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(s string) { got = append(got, s) }, redact: func(s string) string { return strings.ReplaceAll(s, "s3cret", "REDACTED") }}
	for _, chunk := range []string{"one\r\ntw", "o\n", "the s3c", "ret is\n", "no end"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	want := []string{"one", "two", "the REDACTED is", "no end"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	for i := range 30 {
		_, _ = w.Write([]byte(strings.Repeat("x", i) + "\n"))
	}
	if tail := w.lastLines(); len(tail) != tailLines || tail[tailLines-1] != strings.Repeat("x", 29) {
		t.Errorf("tail %d lines ending %q", len(tail), tail[len(tail)-1])
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/x/known_hosts": "/tmp/x/known_hosts",
		"/tmp/a b/kh":        "'/tmp/a b/kh'",
		"it's":               `'it'\''s'`,
		"":                   "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

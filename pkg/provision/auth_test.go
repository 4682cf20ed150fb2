package provision

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
)

func generateKey(t *testing.T) (ed25519.PrivateKey, ssh.Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	return priv, signer, pem.EncodeToMemory(blk)
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func sameKey(a, b ssh.PublicKey) bool { return string(a.Marshal()) == string(b.Marshal()) }

func TestLoadAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	priv, signer, pemBytes := generateKey(t)
	keyPath := filepath.Join(dir, "id")
	if err := os.WriteFile(keyPath, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	encBlk, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	encPEM := pem.EncodeToMemory(encBlk)
	encPath := filepath.Join(dir, "id_enc")
	if err := os.WriteFile(encPath, encPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, otherPEM := generateKey(t)
	otherPriv, _, _ := generateKey(t)
	sock := provisiontest.StartAgent(t, priv)
	otherSock := provisiontest.StartAgent(t, otherPriv)

	tests := []struct {
		name       string
		key        string
		env        map[string]string
		wantSource string // "" = an error is wanted
		wantErr    []string
		wantPEM    bool // the key can go to ansible as a file
	}{
		{name: "inline PEM", key: string(pemBytes), env: map[string]string{EnvPrivateKey: string(otherPEM)}, wantSource: "sshPrivateKey (PEM)", wantPEM: true},
		{name: "path", key: keyPath, wantSource: "sshPrivateKey (" + keyPath + ")", wantPEM: true},
		{name: "home path", key: "~/id", env: map[string]string{"HOME": dir}, wantSource: "sshPrivateKey (" + keyPath + ")", wantPEM: true},
		{name: "env PEM", env: map[string]string{EnvPrivateKey: "\n" + string(pemBytes)}, wantSource: EnvPrivateKey + " (PEM)", wantPEM: true},
		{name: "env path", env: map[string]string{EnvPrivateKey: keyPath}, wantSource: EnvPrivateKey + " (" + keyPath + ")", wantPEM: true},
		{name: "agent", env: map[string]string{EnvAgent: sock}, wantSource: "ssh-agent"},
		{name: "encrypted with agent", key: encPath, env: map[string]string{EnvAgent: sock}, wantSource: "sshPrivateKey (" + encPath + ")"},
		{name: "encrypted PEM without agent", key: string(encPEM),
			wantErr: []string{"sshPrivateKey (PEM) is encrypted", "never asks for a passphrase", "ssh-add", "SSH_AUTH_SOCK is not set"}},
		{name: "encrypted, agent lacks it", key: encPath, env: map[string]string{EnvAgent: otherSock},
			wantErr: []string{"is encrypted", "does not hold key " + ssh.FingerprintSHA256(signer.PublicKey())}},
		{name: "nothing", wantErr: []string{"no ssh key", EnvPrivateKey, "ssh-agent"}},
		{name: "missing file", key: filepath.Join(dir, "nope"), wantErr: []string{"read " + filepath.Join(dir, "nope"), "no such file"}},
		{name: "not a key", key: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAnotakeyatallAAAA\n-----END OPENSSH PRIVATE KEY-----", wantErr: []string{"not a private key pvectl can read"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := LoadAuth(tc.key, env(tc.env))
			if tc.wantSource == "" {
				if err == nil {
					a.Close()
					t.Fatalf("LoadAuth succeeded, want an error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				assertNoKey(t, err.Error(), pemBytes, encPEM, otherPEM)
				return
			}
			if err != nil {
				t.Fatalf("LoadAuth: %v", err)
			}
			defer a.Close()
			if a.String() != tc.wantSource {
				t.Errorf("source %q, want %q", a.String(), tc.wantSource)
			}
			if len(a.signers) == 0 || !sameKey(a.signers[0].PublicKey(), signer.PublicKey()) {
				t.Errorf("signers do not hold the key")
			}
			if (a.pemText != "") != tc.wantPEM {
				t.Errorf("pem kept out of child environments: %v, want %v", a.pemText != "", tc.wantPEM)
			}
		})
	}
}

// assertNoKey fails if any line of a private key's body shows in s.
func assertNoKey(t *testing.T, s string, pems ...[]byte) {
	t.Helper()
	for _, p := range pems {
		for _, l := range pemLines(p) {
			if strings.Contains(s, l) {
				t.Fatalf("private key material in %q", s)
			}
		}
	}
}

func TestResolveUser(t *testing.T) {
	tests := []struct {
		res, conn, env, want string
	}{
		{"ubuntu", "admin", "ops", "ubuntu"},
		{"", "admin", "ops", "ops"},
		{"", "admin", "", "admin"},
		{"", "", "", "root"},
		{"  ", " ", "", "root"},
	}
	for _, tc := range tests {
		got := ResolveUser(tc.res, tc.conn, env(map[string]string{EnvUser: tc.env}))
		if got != tc.want {
			t.Errorf("ResolveUser(%q, %q) with %s=%q = %q, want %q", tc.res, tc.conn, EnvUser, tc.env, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	_, _, p := generateKey(t)
	a, err := LoadAuth(string(p), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := a.redact("oops: " + string(p))
	assertNoKey(t, got, p)
	if !strings.Contains(got, "REDACTED") || !strings.Contains(got, "-----BEGIN OPENSSH PRIVATE KEY-----") {
		t.Errorf("redact(%q): want the body replaced, the armour kept", got)
	}
}

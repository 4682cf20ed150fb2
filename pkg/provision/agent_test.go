package provision

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// TestCleanStale: a run directory whose pvectl died (SIGKILL skips every
// deferred removal) is removed by the next run; a live one, another
// process's name scheme and plain files are left alone.
func TestCleanStale(t *testing.T) {
	base := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := cmd.Process.Pid
	mk := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "known_hosts"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(dirPrefix + strconv.Itoa(dead) + "-123")
	live := mk(dirPrefix + strconv.Itoa(os.Getppid()) + "-456")
	other := mk("pvectl-provision-x")
	dir, err := makeRunDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, live: true, other: true, dir: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("run directory mode %v, want 0700", fi.Mode().Perm())
	}
	if pid, ok := stalePID(filepath.Base(dir)); !ok || pid != os.Getpid() {
		t.Errorf("run directory %s: not named with this pid", dir)
	}
}

// TestAgentSignsOnly: the agent lists and signs with its key, and refuses
// to hand it out or to take others.
func TestAgentSignsOnly(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	ag, err := startAgent(t.TempDir(), []ssh.Signer{signer})
	if err != nil {
		t.Fatal(err)
	}
	defer ag.close()
	conn, err := net.Dial("unix", ag.path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := agent.NewClient(conn)
	keys, err := c.List()
	if err != nil || len(keys) != 1 || string(keys[0].Blob) != string(signer.PublicKey().Marshal()) {
		t.Fatalf("List: %v, %v", keys, err)
	}
	sig, err := c.Sign(signer.PublicKey(), []byte("data"))
	if err != nil || signer.PublicKey().Verify([]byte("data"), sig) != nil {
		t.Errorf("Sign: %v", err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if err := c.Add(agent.AddedKey{PrivateKey: other}); err == nil {
		t.Errorf("Add: accepted a key")
	}
	if err := c.RemoveAll(); err == nil {
		t.Errorf("RemoveAll: accepted")
	}
	if keys, _ := c.List(); len(keys) != 1 {
		t.Errorf("keys after refused changes: %d", len(keys))
	}
}

package provision

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// dirPrefix names Run's private directories: pvectl-provision-PID-RANDOM.
// The pid lets a later run remove the directory of one that was killed.
const dirPrefix = "pvectl-provision-"

// agentSocket is the socket's name in Run's directory.
const agentSocket = "agent.sock"

// makeRunDir creates Run's private directory (0700) under base, named
// with this process's id, after removing the directories that dead
// pvectl processes left behind (a SIGKILL skips every deferred cleanup).
func makeRunDir(base string) (string, error) {
	if base == "" {
		base = os.TempDir()
	}
	cleanStale(base)
	return os.MkdirTemp(base, dirPrefix+strconv.Itoa(os.Getpid())+"-")
}

// cleanStale removes base's pvectl-provision-PID-* directories whose PID
// is no longer running and that belong to this user. Failures are
// ignored: the next run tries again.
func cleanStale(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := stalePID(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() || !processGone(pid) || !ownedByMe(filepath.Join(base, e.Name())) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(base, e.Name()))
	}
}

// stalePID reads the pid out of a run directory's name.
func stalePID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, dirPrefix)
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

// keyAgent serves signers over an ssh-agent socket in Run's directory, so
// ansible's ssh logs in with pvectl's key without a copy of it on disk.
// It answers only List and Sign: a playbook that reaches the socket can
// neither read the key nor add or remove any.
type keyAgent struct {
	signers []ssh.Signer
	ln      net.Listener
	wg      sync.WaitGroup
	path    string
}

// startAgent listens on dir/agent.sock (the directory is 0700, so only
// this user can connect) and serves signers until close.
func startAgent(dir string, signers []ssh.Signer) (*keyAgent, error) {
	if len(signers) == 0 {
		return nil, errors.New("no key to serve")
	}
	path := filepath.Join(dir, agentSocket)
	if len(path) >= 104 { // sun_path: 108 on Linux, 104 on the BSDs
		return nil, fmt.Errorf("agent socket path %s is too long for a unix socket: set TMPDIR to a shorter directory", path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("ssh agent for ansible: %w", err)
	}
	a := &keyAgent{signers: signers, ln: ln, path: path}
	a.wg.Add(1)
	go a.serve()
	return a, nil
}

func (a *keyAgent) serve() {
	defer a.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close()
			_ = agent.ServeAgent(signerAgent{a.signers}, c)
		}()
	}
}

// close stops accepting; connections end when their ssh does.
func (a *keyAgent) close() {
	if a == nil {
		return
	}
	a.ln.Close()
	os.Remove(a.path)
}

// signerAgent is an agent.ExtendedAgent over fixed signers.
type signerAgent struct{ signers []ssh.Signer }

var errReadOnly = errors.New("pvectl's agent only signs")

func (s signerAgent) List() ([]*agent.Key, error) {
	out := make([]*agent.Key, 0, len(s.signers))
	for _, sg := range s.signers {
		pub := sg.PublicKey()
		out = append(out, &agent.Key{Format: pub.Type(), Blob: pub.Marshal(), Comment: "pvectl"})
	}
	return out, nil
}

func (s signerAgent) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return s.SignWithFlags(key, data, 0)
}

// SignWithFlags honours the RSA SHA-2 flags OpenSSH sends.
func (s signerAgent) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	want := key.Marshal()
	for _, sg := range s.signers {
		if string(sg.PublicKey().Marshal()) != string(want) {
			continue
		}
		algo := ""
		switch {
		case flags&agent.SignatureFlagRsaSha256 != 0:
			algo = ssh.KeyAlgoRSASHA256
		case flags&agent.SignatureFlagRsaSha512 != 0:
			algo = ssh.KeyAlgoRSASHA512
		}
		if as, ok := sg.(ssh.AlgorithmSigner); ok && algo != "" {
			return as.SignWithAlgorithm(rand.Reader, data, algo)
		}
		return sg.Sign(rand.Reader, data)
	}
	return nil, errors.New("pvectl's agent holds no such key")
}

func (signerAgent) Add(agent.AddedKey) error       { return errReadOnly }
func (signerAgent) Remove(ssh.PublicKey) error     { return errReadOnly }
func (signerAgent) RemoveAll() error               { return errReadOnly }
func (signerAgent) Lock([]byte) error              { return errReadOnly }
func (signerAgent) Unlock([]byte) error            { return errReadOnly }
func (signerAgent) Signers() ([]ssh.Signer, error) { return nil, errReadOnly }
func (signerAgent) Extension(string, []byte) ([]byte, error) {
	return nil, agent.ErrExtensionUnsupported
}

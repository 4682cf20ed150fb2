package provision

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Environment variables that provisioning reads.
const (
	EnvPrivateKey = "PROXMOX_SSH_PRIVATE_KEY" // a key file's path, or the PEM itself
	EnvUser       = "PROXMOX_SSH_USER"
	EnvAgent      = "SSH_AUTH_SOCK"
)

// Auth is how pvectl logs in to guests: one private key, or the keys an
// ssh-agent holds. It never holds a passphrase and never prompts.
type Auth struct {
	source string // where the key came from, for messages; never the key
	// signers sign for pvectl's own SSH client and, through pvectl's
	// in-process agent, for ansible's ssh: the key is never written out.
	signers   []ssh.Signer
	agentConn net.Conn
	// pemText is the key as given (a PEM), kept out of child environments.
	pemText string
	// secrets are the PEM's base64 lines, removed from any output.
	secrets []string
}

// LoadAuth finds the key to log in with: key (the resource's or the
// connection's sshPrivateKey: a PEM or a path), else $PROXMOX_SSH_PRIVATE_KEY
// (likewise), else the keys of the ssh-agent at $SSH_AUTH_SOCK. An
// encrypted key is used through the agent when the agent holds it, and is
// otherwise an error: pvectl runs unattended and never asks for a
// passphrase. getenv is os.Getenv when nil. Close releases the agent.
func LoadAuth(key string, getenv func(string) string) (*Auth, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	source := "sshPrivateKey"
	if strings.TrimSpace(key) == "" {
		key, source = getenv(EnvPrivateKey), EnvPrivateKey
	}
	sock := getenv(EnvAgent)
	if strings.TrimSpace(key) == "" {
		a := &Auth{source: "ssh-agent"}
		if err := a.useAgent(sock, nil); err != nil {
			return nil, fmt.Errorf("no ssh key: set sshPrivateKey or %s, or load a key into ssh-agent: %w", EnvPrivateKey, err)
		}
		return a, nil
	}

	var data []byte
	var pubPath string
	if looksPEM(key) {
		data = []byte(strings.TrimSpace(key) + "\n")
		source += " (PEM)"
	} else {
		path := expandHome(strings.TrimSpace(key), getenv("HOME"))
		d, err := os.ReadFile(path)
		if err != nil {
			// The error names the path only: a PEM mangled into something
			// that does not look like one is still not printed.
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("ssh private key from %s: read %s: %w", source, path, err)
		}
		data, pubPath = d, path+".pub"
		source += " (" + path + ")"
	}
	a := &Auth{source: source, secrets: pemLines(data)}
	signer, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		pub := missing.PublicKey
		if pub == nil && pubPath != "" {
			if b, err := os.ReadFile(pubPath); err == nil {
				pub, _, _, _, _ = ssh.ParseAuthorizedKey(b)
			}
		}
		if err := a.useAgent(sock, pub); err != nil {
			return nil, fmt.Errorf("ssh private key from %s is encrypted and pvectl never asks for a passphrase: load it into ssh-agent (ssh-add) or use an unencrypted key: %w", source, err)
		}
		return a, nil
	case err != nil:
		return nil, fmt.Errorf("ssh private key from %s: not a private key pvectl can read (OpenSSH, PKCS#1, PKCS#8 or SEC1 PEM): %s", source, keyParseReason(err))
	}
	a.signers = []ssh.Signer{signer}
	a.pemText = string(data)
	return a, nil
}

// useAgent takes the agent's keys, only pub when it is given.
func (a *Auth) useAgent(sock string, pub ssh.PublicKey) error {
	if sock == "" {
		return fmt.Errorf("%s is not set", EnvAgent)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return fmt.Errorf("ssh-agent at %s: %w", EnvAgent, err)
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return fmt.Errorf("ssh-agent at %s: %w", EnvAgent, err)
	}
	if pub != nil {
		want := pub.Marshal()
		signers = filterSigners(signers, func(s ssh.Signer) bool { return bytes.Equal(s.PublicKey().Marshal(), want) })
		if len(signers) == 0 {
			conn.Close()
			return fmt.Errorf("the ssh-agent at %s does not hold key %s", EnvAgent, ssh.FingerprintSHA256(pub))
		}
	}
	if len(signers) == 0 {
		conn.Close()
		return fmt.Errorf("the ssh-agent at %s holds no keys", EnvAgent)
	}
	a.signers, a.agentConn = signers, conn
	return nil
}

func filterSigners(in []ssh.Signer, keep func(ssh.Signer) bool) []ssh.Signer {
	var out []ssh.Signer
	for _, s := range in {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// Close releases the agent connection, if any.
func (a *Auth) Close() error {
	if a == nil || a.agentConn == nil {
		return nil
	}
	return a.agentConn.Close()
}

// String says where the key came from, never what it is.
func (a *Auth) String() string { return a.source }

// secretValues are the key's texts no child environment may hold.
func (a *Auth) secretValues() []string {
	if a == nil || a.pemText == "" {
		return nil
	}
	return append([]string{a.pemText}, a.secrets...)
}

// redact removes the key's text from s, in case a tool echoes it.
func (a *Auth) redact(s string) string {
	if a == nil {
		return s
	}
	for _, l := range a.secrets {
		s = strings.ReplaceAll(s, l, "REDACTED")
	}
	return s
}

func looksPEM(s string) bool {
	return strings.HasPrefix(strings.TrimSpace(s), "-----BEGIN ")
}

// pemLines are the base64 lines of a PEM's body: long enough to be key
// material, not the BEGIN/END armour or headers.
func pemLines(data []byte) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if len(l) >= 16 && !strings.HasPrefix(l, "-----") && !strings.Contains(l, ":") {
			out = append(out, l)
		}
	}
	return out
}

// keyParseReason keeps x/crypto's wording when it is about the format; it
// never quotes key bytes, but the reason is cut short to be sure.
func keyParseReason(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, p[1:])
	}
	return p
}

// ResolveUser picks the SSH user: the resource's sshUser, else
// $PROXMOX_SSH_USER, else the connection's sshUser, else root. getenv is
// os.Getenv when nil.
func ResolveUser(sshUser, connectionUser string, getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, u := range []string{sshUser, getenv(EnvUser), connectionUser} {
		if u = strings.TrimSpace(u); u != "" {
			return u
		}
	}
	return "root"
}

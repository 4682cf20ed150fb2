package provision

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is a guest whose SSH host key is not the one its description
// pins. Nothing ran: pvectl fails closed.
type HostKeyError struct {
	VM      string
	Address string // host:port
	Pinned  string // "<type> SHA256:…" from the description
	Got     string // what the guest presented
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("vm %s at %s: ssh host key changed: pinned %s, guest presented %s; nothing ran. "+
		"If the guest was rebuilt on purpose, trust its new key with `pvectl ssh repin QemuVM/<name> -f SPECS` (or remove the [pvectl-hostkey: …] block from its description); otherwise someone may be intercepting the connection",
		e.VM, e.Address, e.Pinned, e.Got)
}

// Pin is how a host key is recorded: its type and SHA-256 fingerprint.
func Pin(key ssh.PublicKey) string {
	return key.Type() + " " + ssh.FingerprintSHA256(key)
}

// algosFor lists the host key algorithms to offer: those of the pinned
// key's type when there is a pin, else all in one fixed order, strongest
// first, so that the key pinned on first use is the one shown later, and
// the one OpenSSH (ansible) prefers once known_hosts holds it.
func algosFor(pin string) []string {
	typ, _, _ := strings.Cut(pin, " ")
	switch typ {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		return []string{typ}
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
}

// hostKeyCheck is trust on first use against the description's pin. It
// records the key the guest showed, for the pin to write and the
// known_hosts file ansible gets.
type hostKeyCheck struct {
	vm, addr string
	pinned   string
	// acceptNew trusts a key that differs from the pin: the guest was
	// created or replaced in this run, so its key is new by nature.
	acceptNew bool

	mu   sync.Mutex
	seen ssh.PublicKey
}

func (c *hostKeyCheck) callback(_ string, _ net.Addr, key ssh.PublicKey) error {
	c.mu.Lock()
	c.seen = key
	c.mu.Unlock()
	if c.pinned == "" || c.acceptNew || Pin(key) == c.pinned {
		return nil
	}
	return &HostKeyError{VM: c.vm, Address: c.addr, Pinned: c.pinned, Got: Pin(key)}
}

func (c *hostKeyCheck) key() ssh.PublicKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// writeKnownHosts writes the one key pvectl verified as a known_hosts file
// (mode 0600) for ansible's ssh, which then checks strictly against it.
func writeKnownHosts(dir, addr string, key ssh.PublicKey) (string, error) {
	path := filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("write known_hosts: %w", err)
	}
	return path, nil
}

package provision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// errKeySeen ends a probe's handshake once the host key is known: nothing
// is authenticated, so no credential is ever offered.
var errKeySeen = errors.New("host key seen")

// ProbeHostKey connects to addr (host:port) and returns the host key the
// SSH server presents, offering the algorithms a first use offers (as if
// no key were pinned), so the key it returns is the one provisioning would
// pin. The handshake stops in the host key callback, during the key
// exchange: authentication never starts, so no user name, key or password
// is sent (the config holds no auth method anyway).
func ProbeHostKey(ctx context.Context, addr string, timeout time.Duration) (ssh.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	var seen ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User:              "pvectl-hostkey-probe",
		HostKeyAlgorithms: algosFor(""),
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			seen = key
			return errKeySeen
		},
		Timeout: timeout,
	}
	c, _, _, err := ssh.NewClientConn(conn, addr, cfg)
	if c != nil {
		c.Close()
	}
	if seen != nil {
		return seen, nil
	}
	return nil, fmt.Errorf("ssh handshake with %s: %w", addr, err)
}

package provision

import (
	"net"
	"strings"
	"testing"
)

// silentUDP is a loopback UDP server that never answers (a DNS server
// that is down).
func silentUDP(t *testing.T) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedPort is a loopback TCP address nobody listens on: bound, then
// closed.
func closedPort(t *testing.T) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	return addr
}

// failedAsWanted checks err against wantErr (a part of the message): with
// wantErr set, err must contain it and the case is done (true); without,
// err must be nil.
func failedAsWanted(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want %q", err, wantErr)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

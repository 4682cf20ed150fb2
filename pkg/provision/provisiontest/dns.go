package provisiontest

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh/agent"
)

// DNS is an authoritative-only DNS server on UDP loopback answering A
// queries from a table: NXDOMAIN for names it does not hold. It stops when
// the test ends.
type DNS struct {
	Addr string // 127.0.0.1:PORT

	mu      sync.Mutex
	records map[string]netip.Addr
	queries int
}

// StartDNS serves records (name → IPv4) for the test.
func StartDNS(tb testing.TB, records map[string]string) *DNS {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("dns server: %v", err)
	}
	d := &DNS{Addr: pc.LocalAddr().String(), records: map[string]netip.Addr{}}
	for name, ip := range records {
		d.Set(name, ip)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := d.answer(buf[:n]); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	tb.Cleanup(func() { pc.Close(); <-done })
	return d
}

// Set adds or changes a record.
func (d *DNS) Set(name, ip string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records[strings.ToLower(strings.TrimSuffix(name, "."))] = netip.MustParseAddr(ip)
}

// Queries counts the queries answered.
func (d *DNS) Queries() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queries
}

// answer builds the response to one query (RFC 1035 §4.1): the question
// echoed, one A record pointing back at it, or NXDOMAIN.
func (d *DNS) answer(q []byte) []byte {
	if len(q) < 12 || q[2]&0x80 != 0 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	name, end, err := readName(q, 12)
	if err != nil || end+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end:])
	d.mu.Lock()
	d.queries++
	ip, ok := d.records[strings.ToLower(name)]
	d.mu.Unlock()

	resp := append([]byte(nil), q[:end+4]...)
	resp[2] = 0x84 | q[2]&0x01 // QR, AA, RD copied
	resp[3] = 0x80             // RA, rcode 0
	binary.BigEndian.PutUint16(resp[6:], 0)
	binary.BigEndian.PutUint16(resp[8:], 0)
	binary.BigEndian.PutUint16(resp[10:], 0)
	switch {
	case !ok:
		resp[3] |= 3 // NXDOMAIN
	case qtype == 1:
		binary.BigEndian.PutUint16(resp[6:], 1)
		a := ip.As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp
}

func readName(msg []byte, off int) (string, int, error) {
	var labels []string
	for {
		if off >= len(msg) {
			return "", 0, errors.New("short")
		}
		l := int(msg[off])
		if l == 0 {
			return strings.Join(labels, "."), off + 1, nil
		}
		if l&0xc0 != 0 || off+1+l > len(msg) {
			return "", 0, errors.New("bad label")
		}
		labels = append(labels, string(msg[off+1:off+1+l]))
		off += 1 + l
	}
}

// StartAgent serves an ssh-agent holding keys on a unix socket for the
// test and returns the socket's path (for SSH_AUTH_SOCK).
func StartAgent(tb testing.TB, keys ...any) string {
	tb.Helper()
	// A short directory: sun_path holds 108 bytes.
	dir, err := mkdirShort()
	if err != nil {
		tb.Fatal(err)
	}
	sock := dir + "/agent.sock"
	l, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatalf("ssh-agent socket: %v", err)
	}
	kr := agent.NewKeyring()
	for _, k := range keys {
		if err := kr.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			tb.Fatalf("ssh-agent add key: %v", err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); _ = agent.ServeAgent(kr, c); c.Close() }()
		}
	}()
	tb.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		removeAll(dir)
	})
	return sock
}

func mkdirShort() (string, error) {
	base := os.TempDir()
	if len(base) > 40 {
		base = "/tmp"
	}
	return os.MkdirTemp(base, "pvectl-agent-")
}

func removeAll(dir string) { _ = os.RemoveAll(dir) }

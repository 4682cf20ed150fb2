package provisiontest

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/net/dns/dnsmessage"
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
// echoed, one A record for it, or NXDOMAIN; nil for what is not one
// standard query.
func (d *DNS) answer(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil
	}
	question := qs[0]
	name := strings.ToLower(strings.TrimSuffix(question.Name.String(), "."))
	d.mu.Lock()
	d.queries++
	ip, ok := d.records[name]
	d.mu.Unlock()

	resp := dnsmessage.Message{
		Header: dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
			RecursionDesired: h.RecursionDesired, RecursionAvailable: true},
		Questions: qs,
	}
	switch {
	case !ok:
		resp.Header.RCode = dnsmessage.RCodeNameError
	case question.Type == dnsmessage.TypeA:
		resp.Answers = []dnsmessage.Resource{{
			Header: dnsmessage.ResourceHeader{Name: question.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
			Body:   &dnsmessage.AResource{A: ip.As4()},
		}}
	}
	b, err := resp.Pack()
	if err != nil {
		return nil
	}
	return b
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

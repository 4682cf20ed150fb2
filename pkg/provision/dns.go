package provision

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// ErrNoRecord is a DNS answer that the name has no A record (NXDOMAIN or
// an empty answer): definite, unlike a server that does not answer.
var ErrNoRecord = errors.New("no A record")

// LookupA asks servers ("IP[:port]", port 53 by default), one after the
// other and directly over UDP, for the A record of name, once each: the
// first address wins. When none has one, the error is ErrNoRecord if a
// server said so (a definite answer), else every server's failure. The
// planner uses it to give a VM without a static IP the address DNS holds
// for it; provisioning waits for a record through Resolve instead.
func LookupA(ctx context.Context, servers []string, name string) (netip.Addr, error) {
	if len(servers) == 0 {
		return netip.Addr{}, errors.New("no dns servers")
	}
	var errs []error
	none := ""
	for _, srv := range servers {
		a, err := lookupA(ctx, srv, name)
		if err == nil {
			return a, nil
		}
		if ctx.Err() != nil {
			return netip.Addr{}, ctx.Err()
		}
		if errors.Is(err, ErrNoRecord) && none == "" {
			none = srv
		}
		errs = append(errs, fmt.Errorf("%s: %w", srv, err))
	}
	if none != "" {
		return netip.Addr{}, fmt.Errorf("%s at %s: %w", name, none, ErrNoRecord)
	}
	return netip.Addr{}, fmt.Errorf("%s: %w", name, errors.Join(errs...))
}

// lookupA asks one server, directly over UDP, for the A record of name.
// pvectl asks the connection's dnsServers itself rather than the system
// resolver: the record lives on the cluster's DNS, which the machine
// running pvectl may not use. A single question fits any UDP answer that
// matters here; a truncated one is an error, not a retry over TCP.
func lookupA(ctx context.Context, server, name string) (netip.Addr, error) {
	addr, err := dnsServerAddr(server)
	if err != nil {
		return netip.Addr{}, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return netip.Addr{}, err
	}
	defer conn.Close()
	deadline := time.Now().Add(2 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var idb [2]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return netip.Addr{}, err
	}
	id := binary.BigEndian.Uint16(idb[:])
	q, err := dnsQuery(id, name)
	if err != nil {
		return netip.Addr{}, err
	}
	if _, err := conn.Write(q); err != nil {
		return netip.Addr{}, err
	}
	buf := make([]byte, 1500)
	// Stray datagrams (a late answer to an earlier try) are skipped; the
	// read deadline bounds the loop.
	for {
		n, err := conn.Read(buf)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return netip.Addr{}, ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return netip.Addr{}, errors.New("no answer")
			}
			return netip.Addr{}, err
		}
		ip, err := dnsAnswer(buf[:n], id, name)
		if errors.Is(err, errWrongID) {
			continue
		}
		return ip, err
	}
}

func dnsServerAddr(server string) (string, error) {
	server = strings.TrimSpace(server)
	if ap, err := netip.ParseAddrPort(server); err == nil {
		return ap.String(), nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(server, "[]")); err == nil {
		return netip.AddrPortFrom(ip, 53).String(), nil
	}
	return "", fmt.Errorf("dns server %q: want an IP address with an optional :port (pvectl does not resolve the resolver)", server)
}

// dnsQuery is a standard query with recursion desired for name's A record.
func dnsQuery(id uint16, name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return nil, fmt.Errorf("dns name %q: invalid", name)
	}
	// dnsmessage checks the name's total length and its encoding, not
	// empty or over-long labels: those are refused here, by name.
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("dns name %q: invalid label", name)
		}
	}
	qname, err := dnsmessage.NewName(name + ".")
	if err != nil {
		return nil, fmt.Errorf("dns name %q: %w", name, err)
	}
	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: qname, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}},
	}
	return msg.Pack()
}

var errWrongID = errors.New("dns answer to another query")

// dnsAnswer reads a response to the query (id, name): the first A record of
// the answer section, which a recursive server gives after any CNAMEs.
func dnsAnswer(msg []byte, id uint16, name string) (netip.Addr, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("dns answer malformed: %w", err)
	}
	if h.ID != id || !h.Response {
		return netip.Addr{}, errWrongID
	}
	if h.Truncated {
		return netip.Addr{}, errors.New("dns answer truncated")
	}
	switch h.RCode {
	case dnsmessage.RCodeSuccess:
	case dnsmessage.RCodeNameError:
		return netip.Addr{}, ErrNoRecord
	default:
		return netip.Addr{}, fmt.Errorf("dns server answered rcode %d", int(h.RCode))
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("dns answer malformed: %w", err)
	}
	for _, q := range qs {
		if !strings.EqualFold(strings.TrimSuffix(q.Name.String(), "."), strings.TrimSuffix(name, ".")) {
			return netip.Addr{}, errWrongID
		}
	}
	for {
		ah, err := p.AnswerHeader()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return netip.Addr{}, ErrNoRecord
		}
		if err != nil {
			return netip.Addr{}, fmt.Errorf("dns answer malformed: %w", err)
		}
		if ah.Type == dnsmessage.TypeA && ah.Class == dnsmessage.ClassINET {
			a, err := p.AResource()
			if err != nil {
				return netip.Addr{}, fmt.Errorf("dns answer malformed: %w", err)
			}
			return netip.AddrFrom4(a.A), nil
		}
		if err := p.SkipAnswer(); err != nil {
			return netip.Addr{}, fmt.Errorf("dns answer malformed: %w", err)
		}
	}
}

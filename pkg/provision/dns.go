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

// DNS message constants (RFC 1035 §4.1).
const (
	dnsTypeA   = 1
	dnsClassIN = 1
	dnsRcodeNX = 3
)

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
	msg := make([]byte, 12, 64)
	binary.BigEndian.PutUint16(msg[0:], id)
	msg[2] = 0x01 // RD
	binary.BigEndian.PutUint16(msg[4:], 1)
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return nil, fmt.Errorf("dns name %q: invalid", name)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("dns name %q: invalid label", name)
		}
		msg = append(msg, byte(len(label)))
		msg = append(msg, label...)
	}
	msg = append(msg, 0, 0, dnsTypeA, 0, dnsClassIN)
	return msg, nil
}

var errWrongID = errors.New("dns answer to another query")

// dnsAnswer reads a response to the query (id, name): the first A record of
// the answer section, which a recursive server gives after any CNAMEs.
func dnsAnswer(msg []byte, id uint16, name string) (netip.Addr, error) {
	if len(msg) < 12 {
		return netip.Addr{}, errors.New("dns answer too short")
	}
	if binary.BigEndian.Uint16(msg) != id || msg[2]&0x80 == 0 {
		return netip.Addr{}, errWrongID
	}
	if msg[2]&0x02 != 0 {
		return netip.Addr{}, errors.New("dns answer truncated")
	}
	switch rcode := msg[3] & 0x0f; rcode {
	case 0:
	case dnsRcodeNX:
		return netip.Addr{}, ErrNoRecord
	default:
		return netip.Addr{}, fmt.Errorf("dns server answered rcode %d", rcode)
	}
	qd := binary.BigEndian.Uint16(msg[4:])
	an := binary.BigEndian.Uint16(msg[6:])
	off := 12
	for range qd {
		qname, next, err := dnsName(msg, off)
		if err != nil {
			return netip.Addr{}, err
		}
		if !strings.EqualFold(qname, strings.TrimSuffix(name, ".")) {
			return netip.Addr{}, errWrongID
		}
		off = next + 4
	}
	for range an {
		_, next, err := dnsName(msg, off)
		if err != nil {
			return netip.Addr{}, err
		}
		if next+10 > len(msg) {
			return netip.Addr{}, errors.New("dns answer truncated record")
		}
		typ := binary.BigEndian.Uint16(msg[next:])
		class := binary.BigEndian.Uint16(msg[next+2:])
		rdlen := int(binary.BigEndian.Uint16(msg[next+8:]))
		rdata := next + 10
		if rdata+rdlen > len(msg) {
			return netip.Addr{}, errors.New("dns answer truncated record")
		}
		if typ == dnsTypeA && class == dnsClassIN && rdlen == 4 {
			return netip.AddrFrom4([4]byte(msg[rdata : rdata+4])), nil
		}
		off = rdata + rdlen
	}
	return netip.Addr{}, ErrNoRecord
}

// dnsName reads a possibly compressed name at off; next is the offset
// after it in the message (not after a pointer's target). Pointers must
// go backwards, so a loop cannot hold it.
func dnsName(msg []byte, off int) (name string, next int, err error) {
	var labels []string
	next = -1
	pos := off
	for {
		if pos >= len(msg) {
			return "", 0, errors.New("dns name out of bounds")
		}
		l := int(msg[pos])
		switch {
		case l == 0:
			if next < 0 {
				next = pos + 1
			}
			return strings.Join(labels, "."), next, nil
		case l&0xc0 == 0xc0:
			if pos+1 >= len(msg) {
				return "", 0, errors.New("dns name out of bounds")
			}
			ptr := int(binary.BigEndian.Uint16(msg[pos:]) & 0x3fff)
			if next < 0 {
				next = pos + 2
			}
			if ptr >= pos {
				return "", 0, errors.New("dns name pointer loops")
			}
			pos = ptr
		case l&0xc0 != 0:
			return "", 0, errors.New("dns name has an unknown label type")
		default:
			if pos+1+l > len(msg) {
				return "", 0, errors.New("dns name out of bounds")
			}
			labels = append(labels, string(msg[pos+1:pos+1+l]))
			pos += 1 + l
		}
	}
}

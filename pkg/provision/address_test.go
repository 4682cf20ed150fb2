package provision

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
)

func TestAgentIPv4(t *testing.T) {
	// As PVE's …/agent/network-get-interfaces answers (data member).
	const answer = `{"result":[
	 {"name":"lo","hardware-address":"00:00:00:00:00:00","ip-addresses":[
	   {"ip-address-type":"ipv4","ip-address":"127.0.0.1","prefix":8},
	   {"ip-address-type":"ipv6","ip-address":"::1","prefix":128}]},
	 {"name":"docker0","ip-addresses":[]},
	 {"name":"eth0","hardware-address":"bc:24:11:00:00:01","ip-addresses":[
	   {"ip-address-type":"ipv6","ip-address":"fe80::be24:11ff:fe00:1","prefix":64},
	   {"ip-address-type":"ipv4","ip-address":"169.254.3.4","prefix":16},
	   {"ip-address-type":"ipv4","ip-address":"10.8.10.51","prefix":24}]},
	 {"name":"eth1","ip-addresses":[{"ip-address-type":"ipv4","ip-address":"10.9.0.2","prefix":24}]}]}`
	ifaces, err := ParseAgentInterfaces([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	sim := []AgentInterface{
		{Name: "lo", Addresses: []AgentIPAddress{{Type: "ipv4", Address: "127.0.0.1"}}},
		{Name: "eth0", Addresses: []AgentIPAddress{{Type: "ipv4", Address: "127.0.10.5", Prefix: 8}}},
	}
	tests := []struct {
		name          string
		ifaces        []AgentInterface
		allowLoopback bool
		want          string // "" = none
	}{
		{"first global of a non-loopback interface", ifaces, false, "10.8.10.51"},
		{"simulator lease refused by default", sim, false, ""},
		{"simulator lease allowed, lo still skipped", sim, true, "127.0.10.5"},
		{"nothing yet", []AgentInterface{{Name: "eth0"}}, false, ""},
		{"Windows loopback", []AgentInterface{{Name: "Loopback Pseudo-Interface 1", Addresses: []AgentIPAddress{{Type: "ipv4", Address: "127.0.0.1"}}}}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AgentIPv4(tc.ifaces, tc.allowLoopback)
			if tc.want == "" {
				if ok {
					t.Errorf("got %s, want none", got)
				}
				return
			}
			if !ok || got.String() != tc.want {
				t.Errorf("got %v %v, want %s", got, ok, tc.want)
			}
		})
	}
	if list, err := ParseAgentInterfaces([]byte(`[{"name":"eth0"}]`)); err != nil || len(list) != 1 {
		t.Errorf("bare list: %v %v", list, err)
	}
	if _, err := ParseAgentInterfaces([]byte(`{"result":`)); err == nil {
		t.Errorf("broken JSON: no error")
	}
}

func quick() Options {
	return Options{Timeout: 2 * time.Second, PollInterval: 10 * time.Millisecond}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	dns := provisiontest.StartDNS(t, map[string]string{"web1.lab.test": "10.1.2.3"})
	silent := silentUDP(t)
	agent := func(ip string) func(context.Context) ([]AgentInterface, error) {
		return func(context.Context) ([]AgentInterface, error) {
			return []AgentInterface{{Name: "eth0", Addresses: []AgentIPAddress{{Type: "ipv4", Address: ip}}}}, nil
		}
	}
	tests := []struct {
		name    string
		vm      string
		lookup  Lookup
		want    string
		wantErr string
	}{
		{"static ip", "web1", Lookup{IP: "10.0.0.9/24", DNSDomain: "lab.test", DNSServers: []string{dns.Addr}}, "10.0.0.9", ""},
		{"static ip wins over agent", "x", Lookup{IP: "10.0.0.9", Agent: agent("10.7.7.7")}, "10.0.0.9", ""},
		{"bad static ip", "x", Lookup{IP: "web"}, "", "want an IPv4 address"},
		{"dns", "web1", Lookup{DNSDomain: "lab.test.", DNSServers: []string{dns.Addr}}, "10.1.2.3", ""},
		{"second dns server answers", "web1", Lookup{DNSDomain: "lab.test", DNSServers: []string{"127.0.0.1:1", dns.Addr}}, "10.1.2.3", ""},
		{"dhcp falls to the agent", "web1", Lookup{IP: "dhcp", Agent: agent("10.7.7.7")}, "10.7.7.7", ""},
		{"no record falls to the agent", "db9", Lookup{DNSDomain: "lab.test", DNSServers: []string{dns.Addr}, Agent: agent("10.7.7.7")}, "10.7.7.7", ""},
		{"no record, no agent: deadline", "db9", Lookup{DNSDomain: "lab.test", DNSServers: []string{dns.Addr}}, "", "waiting for the A record of db9.lab.test"},
		{"silent server: deadline", "web1", Lookup{DNSDomain: "lab.test", DNSServers: []string{silent.LocalAddr().String()}}, "", "no answer"},
		{"nothing to go by", "x", Lookup{}, "", "no address to provision at"},
		{"dns server not an IP", "web1", Lookup{DNSDomain: "lab.test", DNSServers: []string{"ns1.lab.test"}}, "", "does not resolve the resolver"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(context.Background(), tc.vm, tc.lookup, quick())
			if failedAsWanted(t, err, tc.wantErr) {
				return
			}
			if got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestResolveAgentLate: the agent answers errors until the guest is up;
// the wait keeps asking and shows what it waits for.
func TestResolveAgentLate(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var shown []string
	o := quick()
	o.Progress = func(m string) { shown = append(shown, m) }
	got, err := Resolve(context.Background(), "vm7", Lookup{AllowLoopback: true, Agent: func(context.Context) ([]AgentInterface, error) {
		switch calls.Add(1) {
		case 1:
			return nil, errors.New("QEMU guest agent is not running")
		case 2:
			return []AgentInterface{{Name: "eth0"}}, nil
		}
		return []AgentInterface{{Name: "eth0", Addresses: []AgentIPAddress{{Type: "ipv4", Address: "127.0.10.7"}}}}, nil
	}}, o)
	if err != nil || got.String() != "127.0.10.7" {
		t.Fatalf("got %v, %v", got, err)
	}
	if len(shown) != 1 || shown[0] != "vm vm7: waiting for an address from the QEMU guest agent" {
		t.Errorf("progress %q", shown)
	}
	// Never answers: the deadline names the last error.
	_, err = Resolve(context.Background(), "vm8", Lookup{Agent: func(context.Context) ([]AgentInterface, error) {
		return nil, errors.New("QEMU guest agent is not running")
	}}, Options{Timeout: 100 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	var we *WaitError
	if !errors.As(err, &we) || we.VM != "vm8" || !strings.Contains(err.Error(), "QEMU guest agent is not running") {
		t.Errorf("err %v, want a WaitError with the agent's last answer", err)
	}
}

func TestDNSWire(t *testing.T) {
	q, err := dnsQuery(0xbeef, "web1.lab.test")
	if err != nil {
		t.Fatal(err)
	}
	// An answer as a recursive server gives it: a CNAME, then the A of its
	// target, names compressed against the question.
	resp := append([]byte(nil), q...)
	resp[2], resp[3] = 0x81, 0x80
	binary.BigEndian.PutUint16(resp[6:], 2)
	cname := []byte{3, 'w', 'w', 'w', 0xc0, 17} // www.lab.test, pointing at "lab.test"
	resp = append(resp, 0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, byte(len(cname)))
	resp = append(resp, cname...)
	// The A record's name points at the CNAME's rdata: the question ends
	// at len(q), the CNAME's name and fixed fields take 12 bytes.
	resp = append(resp, 0xc0, byte(len(q)+12), 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 7)
	got, err := dnsAnswer(resp, 0xbeef, "web1.lab.test")
	if err != nil || got != netip.MustParseAddr("10.0.0.7") {
		t.Errorf("CNAME chain: got %v, %v", got, err)
	}

	tests := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
		substr string
	}{
		{"other id", func(b []byte) []byte { b[0] = 0; return b }, errWrongID, ""},
		{"nxdomain", func(b []byte) []byte { b[3] = 0x83; return b }, ErrNoRecord, ""},
		{"servfail", func(b []byte) []byte { b[3] = 0x82; return b }, nil, "rcode 2"},
		{"truncated flag", func(b []byte) []byte { b[2] |= 0x02; return b }, nil, "truncated"},
		{"cut short", func(b []byte) []byte { return b[:len(b)-3] }, nil, "malformed"},
		{"pointer loop", func(b []byte) []byte {
			out := append([]byte(nil), b[:len(q)]...)
			binary.BigEndian.PutUint16(out[6:], 1)
			return append(out, 0xc0, byte(len(q)), 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4)
		}, nil, "malformed"},
		{"no answers", func(b []byte) []byte { binary.BigEndian.PutUint16(b[6:], 0); return b[:len(q)] }, ErrNoRecord, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dnsAnswer(tc.mutate(append([]byte(nil), resp...)), 0xbeef, "web1.lab.test")
			if tc.want != nil && !errors.Is(err, tc.want) || tc.substr != "" && (err == nil || !strings.Contains(err.Error(), tc.substr)) {
				t.Errorf("err %v, want %v %q", err, tc.want, tc.substr)
			}
		})
	}
	if _, err := dnsQuery(1, "a..b"); err == nil {
		t.Errorf("empty label accepted")
	}
	if _, err := dnsQuery(1, strings.Repeat("a", 64)+".b"); err == nil {
		t.Errorf("64-byte label accepted")
	}
}

// LookupA asks once: an address, a definite "no record" (ErrNoRecord, also
// when another server did not answer), or every server's failure.
func TestLookupA(t *testing.T) {
	t.Parallel()
	dns := provisiontest.StartDNS(t, map[string]string{"web1.lab.test": "10.1.2.3"})
	silent := silentUDP(t)
	tests := []struct {
		name     string
		servers  []string
		fqdn     string
		want     string
		noRecord bool
		errHas   string
	}{
		{name: "found", servers: []string{dns.Addr}, fqdn: "web1.lab.test", want: "10.1.2.3"},
		{name: "second server", servers: []string{"127.0.0.1:1", dns.Addr}, fqdn: "web1.lab.test", want: "10.1.2.3"},
		{name: "no record", servers: []string{dns.Addr}, fqdn: "db9.lab.test", noRecord: true},
		{name: "no record beats a refused server", servers: []string{"127.0.0.1:1", dns.Addr}, fqdn: "db9.lab.test", noRecord: true},
		{name: "no answer", servers: []string{silent.LocalAddr().String()}, fqdn: "web1.lab.test", errHas: "no answer"},
		{name: "no servers", fqdn: "web1.lab.test", errHas: "no dns servers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := LookupA(context.Background(), tc.servers, tc.fqdn)
			switch {
			case tc.noRecord:
				if !errors.Is(err, ErrNoRecord) {
					t.Fatalf("err %v, want ErrNoRecord", err)
				}
			case tc.errHas != "":
				if err == nil || errors.Is(err, ErrNoRecord) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %q (not ErrNoRecord)", err, tc.errHas)
				}
			case err != nil:
				t.Fatal(err)
			case got.String() != tc.want:
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

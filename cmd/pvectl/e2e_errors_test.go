package main

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// Issue 10 acceptance (12): the errors a new user meets first lead with
// what happened, add one line of what to do, and carry no internal prefix.
func TestE2EErrorsSayWhatToDo(t *testing.T) {
	sim := startSim(t)
	tlsSim, err := pvesim.New(pvesim.Options{TokenID: e2eTokenID, TokenSecret: e2eTokenSecret, TaskDuration: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := httptest.NewUnstartedServer(tlsSim)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain-HTTP request is the point
	tlsSrv.StartTLS()
	t.Cleanup(func() { tlsSrv.Close(); tlsSim.Close() })
	// A port freed for "nothing listens", on a loopback address of its own
	// and taken after the servers above start: a server of this test (or
	// another) given the same port would answer instead (it did, once).
	closed, err := net.Listen("tcp", "127.0.0.19:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String()
	closed.Close()

	f := writeSpec(t, "pool.yaml", "kind: Pool\nname: p\n")
	tests := []struct {
		name       string
		url        string
		env        []string
		code       int
		head, todo string
	}{
		{"wrong secret", sim.url, []string{"PROXMOX_TOKEN_SECRET=not-the-secret"}, 1,
			"Error: PVE refused the API token: 401 ", "Check PROXMOX_TOKEN_ID (user@realm!tokenname) and PROXMOX_TOKEN_SECRET"},
		{"nothing listens", refused, nil, 1,
			"Error: cannot connect to PVE at " + closed.Addr().String() + ": connection refused (default connection: ", "`pvectl sim`"},
		{"https to a plain server", strings.Replace(sim.url, "http://", "https://", 1), nil, 1,
			"Error: the server speaks plain HTTP, but the URL says https://", "PVE itself serves HTTPS on port 8006"},
		{"http to a TLS server", strings.Replace(tlsSrv.URL, "https://", "http://", 1), nil, 1,
			"Error: the server speaks HTTPS, but the URL says http://", "Write https:// in PROXMOX_URL"},
		{"no scheme", strings.TrimPrefix(sim.url, "http://"), nil, 3,
			"has no scheme: write http", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &simEnv{t: t, url: tt.url, extraEnv: tt.env}
			r := env.mustRun(tt.code, "plan", "-f", f)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if !strings.Contains(lines[0], tt.head) {
				t.Errorf("first line: got %q, want it to contain %q", lines[0], tt.head)
			}
			if tt.todo != "" && (len(lines) != 2 || !strings.Contains(lines[1], tt.todo)) {
				t.Errorf("want one line of what to do containing %q, got:\n%s", tt.todo, r.stderr)
			}
			if strings.Contains(r.stderr, "pve client") {
				t.Errorf("an internal prefix reached the user:\n%s", r.stderr)
			}
			for _, l := range lines {
				if strings.TrimRight(l, " ") != l {
					t.Errorf("trailing blanks in %q", l)
				}
			}
		})
	}
}

// The simulator's port in use says so and how to pick a free one.
func TestE2ESimPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	env := &simEnv{t: t}
	r := env.mustRun(1, "sim", "--listen", ln.Addr().String())
	if !strings.Contains(r.stderr, "the port is in use") || !strings.Contains(r.stderr, "--listen 127.0.0.1:0") {
		t.Errorf("got:\n%s", r.stderr)
	}
}

// explain knows errors that need no network to make.
func TestExplainDNS(t *testing.T) {
	err := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "pve.lab", IsNotFound: true}}
	head, todo := explain(errors.Join(err))
	if head != `cannot resolve PVE's host name "pve.lab"` || !strings.Contains(todo, "PROXMOX_URL") {
		t.Errorf("got %q / %q", head, todo)
	}
	head, todo = explain(errors.New("plain"))
	if head != "plain" || todo != "" {
		t.Errorf("unknown errors stay as they are: got %q / %q", head, todo)
	}
}

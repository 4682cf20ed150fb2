package pvesim_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// rawAnswer is an answer read off the wire by hand, as curl shows it.
type rawAnswer struct {
	statusLine string
	header     map[string]string
	body       string
}

// rawRequest sends one HTTP/1.1 request on a fresh connection and reads
// the answer without net/http, which would hide the reason phrase.
func rawRequest(t *testing.T, e *env, method, path, form string) rawAnswer {
	t.Helper()
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "%s /api2/json%s HTTP/1.1\r\nHost: %s\r\nAuthorization: PVEAPIToken=%s=%s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s",
		method, path, u.Host, testToken, testSecret, len(form), form)
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("read the status line: %v", err)
	}
	a := rawAnswer{statusLine: strings.TrimRight(line, "\r\n"), header: map[string]string{}}
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read the header: %v", err)
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		k, v, _ := strings.Cut(h, ": ")
		a.header[strings.ToLower(k)] = v
	}
	var r io.Reader = br // the server closes the connection after an error
	if n, err := strconv.Atoi(a.header["content-length"]); err == nil {
		r = io.LimitReader(br, int64(n))
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read the body: %v", err)
	}
	a.body = string(b)
	return a
}

// TestErrorStatusLine reads error answers as curl does: PVE's message is
// the reason phrase (pve-http-server AnyEvent.pm response), the body has
// the whole message and, for a 400, "errors" per parameter, and the
// connection is closed.
func TestErrorStatusLine(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	tests := []struct {
		name, method, path, form string
		statusLine               string
		message                  string
		errors                   map[string]string
	}{
		{"missing storage", "POST", "/nodes/pve/qemu", "vmid=100&scsi0=nope:4",
			"HTTP/1.1 500 storage 'nope' does not exist", "storage 'nope' does not exist\n", nil},
		{"parameter error", "POST", "/nodes/pve/qemu", "vmid=100&cores=0",
			"HTTP/1.1 400 Parameter verification failed.", "Parameter verification failed.\n",
			map[string]string{"cores": "value must have a minimum value of 1"}},
		{"missing guest", "GET", "/nodes/pve/qemu/999/config", "",
			"HTTP/1.1 500 Configuration file 'nodes/pve/qemu-server/999.conf' does not exist",
			"Configuration file 'nodes/pve/qemu-server/999.conf' does not exist\n", nil},
		{"no such method", "GET", "/nope", "",
			"HTTP/1.1 501 Method 'GET /nope' not implemented", "Method 'GET /nope' not implemented\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := rawRequest(t, e, tc.method, tc.path, tc.form)
			if a.statusLine != tc.statusLine {
				t.Errorf("status line %q, want %q", a.statusLine, tc.statusLine)
			}
			if a.header["connection"] != "close" || a.header["server"] != "pve-api-daemon/3.0" {
				t.Errorf("header %v, want Connection: close and Server: pve-api-daemon/3.0", a.header)
			}
			var body struct {
				Data    *json.RawMessage  `json:"data"`
				Message string            `json:"message"`
				Errors  map[string]string `json:"errors"`
			}
			if err := json.Unmarshal([]byte(a.body), &body); err != nil {
				t.Fatalf("body %q: %v", a.body, err)
			}
			if body.Data != nil || body.Message != tc.message {
				t.Errorf("body %q, want data null and message %q", a.body, tc.message)
			}
			for k, want := range tc.errors {
				if got := strings.TrimSpace(body.Errors[k]); got != want {
					t.Errorf("errors.%s = %q, want %q", k, got, want)
				}
			}
		})
	}
	// A success keeps the connection and the standard phrase.
	a := rawRequest(t, e, "GET", "/version", "")
	if a.statusLine != "HTTP/1.1 200 OK" {
		t.Errorf("status line %q, want HTTP/1.1 200 OK", a.statusLine)
	}
}

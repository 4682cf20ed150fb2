package provision

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
)

// guestRig reaches a real sshd the way Run does, without running files.
type guestRig struct {
	sshd     *provisiontest.SSHD
	mu       sync.Mutex
	progress []string
}

func newGuestRig(t *testing.T) *guestRig {
	t.Helper()
	provisiontest.Require(t, "sshd")
	return &guestRig{sshd: provisiontest.StartSSHD(t)}
}

func (g *guestRig) reach(t *testing.T, timeout time.Duration, pinned string) (*ssh.Client, *hostKeyCheck, error) {
	t.Helper()
	signer, err := ssh.NewSignerFromKey(g.sshd.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Timeout: timeout, PollInterval: 10 * time.Millisecond, Progress: func(m string) {
		g.mu.Lock()
		g.progress = append(g.progress, m)
		g.mu.Unlock()
	}}
	check := &hostKeyCheck{vm: "vm1", addr: g.sshd.Addr(), pinned: pinned}
	cfg := &ssh.ClientConfig{User: g.sshd.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: check.callback, HostKeyAlgorithms: algosFor(pinned)}
	c, err := reach(context.Background(), newWaiter("vm1", &o), g.sshd.Addr(), cfg, check)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, check, err
}

func (g *guestRig) shown() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.progress, "\n")
}

func TestReachCloudInit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		states  []string
		wantErr string // "" = reached
		shown   string // in the progress
	}{
		{"done", []string{"done"}, "", ""},
		{"running then done", []string{"not started", "running", "running", "done"}, "", "waiting for cloud-init on"},
		{"degraded done", []string{"degraded"}, "", ""},
		{"disabled", []string{"disabled"}, "", ""},
		{"no cloud-init", []string{"absent"}, "", ""},
		{"error", []string{"running", "error"}, "test says cloud-init failed", ""},
		{"still running at the deadline", []string{"running"}, "gave up after", "waiting for cloud-init on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGuestRig(t)
			g.sshd.SetCloudInit(tc.states...)
			timeout := 20 * time.Second
			if strings.Contains(tc.name, "deadline") {
				// Room for one login and status on a loaded machine (5 s was
				// too little under the full suite with -race).
				timeout = 15 * time.Second
			}
			c, check, err := g.reach(t, timeout, "")
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("reach: %v", err)
				}
				if c == nil || Pin(check.key()) != Pin(g.sshd.HostKey) {
					t.Errorf("reached without seeing the host key")
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want it to contain %q", err, tc.wantErr)
			}
			if !strings.Contains(g.shown(), tc.shown) {
				t.Errorf("progress %q lacks %q", g.shown(), tc.shown)
			}
			switch tc.name {
			case "error":
				var ce *CloudInitError
				if !errors.As(err, &ce) || !strings.Contains(ce.Output, "status: error") || ce.Address != g.sshd.Addr() {
					t.Errorf("err %#v, want a CloudInitError with the status output and address", err)
				}
			case "still running at the deadline":
				var we *WaitError
				if !errors.As(err, &we) || we.Address != g.sshd.Addr() || we.VM != "vm1" || !strings.Contains(err.Error(), "cloud-init status: running") {
					t.Errorf("err %v, want a WaitError naming vm1, %s and the last status", err, g.sshd.Addr())
				}
			}
		})
	}
}

// TestReachDeadline: a guest that never answers fails at the deadline,
// naming the VM, the address and the last error, and the wait shows what
// it waited for.
func TestReachDeadline(t *testing.T) {
	t.Parallel()
	addr := closedPort(t).String()
	var shown []string
	o := Options{Timeout: 500 * time.Millisecond, PollInterval: 10 * time.Millisecond, Progress: func(m string) { shown = append(shown, m) }}
	check := &hostKeyCheck{vm: "web-7", addr: addr}
	cfg := &ssh.ClientConfig{User: "root", HostKeyCallback: check.callback}
	_, err := reach(context.Background(), newWaiter("web-7", &o), addr, cfg, check)
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("err %v, want a WaitError", err)
	}
	for _, want := range []string{"web-7", addr, "connection refused", "ssh on " + addr} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if len(shown) != 1 || !strings.Contains(shown[0], "waiting for ssh on "+addr) {
		t.Errorf("progress %q, want one line saying it waits for ssh on %s", shown, addr)
	}
}

// TestReachCancel: cancelling the context ends a wait with ctx's error,
// not a WaitError.
func TestReachCancel(t *testing.T) {
	t.Parallel()
	addr := closedPort(t).String()
	ctx, cancel := context.WithCancel(context.Background())
	o := Options{Timeout: time.Hour, PollInterval: 10 * time.Millisecond, Progress: func(string) { cancel() }}
	check := &hostKeyCheck{vm: "x", addr: addr}
	_, err := reach(ctx, newWaiter("x", &o), addr, &ssh.ClientConfig{User: "root", HostKeyCallback: check.callback}, check)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// TestReachPinnedTypeGone: a pin of a key type the guest no longer offers
// is a host key change too, and the error names the key it does offer.
func TestReachPinnedTypeGone(t *testing.T) {
	t.Parallel()
	g := newGuestRig(t)
	pin := "ecdsa-sha2-nistp256 SHA256:" + strings.Repeat("A", 43)
	_, _, err := g.reach(t, 10*time.Second, pin)
	var hk *HostKeyError
	if !errors.As(err, &hk) {
		t.Fatalf("err %v, want a HostKeyError", err)
	}
	if hk.Pinned != pin || hk.Got != Pin(g.sshd.HostKey) {
		t.Errorf("pinned %q got %q, want %q and %q", hk.Pinned, hk.Got, pin, Pin(g.sshd.HostKey))
	}
}

// TestReachAuthRetried: a login refused at first (cloud-init has not
// installed the key yet) is retried, not fatal.
func TestReachAuthRetried(t *testing.T) {
	t.Parallel()
	g := newGuestRig(t)
	_, other, _ := generateKey(t)
	// Long enough for a handshake on a loaded machine: the deadline must
	// find a completed login attempt to report.
	o := Options{Timeout: 5 * time.Second, PollInterval: 10 * time.Millisecond}
	check := &hostKeyCheck{vm: "vm1", addr: g.sshd.Addr()}
	cfg := &ssh.ClientConfig{User: g.sshd.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(other)}, HostKeyCallback: check.callback}
	_, err := reach(context.Background(), newWaiter("vm1", &o), g.sshd.Addr(), cfg, check)
	var we *WaitError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("err %v, want a WaitError whose last error is the refused login", err)
	}
	if n := g.sshd.Connections(); n < 2 {
		t.Errorf("%d connections, want the login retried", n)
	}
}

func TestWaitErrorMessage(t *testing.T) {
	e := &WaitError{VM: "db1", Address: "10.0.0.5:" + strconv.Itoa(22), Waiting: "ssh on 10.0.0.5:22", Timeout: 10 * time.Minute, Last: errors.New("connection refused")}
	want := "vm db1 at 10.0.0.5:22: gave up after 10m0s waiting for ssh on 10.0.0.5:22 (provisionTimeout); last error: connection refused"
	if e.Error() != want {
		t.Errorf("got %q\nwant %q", e.Error(), want)
	}
}

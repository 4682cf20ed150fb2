package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pvectl/pvectl/internal/durfmt"
)

// Bounds of one attempt inside a wait; the wait's deadline bounds them all.
const (
	dialTimeout      = 10 * time.Second
	handshakeTimeout = 30 * time.Second
	commandTimeout   = 60 * time.Second
)

// CloudInitError is a guest whose cloud-init finished with an error. Its
// output (`cloud-init status --long`) says what failed.
type CloudInitError struct {
	VM, Address string
	Output      string
}

func (e *CloudInitError) Error() string {
	return fmt.Sprintf("vm %s at %s: cloud-init reported an error, so nothing ran:\n%s", e.VM, e.Address, indent(e.Output))
}

// reach waits until the guest at addr takes an SSH login and its
// cloud-init is done, and returns the connection. The TCP probe of the
// port is the connection SSH then uses, so a guest is reached with one
// connection. Host key mismatches and cloud-init errors end the wait at
// once; everything else (refused, keys not yet installed, cloud-init still
// running, a reboot dropping the connection) is retried until the
// deadline.
func reach(ctx context.Context, w *waiter, addr string, cfg *ssh.ClientConfig, check *hostKeyCheck) (*ssh.Client, error) {
	var client *ssh.Client
	err := w.poll(ctx, addr, func(ctx context.Context) (bool, string, error) {
		waitingFor := "ssh on " + addr
		if client == nil {
			c, err := dialSSH(ctx, addr, cfg, check)
			if err != nil {
				return false, waitingFor, err
			}
			client = c
		}
		state, out, err := cloudInitStatus(ctx, client)
		if err != nil {
			// The guest went away under us (cloud-init may reboot it):
			// connect again on the next try.
			client.Close()
			client = nil
			return false, waitingFor, err
		}
		switch state {
		case "done", "disabled", "absent":
			return true, "", nil
		case "error":
			return false, "", permanent{&CloudInitError{VM: w.vm, Address: addr, Output: out}}
		}
		return false, "cloud-init on " + addr, fmt.Errorf("cloud-init status: %s", state)
	})
	if err != nil {
		if client != nil {
			client.Close()
		}
		return nil, err
	}
	return client, nil
}

// dialSSH makes one connection and logs in. A pinned key whose type the
// guest no longer offers fails the key exchange; a second handshake that
// accepts any type then learns the new key, so the error can name both.
func dialSSH(ctx context.Context, addr string, cfg *ssh.ClientConfig, check *hostKeyCheck) (*ssh.Client, error) {
	c, err := handshake(ctx, addr, cfg)
	var hk *HostKeyError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &hk):
		return nil, permanent{hk}
	case check.pinned != "" && !check.acceptNew && strings.Contains(err.Error(), "no common algorithm for host key"):
		probe := *cfg
		probe.HostKeyAlgorithms = algosFor("")
		probe.Auth = nil
		_, err2 := handshake(ctx, addr, &probe)
		if errors.As(err2, &hk) {
			return nil, permanent{hk}
		}
		typ, _, _ := strings.Cut(check.pinned, " ")
		return nil, permanent{&HostKeyError{VM: check.vm, Address: addr, Pinned: check.pinned, Got: "no " + typ + " key (" + err.Error() + ")"}}
	}
	return nil, err
}

func handshake(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(handshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() {
		if cc != nil {
			cc.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), nil
}

// cloudInitStatus asks the guest for `cloud-init status --long`. state is
// what cloud-init says ("done", "running", "not started", "error",
// "disabled"; cloud-init cmd/status.py), or "absent" when the guest has no
// cloud-init (the shell's 127), which is accepted: not every image uses it.
// A degraded "done" (exit 2, recoverable errors) is done. err is a
// connection problem, not an answer.
func cloudInitStatus(ctx context.Context, client *ssh.Client) (state, out string, err error) {
	code, text, err := runCommand(ctx, client, "cloud-init status --long", nil, commandTimeout, nil)
	if err != nil {
		return "", "", err
	}
	if code == 127 {
		return "absent", text, nil
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "status:"); ok {
			return strings.TrimSpace(v), text, nil
		}
	}
	return "unknown (" + firstLine(text) + ")", text, nil
}

// runCommand runs cmd in a new session, feeding stdin, and returns its
// exit code and combined output (the last 64 KiB); lines also go to out.
// err is a failure to run it at all, or a session cut off by ctx or
// timeout.
func runCommand(ctx context.Context, client *ssh.Client, cmd string, stdin []byte, timeout time.Duration, out *lineWriter) (int, string, error) {
	sess, err := client.NewSession()
	if err != nil {
		return 0, "", err
	}
	defer sess.Close()
	buf := &tailBuffer{max: 64 << 10}
	// The session copies stdout and stderr in two goroutines.
	w := &syncWriter{w: buf}
	if out != nil {
		w.w = io.MultiWriter(buf, out)
	}
	sess.Stdout, sess.Stderr = w, w
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	rctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	stop := context.AfterFunc(rctx, func() { sess.Close() })
	err = sess.Run(cmd)
	cut := !stop()
	if out != nil {
		out.flush()
	}
	var exit *ssh.ExitError
	switch {
	case cut:
		if ctx.Err() != nil {
			return 0, buf.String(), ctx.Err()
		}
		return 0, buf.String(), fmt.Errorf("%q did not finish within %s", cmd, durfmt.Format(timeout))
	case errors.As(err, &exit):
		return exit.ExitStatus(), buf.String(), nil
	case err != nil:
		return 0, buf.String(), err
	}
	return 0, buf.String(), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

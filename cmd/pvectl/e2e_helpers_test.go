package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// addGPUMapping makes the PCI mapping gpu0 that example 04's VM names
// (an operator's setup, outside the specs).
func (e *simEnv) addGPUMapping() {
	e.t.Helper()
	err := e.client.Do(context.Background(), "POST", "/cluster/mapping/pci", url.Values{"id": {"gpu0"},
		"map": {"node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14,subsystem-id=10de:1454"}}, nil)
	if err != nil {
		e.t.Fatalf("create the mapping: %v", err)
	}
}

// startSimOpts is startSim with simulator options of the test's own (long
// tasks, faults) and, optionally, a handler in front of the simulator (a
// fault-injecting proxy, whose made-up answers the schema checker would
// refuse: without one, the simulator is checked as startSim's is).
func startSimOpts(t *testing.T, opts pvesim.Options, wrap func(http.Handler) http.Handler) *simEnv {
	t.Helper()
	opts.TokenID, opts.TokenSecret = e2eTokenID, e2eTokenSecret
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if wrap == nil {
		s := simtest.Start(t, simtest.Options{
			Sim:           opts,
			Conformance:   true,
			ClientOptions: []pve.Option{pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond)},
		})
		return &simEnv{t: t, url: s.URL, requests: s.Requests, client: s.Client}
	}
	sim, err := pvesim.New(opts)
	if err != nil {
		t.Fatalf("pvesim.New: %v", err)
	}
	var h http.Handler = sim
	if wrap != nil {
		h = wrap(sim)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		sim.Close()
	})
	env := &simEnv{t: t, url: srv.URL}
	env.client, err = pve.NewClient(srv.URL, pve.WithToken(e2eTokenID, e2eTokenSecret), pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return env
}

// environ is the environment run gives the binary.
func (e *simEnv) environ() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.t.TempDir(),
		"PROXMOX_URL=" + e.url,
		"PROXMOX_TOKEN_ID=" + e2eTokenID,
		"PROXMOX_TOKEN_SECRET=" + e2eTokenSecret,
	}
	return append(env, e.extraEnv...)
}

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bgRun is the binary running in the background.
type bgRun struct {
	t        *testing.T
	cmd      *exec.Cmd
	out, err *syncBuffer
	done     chan struct{}
	cancel   context.CancelFunc
}

// start runs the binary in the background; stdin is in (nil: none).
func (e *simEnv) start(in *os.File, args ...string) *bgRun {
	e.t.Helper()
	if in == nil {
		return e.startEnv(e.environ(), args...)
	}
	return e.startEnvIn(e.environ(), in, args...)
}

// waitFor polls the output until ok holds (bounded: a minute).
func (b *bgRun) waitFor(what string, ok func(stdout, stderr string) bool) {
	b.t.Helper()
	for range 3000 {
		if ok(b.out.String(), b.err.String()) {
			return
		}
		select {
		case <-b.done:
			if ok(b.out.String(), b.err.String()) {
				return
			}
			b.t.Fatalf("pvectl ended before %s\nstdout:\n%s\nstderr:\n%s", what, b.out, b.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.t.Fatalf("timed out waiting for %s\nstdout:\n%s\nstderr:\n%s", what, b.out, b.err)
}

// waitExit is wait, failing the test unless the run exited with want.
func (b *bgRun) waitExit(want int) result {
	b.t.Helper()
	return wantExit(b.t, b.wait(), want, b.cmd.Args[1:])
}

func (b *bgRun) signal(sig os.Signal) {
	b.t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil {
		b.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait ends the run and returns what it printed; the secret must appear nowhere.
func (b *bgRun) wait() result {
	b.t.Helper()
	<-b.done
	res := result{code: b.cmd.ProcessState.ExitCode(), stdout: b.out.String(), stderr: b.err.String()}
	if strings.Contains(res.stdout+res.stderr, e2eTokenSecret) {
		b.t.Errorf("pvectl printed the token secret")
	}
	return res
}

// vmsSpec is n VMs without vmid, each after the ones listed in deps.
func vmsSpec(names []string, deps map[string]string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "---\nkind: QemuVM\nname: %s\n", n)
		if d := deps[n]; d != "" {
			fmt.Fprintf(&b, "dependsOn: [QemuVM/%s]\n", d)
		}
		b.WriteString("spec:\n  memory: 512\n  cores: 1\n")
	}
	return b.String()
}

// neverAnswers listens on loopback, accepts connections and never
// answers: a hung PVE. It returns the http URL and a channel that gets
// each accepted connection's arrival.
func neverAnswers(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	accepted := make(chan struct{}, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String(), accepted
}

// openPTY returns a pseudo-terminal pair (Linux): the binary gets the
// terminal end as its stdin, the test types on the other.
func openPTY(t *testing.T) (typer, terminal *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here (%v): the prompt decision is covered by TestApproval", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pty: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		m.Close()
	})
	return m, s
}

// lastJSONLine decodes the last line of JSON-lines output.
func lastJSONLine(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	return m
}

// addresses lists the address of each {address, …} object of a summary list.
func addresses(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			a, _ := m["address"].(string)
			out = append(out, a)
		}
	}
	return out
}

// runEnv runs the binary with exactly env (plus PATH and HOME).
func (e *simEnv) runEnv(want int, env []string, args ...string) result {
	e.t.Helper()
	return e.startEnv(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.t.TempDir()}, env...), args...).waitExit(want)
}

// startEnv is start with exactly env.
func (e *simEnv) startEnv(env []string, args ...string) *bgRun {
	e.t.Helper()
	return e.startEnvIn(env, nil, args...)
}

func (e *simEnv) startEnvIn(env []string, in *os.File, args ...string) *bgRun {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, pvectlBin, args...)
	cmd.Env = env
	b := &bgRun{t: e.t, cmd: cmd, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{}), cancel: cancel}
	cmd.Stdout, cmd.Stderr = b.out, b.err
	if in != nil {
		cmd.Stdin = in
	}
	if err := cmd.Start(); err != nil {
		cancel()
		e.t.Fatalf("start pvectl: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		close(b.done)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

// containsAll fails the test for each of wants that got lacks; what names
// got in the message.
func containsAll(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}
}

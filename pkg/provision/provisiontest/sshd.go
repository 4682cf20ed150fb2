package provisiontest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// RequireEnv, set to 1 (as .ci/run does), turns a missing tool from a
// skip into a failure, so CI never passes by skipping.
const RequireEnv = "PVECTL_REQUIRE_TOOLS"

// Require skips the test, naming what is missing and how to install it,
// unless every tool is found; with PVECTL_REQUIRE_TOOLS=1 it fails
// instead. "sshd" is also looked for in /usr/sbin.
func Require(tb testing.TB, tools ...string) {
	tb.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := lookTool(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("needs %s, not installed here (Debian: apt-get install openssh-server openssh-client ansible-core puppet-agent)", strings.Join(missing, ", "))
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("%s, and %s=1 forbids skipping", msg, RequireEnv)
	}
	tb.Skip(msg)
}

func lookTool(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		if fi, err2 := os.Stat(filepath.Join(dir, name)); err2 == nil && fi.Mode()&0o111 != 0 {
			return filepath.Join(dir, name), nil
		}
	}
	return "", err
}

// SSHD is an OpenSSH server of one test, on 127.0.0.x and a high port,
// letting the current user in with a generated key. It is stopped when
// the test ends.
type SSHD struct {
	Host string // 127.0.0.x
	Port int
	User string // the current user: sshd runs as it
	// ClientKey is the key authorized to log in; KeyPEM is its unencrypted
	// OpenSSH PEM and KeyPath a 0600 file holding it.
	ClientKey ed25519.PrivateKey
	KeyPEM    []byte
	KeyPath   string
	// HostKey is the server's current host key.
	HostKey ssh.PublicKey
	// Dir holds the server's files; BinDir is first on the login's PATH
	// (the cloud-init stand-in lives there).
	Dir, BinDir string

	tb      testing.TB
	bin     string
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
	config  string
}

// StartSSHD starts an sshd for the test. Its cloud-init answers "done"
// until SetCloudInit says otherwise. Under root it creates sshd's
// privilege separation directory /run/sshd if missing, as the Debian
// service does.
func StartSSHD(tb testing.TB) *SSHD {
	tb.Helper()
	Require(tb, "sshd")
	bin, _ := lookTool("sshd")
	u, err := user.Current()
	if err != nil {
		tb.Fatalf("current user: %v", err)
	}
	dir, err := os.MkdirTemp("", "pvectl-sshd-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	s := &SSHD{User: u.Username, Dir: dir, BinDir: filepath.Join(dir, "bin"), tb: tb, bin: bin,
		logPath: filepath.Join(dir, "sshd.log"), config: filepath.Join(dir, "sshd_config")}
	if err := os.Mkdir(s.BinDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			tb.Fatalf("sshd needs /run/sshd under root: %v", err)
		}
	} else {
		// The guest's passwordless sudo, for a login that is not root.
		s.writeScript("sudo", "#!/bin/sh\n[ \"$1\" = -n ] && shift\nexec \"$@\"\n")
	}

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := ssh.MarshalPrivateKey(priv, "pvectl-test")
	if err != nil {
		tb.Fatal(err)
	}
	s.ClientKey, s.KeyPEM = priv, pem.EncodeToMemory(blk)
	s.KeyPath = filepath.Join(dir, "id_ed25519")
	mustWrite(tb, s.KeyPath, s.KeyPEM, 0o600)
	signer, _ := ssh.NewSignerFromKey(priv)
	mustWrite(tb, filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600)
	s.newHostKey()
	s.SetCloudInit("done")

	s.Host = pickHost()
	var lastErr error
	for range 5 {
		s.Port = freePort(tb, s.Host)
		if lastErr = s.start(); lastErr == nil {
			tb.Cleanup(s.Stop)
			return s
		}
	}
	tb.Fatalf("start sshd: %v", lastErr)
	return nil
}

// Addr is host:port.
func (s *SSHD) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func (s *SSHD) newHostKey() {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := ssh.MarshalPrivateKey(priv, "pvectl-test-host")
	if err != nil {
		s.tb.Fatal(err)
	}
	mustWrite(s.tb, filepath.Join(s.Dir, "host_ed25519"), pem.EncodeToMemory(blk), 0o600)
	signer, _ := ssh.NewSignerFromKey(priv)
	s.HostKey = signer.PublicKey()
}

// start runs sshd in the foreground (-D) with its log in a file, and
// waits for it to listen. StrictModes is off because the test's files sit
// under the shared /tmp, and PAM because a test has no PAM session to
// open; SetEnv puts BinDir first on the login's PATH.
func (s *SSHD) start() error {
	cfg := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
PidFile none
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers %s
SetEnv PATH=%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LogLevel VERBOSE
Subsystem sftp internal-sftp
`, s.Port, s.Host, filepath.Join(s.Dir, "host_ed25519"), filepath.Join(s.Dir, "authorized_keys"), s.User, s.BinDir)
	if atLeast(sshdVersion(s.bin), 9, 8) {
		// OpenSSH 9.8 penalises sources whose logins fail by refusing
		// them for a while; the tests' retried logins come from loopback.
		cfg += "PerSourcePenalties no\n"
	}
	if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
		return err
	}
	before := len(s.readLog())
	s.cmd = exec.Command(s.bin, "-D", "-f", s.config, "-E", s.logPath)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.exited)
	want := fmt.Sprintf("Server listening on %s port %d", s.Host, s.Port)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.readLog()[before:], want) {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("sshd exited: %s", strings.TrimSpace(s.readLog()[before:]))
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.Stop()
	return fmt.Errorf("sshd did not listen within 15s: %s", strings.TrimSpace(s.readLog()[before:]))
}

// sshdVersion is OpenSSH's major and minor version, from `sshd -V` (or
// the usage text older ones print for it).
func sshdVersion(bin string) [2]int {
	out, _ := exec.Command(bin, "-V").CombinedOutput()
	var v [2]int
	if _, rest, ok := strings.Cut(string(out), "OpenSSH_"); ok {
		fmt.Sscanf(rest, "%d.%d", &v[0], &v[1])
	}
	return v
}

func atLeast(v [2]int, major, minor int) bool {
	return v[0] > major || v[0] == major && v[1] >= minor
}

// Stop ends the server (the listener; sessions end with their clients).
func (s *SSHD) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	s.cmd = nil
}

// RotateHostKey restarts the server, same address, with a new host key,
// as a rebuilt (or impersonated) guest would present.
func (s *SSHD) RotateHostKey() {
	s.tb.Helper()
	s.Stop()
	s.newHostKey()
	if err := s.start(); err != nil {
		s.tb.Fatalf("restart sshd: %v", err)
	}
}

// Connections counts the connections sshd accepted so far. sshd logs
// "Connection from" before it sends its banner, so a client that got as
// far as SSH is counted by the time it returns.
func (s *SSHD) Connections() int {
	return strings.Count(s.readLog(), "Connection from ")
}

func (s *SSHD) readLog() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// SetCloudInit sets what `cloud-init status` answers on the following
// calls: one state per call, the last repeating ("running", "done").
// "error" answers as a failed cloud-init does (exit 1, with detail),
// "degraded" as a done one with recoverable errors (exit 2);
// "absent" removes the command, as on an image without cloud-init.
func (s *SSHD) SetCloudInit(states ...string) {
	s.tb.Helper()
	path := filepath.Join(s.BinDir, "cloud-init")
	if len(states) == 1 && states[0] == "absent" {
		_ = os.Remove(path)
		return
	}
	counter := filepath.Join(s.Dir, "cloud-init.calls")
	_ = os.Remove(counter)
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# stand-in for cloud-init status (cloud-init cmd/status.py output)\n")
	fmt.Fprintf(&b, "n=$(cat %s 2>/dev/null || echo 0)\necho $((n+1)) > %s\ncase $n in\n", counter, counter)
	for i, st := range states {
		pat := strconv.Itoa(i)
		if i == len(states)-1 {
			pat = "*"
		}
		fmt.Fprintf(&b, "%s) %s ;;\n", pat, cloudInitAnswer(st))
	}
	b.WriteString("esac\n")
	s.writeScript("cloud-init", b.String())
}

func cloudInitAnswer(state string) string {
	switch state {
	case "error":
		return `echo "status: error"; echo "extended_status: error - done"; echo "errors:"; echo "	- (scripts_user) RuntimeError: test says cloud-init failed"; exit 1`
	case "degraded":
		// done with recoverable errors: exit 2 (cloud-init cmd/status.py)
		return `echo "status: done"; echo "extended_status: degraded done"; exit 2`
	case "running", "not started", "done", "disabled":
		return fmt.Sprintf(`echo "status: %s"; echo "extended_status: %s"`, state, state)
	}
	return fmt.Sprintf(`echo "status: %s"`, state)
}

func (s *SSHD) writeScript(name, text string) {
	// Renamed into place: a session may be running the old one.
	tmp := filepath.Join(s.BinDir, "."+name+".tmp")
	mustWrite(s.tb, tmp, []byte(text), 0o755)
	if err := os.Rename(tmp, filepath.Join(s.BinDir, name)); err != nil {
		s.tb.Fatal(err)
	}
}

func mustWrite(tb testing.TB, path string, data []byte, mode os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		tb.Fatal(err)
	}
}

// pickHost spreads tests over 127.0.0.2–254; 127.0.0.1 where the others
// cannot be bound (not Linux).
func pickHost() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(250))
	host := fmt.Sprintf("127.0.0.%d", n.Int64()+3)
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		return "127.0.0.1"
	}
	l.Close()
	return host
}

func freePort(tb testing.TB, host string) int {
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

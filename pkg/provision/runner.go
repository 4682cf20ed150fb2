package provision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// tailLines is how many output lines a RunError keeps.
const tailLines = 20

// RunError is a provisioning file that failed. Tail is the end of its
// output; the hash of the file was not written.
type RunError struct {
	VM   string
	File string
	Err  error    // the exit status, or why it could not run
	Tail []string // last lines of its output
}

func (e *RunError) Error() string {
	msg := e.Brief()
	if len(e.Tail) > 0 {
		msg += "; last output:\n" + indent(strings.Join(e.Tail, "\n"))
	}
	return msg
}

// Brief is the error without its output's tail: for a view that printed
// the output as it came, so it is shown once.
func (e *RunError) Brief() string {
	return fmt.Sprintf("vm %s: provision file %s failed: %v", e.VM, e.File, e.Err)
}

func (e *RunError) Unwrap() error { return e.Err }

// session is what the runners of one Run share: the verified guest, the
// login, and a private temp dir (0700) for the files ansible needs (the
// known_hosts file, the public key, the agent's socket; never the key).
type session struct {
	vm      string
	host    string // IP
	port    int
	user    string
	auth    *Auth
	client  *ssh.Client
	hostKey ssh.PublicKey
	dir     string
	opts    *Options

	once       sync.Once
	agent      *keyAgent // serves the key to ansible's ssh; nil until needed
	ansibleEnv []string
	ansibleErr error
	keyArgs    []string
}

// lineWriter splits output into lines for Options.Output and keeps the
// last lines for an error. Lines are redacted of the private key's text.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	emit    func(string)
	redact  func(string) string
	tail    []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := strings.IndexByte(string(w.partial), '\n')
		if i < 0 {
			break
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	// A line without end is cut at 64 KiB rather than held forever.
	if len(w.partial) > 64<<10 {
		w.line(string(w.partial))
		w.partial = nil
	}
	return len(p), nil
}

func (w *lineWriter) line(s string) {
	s = strings.TrimRight(s, "\r")
	if w.redact != nil {
		s = w.redact(s)
	}
	w.tail = append(w.tail, s)
	if len(w.tail) > tailLines {
		w.tail = w.tail[len(w.tail)-tailLines:]
	}
	if w.emit != nil {
		w.emit(s)
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.line(string(w.partial))
		w.partial = nil
	}
}

func (w *lineWriter) lastLines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.tail...)
}

// run runs one file and returns a *RunError when it fails.
func (s *session) run(ctx context.Context, f File) error {
	out := &lineWriter{emit: s.opts.Output, redact: s.auth.redact}
	var err error
	kind, kerr := KindOf(f.Name)
	switch {
	case kerr != nil:
		err = kerr
	case kind == Playbook:
		err = s.ansible(ctx, f, out)
	default:
		err = s.puppet(ctx, f, out)
	}
	out.flush()
	if err == nil {
		return nil
	}
	return &RunError{VM: s.vm, File: f.Name, Err: errors.New(s.auth.redact(err.Error())), Tail: out.lastLines()}
}

// ansible runs ansible-playbook from here against the guest. Its ssh is
// held to what pvectl verified: a known_hosts file with the one key pvectl
// checked, strict checking, the same host key algorithm, batch mode (it
// never prompts). ANSIBLE_SSH_ARGS carries these because OpenSSH takes the
// first value of an option and ansible puts ssh_args first, so an
// ansible.cfg's host_key_checking=False cannot weaken them (ansible
// plugins/connection/ssh.py, _build_command).
func (s *session) ansible(ctx context.Context, f File, out *lineWriter) error {
	s.once.Do(func() { s.ansibleEnv, s.keyArgs, s.ansibleErr = s.prepareAnsible() })
	if s.ansibleErr != nil {
		return s.ansibleErr
	}
	path, err := filepath.Abs(f.Path)
	if err != nil {
		return err
	}
	args := []string{"-i", s.host + ",", "-u", s.user}
	args = append(args, s.keyArgs...)
	args = append(args, "-e", fmt.Sprintf(`{"ansible_port": %d}`, s.port), path)
	bin := s.opts.AnsiblePlaybook
	if bin == "" {
		bin = "ansible-playbook"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = filepath.Dir(path)
	cmd.Env = s.ansibleEnv
	cmd.Stdout, cmd.Stderr = out, out
	// ssh's ControlPersist master outlives ansible-playbook; it must not
	// hold the run open if it kept an output pipe.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		err = nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("%s not found: install ansible-core", bin)
	}
	return err
}

// prepareAnsible writes the known_hosts file and the public key file,
// starts the agent that signs with the private key, once per Run, and
// builds ansible-playbook's environment (childEnv).
func (s *session) prepareAnsible() (env, keyArgs []string, err error) {
	kh, err := writeKnownHosts(s.dir, net.JoinHostPort(s.host, strconv.Itoa(s.port)), s.hostKey)
	if err != nil {
		return nil, nil, err
	}
	sshArgs := []string{
		"-o", "UserKnownHostsFile=" + shellQuote(kh),
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "HostKeyAlgorithms=" + strings.Join(algosFor(Pin(s.hostKey)), ","),
		"-o", "BatchMode=yes",
	}
	// One ssh connection serves every task and playbook of the run; pvectl
	// closes it when the run ends (closeAnsible). A socket path must fit
	// in sun_path (108 bytes), else each task connects on its own.
	if cp := s.controlPath(); len(cp) < 100 {
		sshArgs = append(sshArgs, "-o", "ControlMaster=auto", "-o", "ControlPersist=60s", "-o", "ControlPath="+shellQuote(cp))
	} else {
		sshArgs = append(sshArgs, "-o", "ControlMaster=no")
	}
	// ssh signs with pvectl's in-process agent (never a key file), and
	// offers only the key the public key file names.
	ag, err := startAgent(s.dir, s.auth.signers)
	if err != nil {
		return nil, nil, err
	}
	s.agent = ag
	sshArgs = append(sshArgs, "-o", "IdentityAgent="+shellQuote(ag.path))
	if len(s.auth.signers) == 1 {
		// A public key file as identity makes ssh use that key of the
		// agent, and only it.
		pub := filepath.Join(s.dir, "id.pub")
		if err := os.WriteFile(pub, ssh.MarshalAuthorizedKey(s.auth.signers[0].PublicKey()), 0o600); err != nil {
			return nil, nil, fmt.Errorf("write the public key for ansible: %w", err)
		}
		keyArgs = []string{"--private-key", pub}
		sshArgs = append(sshArgs, "-o", "IdentitiesOnly=yes")
	}
	base := s.opts.Env
	if base == nil {
		base = os.Environ()
	}
	set := map[string]string{
		"ANSIBLE_SSH_ARGS":            strings.Join(sshArgs, " "),
		"ANSIBLE_HOST_KEY_CHECKING":   "True",
		"ANSIBLE_RETRY_FILES_ENABLED": "False",
		EnvAgent:                      ag.path,
	}
	// Pipelining sends each module over the task's one ssh command
	// instead of copying it first: several round trips fewer per task.
	// It needs sudo without requiretty, which current cloud images have;
	// ANSIBLE_PIPELINING=False in the environment turns it off.
	if !hasEnv(base, "ANSIBLE_PIPELINING") {
		set["ANSIBLE_PIPELINING"] = "True"
	}
	env = childEnv(base, append(s.auth.secretValues(), s.opts.Secrets...), set)
	return env, keyArgs, nil
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

func (s *session) controlPath() string { return filepath.Join(s.dir, "cm") }

// closeAnsible ends the ControlPersist master of this run, if one started,
// so no ssh process outlives pvectl's work.
func (s *session) closeAnsible() {
	cp := s.controlPath()
	if _, err := os.Stat(cp); err != nil {
		return
	}
	bin := s.opts.SSH
	if bin == "" {
		bin = "ssh"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-o", "ControlPath="+cp, "-O", "exit", "pvectl-control")
	cmd.WaitDelay = time.Second
	_ = cmd.Run()
}

// puppet copies the manifest to a fresh directory under /tmp on the guest
// over the verified connection and applies it there, through `sudo -n`
// (never a password prompt) unless the user is root. --detailed-exitcodes
// makes resource failures visible: 0 and 2 (changes made) succeed, 4 and 6
// (failures) do not.
func (s *session) puppet(ctx context.Context, f File, out *lineWriter) error {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	sudo := ""
	if s.user != "root" {
		sudo = "sudo -n "
	}
	name := shellQuote(filepath.Base(f.Path))
	script := `d=$(mktemp -d /tmp/pvectl.XXXXXXXX) || exit 1; ` +
		`cat > "$d"/` + name + ` || { rm -rf "$d"; exit 1; }; ` +
		`p=$(command -v puppet || echo /opt/puppetlabs/bin/puppet); ` +
		sudo + `"$p" apply --detailed-exitcodes --color=false "$d"/` + name + `; rc=$?; rm -rf "$d"; exit $rc`
	code, _, err := runCommand(ctx, s.client, script, data, 0, out)
	switch {
	case err != nil:
		return err
	case code == 0 || code == 2:
		return nil
	case code == 127:
		return errors.New("exit status 127: puppet is not installed on the guest")
	}
	return fmt.Errorf("exit status %d", code)
}

// shellQuote quotes s for sh (and for ansible's shlex split of ssh args).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

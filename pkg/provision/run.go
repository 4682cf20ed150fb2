package provision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"
)

// Target is one guest to provision.
type Target struct {
	// VM is the guest's name: in every message, and the DNS name's label.
	VM string
	// Description is the guest's live description; its blocks say what
	// already ran and which host key is pinned.
	Description string
	// Files run in this order (those Pending selects).
	Files  []File
	Policy Policy
	// Lookup says where the address comes from.
	Lookup Lookup
	// User (see ResolveUser) and Port (0 means 22) of the SSH login.
	User string
	Port int
	Auth *Auth
	// AcceptNewHostKey trusts a host key that differs from the pin and
	// pins it: set when the guest was created or replaced in this run (a
	// clone carries its template's pin), or when the user asked to re-pin.
	AcceptNewHostKey bool
}

// Options are the caller's hooks and limits; the zero value of each field
// has a default.
type Options struct {
	// Timeout bounds reaching the guest (address, SSH, cloud-init) as one
	// wait: the spec's provisionTimeout, DefaultTimeout when zero. The
	// files themselves run until they end or ctx is cancelled.
	Timeout time.Duration
	// PollInterval is the first pause between tries (DefaultInterval when
	// zero); it doubles up to 5 s.
	PollInterval time.Duration
	// Progress gets one line per step and per change of what is awaited.
	Progress func(msg string)
	// FileStarted, when set, gets each file's name as it starts to run.
	FileStarted func(name string)
	// Output gets each line the files' tools print (the caller prefixes
	// it with the resource). The private key's text never reaches it.
	Output func(line string)
	// SaveDescription writes the guest's description. Run calls it after
	// pinning a new host key and after each file that succeeds, with the
	// whole new description, so a later failure keeps earlier successes.
	// Required.
	SaveDescription func(ctx context.Context, desc string) error
	// AnsiblePlaybook and SSH name the executables ("ansible-playbook",
	// "ssh" on PATH when empty).
	AnsiblePlaybook, SSH string
	// Env is the environment ansible-playbook's is picked from
	// (os.Environ() when nil): only the variables childEnv allows pass,
	// never PROXMOX_* (see docs/provisioning.md).
	Env []string
	// Secrets are values ansible-playbook's environment never holds, under
	// any name: the Connection's token secret, the spec's secrets.
	Secrets []string
	// TempDir is where Run's private directory (known_hosts, public key,
	// agent socket) is made and removed again, and where directories of
	// killed runs are removed; os.TempDir() when empty.
	TempDir string
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o *Options) interval() time.Duration {
	if o.PollInterval > 0 {
		return o.PollInterval
	}
	return DefaultInterval
}

// Result is what a Run did.
type Result struct {
	// Ran are the files that ran and succeeded, in order.
	Ran []Step
	// Address is where the guest was reached (host:port); "" when nothing
	// was pending and no connection was made.
	Address string
	// Description is the description as last saved (Target.Description
	// when nothing was saved).
	Description string
}

// Run provisions one guest. It runs the files Pending selects and returns
// at once, without resolving an address or opening any connection, when
// there are none. Otherwise it finds the address, waits (within
// Options.Timeout) for SSH and for cloud-init, checks the host key against
// the pin (pinning it on first use), and runs the files in order, saving
// each one's hash as it succeeds. The first failure ends the run.
func Run(ctx context.Context, t Target, o Options) (Result, error) {
	res := Result{Description: t.Description}
	steps, err := pendingSteps(t, &o)
	if err != nil || len(steps) == 0 {
		return res, err
	}
	st, _ := ParseDescription(t.Description) // Pending parsed it already
	port, user := t.login()

	w := newWaiter(t.VM, &o)
	ip, err := resolve(ctx, w, t.VM, t.Lookup)
	if err != nil {
		return res, err
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	res.Address = addr
	check := &hostKeyCheck{vm: t.VM, addr: addr, pinned: st.HostKey, acceptNew: t.AcceptNewHostKey}
	client, err := reach(ctx, w, addr, clientConfig(t, st, user, check), check)
	if err != nil {
		return res, err
	}
	defer client.Close()
	say(o.Progress, "vm %s: reached %s as %s", t.VM, addr, user)

	key := check.key()
	if pin := Pin(key); pin != st.HostKey {
		say(o.Progress, "vm %s: pinning ssh host key %s", t.VM, pin)
		// nextState also turns a legacy block into pvectl's.
		st = nextState(st, t.Files, nil)
		st.HostKey = pin
		if err := saveState(ctx, t.VM, &o, &res, st); err != nil {
			return res, err
		}
	}

	dir, err := makeRunDir(o.TempDir)
	if err != nil {
		return res, fmt.Errorf("vm %s: %w", t.VM, err)
	}
	sess := &session{vm: t.VM, host: ip.String(), port: port, user: user, auth: t.Auth,
		client: client, hostKey: key, dir: dir, opts: &o}
	defer os.RemoveAll(dir)
	defer sess.agent.close()
	defer sess.closeAnsible()

	ran := map[string]string{}
	for i, step := range steps {
		say(o.Progress, "vm %s: running %s (%s) [%d/%d]", t.VM, step.File.Name, step.Reason, i+1, len(steps))
		if o.FileStarted != nil {
			o.FileStarted(step.File.Name)
		}
		if err := sess.run(ctx, step.File); err != nil {
			return res, err
		}
		ran[step.File.Name] = step.File.Hash
		res.Ran = append(res.Ran, step)
		st = nextState(st, t.Files, ran)
		if err := saveState(ctx, t.VM, &o, &res, st); err != nil {
			return res, err
		}
		say(o.Progress, "vm %s: %s done", t.VM, step.File.Name)
	}
	return res, nil
}

// pendingSteps are the files Run is to run (Pending), none when nothing
// is pending; with some, it refuses a Run that cannot save the
// description or log in.
func pendingSteps(t Target, o *Options) ([]Step, error) {
	if t.VM == "" {
		return nil, errors.New("provision: no vm name")
	}
	steps, err := Pending(t.Description, t.Files, t.Policy)
	if err != nil {
		return nil, fmt.Errorf("vm %s: %w", t.VM, err)
	}
	if len(steps) == 0 {
		return nil, nil
	}
	if o.SaveDescription == nil {
		return nil, errors.New("provision: Options.SaveDescription is required")
	}
	if t.Auth == nil {
		return nil, fmt.Errorf("vm %s: no ssh key (see LoadAuth)", t.VM)
	}
	return steps, nil
}

// login is the SSH port and user, defaulted (22, root).
func (t *Target) login() (port int, user string) {
	port = t.Port
	if port == 0 {
		port = 22
	}
	user = t.User
	if user == "" {
		user = "root"
	}
	return port, user
}

// clientConfig is the SSH login as user with the target's keys; check
// judges the host key. It offers the pinned key's algorithms (algosFor),
// all of them when a new key is to be accepted anyway.
func clientConfig(t Target, st State, user string, check *hostKeyCheck) *ssh.ClientConfig {
	pinned := st.HostKey
	if t.AcceptNewHostKey {
		pinned = ""
	}
	return &ssh.ClientConfig{
		User:              user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(t.Auth.signers...)},
		HostKeyCallback:   check.callback,
		HostKeyAlgorithms: algosFor(pinned),
	}
}

// saveState writes next into the guest's description, res.Description,
// and saves it (Options.SaveDescription) when that changed it.
func saveState(ctx context.Context, vm string, o *Options, res *Result, next State) error {
	d, err := WriteDescription(res.Description, next)
	if err != nil {
		return fmt.Errorf("vm %s: %w", vm, err)
	}
	if d == res.Description {
		return nil
	}
	if err := o.SaveDescription(ctx, d); err != nil {
		return fmt.Errorf("vm %s: save description: %w", vm, err)
	}
	res.Description = d
	return nil
}

// nextState is the block after the files in ran succeeded: one entry per
// listed file, in list order. A file that ran gets its new hash; one that
// matched its record keeps it (a legacy record becomes the file's hash); a
// changed one that has not run yet keeps its old hash, so it still reads
// as changed; entries of files no longer listed are dropped.
func nextState(st State, files []File, ran map[string]string) State {
	next := State{HostKey: st.HostKey}
	for _, f := range files {
		if h, ok := ran[f.Name]; ok {
			next.Files = append(next.Files, FileHash{Name: f.Name, Hash: h})
			continue
		}
		rec, ok := st.Hash(f.Name)
		switch {
		case !ok:
		case f.matches(rec, st.Legacy):
			next.Files = append(next.Files, FileHash{Name: f.Name, Hash: f.Hash})
		case !st.Legacy:
			next.Files = append(next.Files, FileHash{Name: f.Name, Hash: rec})
		}
	}
	return next
}

func say(progress func(string), format string, args ...any) {
	if progress != nil {
		progress(fmt.Sprintf(format, args...))
	}
}

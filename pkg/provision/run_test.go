package provision_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
)

// rig is one guest for the tests: a real sshd on loopback standing in for
// the VM, a spec directory with provisioning files, and the description
// PVE would hold, written back through SaveDescription.
type rig struct {
	t    *testing.T
	sshd *provisiontest.SSHD
	spec string // the spec's directory: the files live here
	out  string // what the files change on the "guest": runs.log
	auth *provision.Auth

	mu       sync.Mutex
	desc     string
	saves    int
	output   []string
	progress []string
	started  []string // FileStarted's names
}

func newRig(t *testing.T, tools ...string) *rig {
	t.Helper()
	provisiontest.Require(t, append([]string{"sshd", "ssh"}, tools...)...)
	r := &rig{t: t, sshd: provisiontest.StartSSHD(t), spec: t.TempDir(), out: t.TempDir()}
	auth, err := provision.LoadAuth(string(r.sshd.KeyPEM), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { auth.Close() })
	r.auth = auth
	return r
}

// playbook writes an Ansible playbook that appends word to runs.log, or
// fails with word as its message.
func (r *rig) playbook(name, word string, fail bool) {
	task := fmt.Sprintf("ansible.builtin.shell: echo %s >> %s/runs.log", word, r.out)
	if fail {
		task = fmt.Sprintf("ansible.builtin.fail:\n        msg: %q", word)
	}
	r.write(name, fmt.Sprintf("- hosts: all\n  gather_facts: false\n  tasks:\n    - name: %s\n      %s\n", word, task))
}

// manifest writes a Puppet manifest that appends word to runs.log.
func (r *rig) manifest(name, word string) {
	r.write(name, fmt.Sprintf("exec { 'record %s':\n  command => \"/bin/sh -c 'echo %s >> %s/runs.log'\",\n}\n", word, word, r.out))
}

func (r *rig) write(name, text string) {
	r.t.Helper()
	p := filepath.Join(r.spec, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) files(names ...string) []provision.File {
	r.t.Helper()
	var out []provision.File
	for _, n := range names {
		f, err := provision.NewFile(n, filepath.Join(r.spec, n))
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// runs is what the files did on the guest so far, in order.
func (r *rig) runs() []string {
	b, err := os.ReadFile(filepath.Join(r.out, "runs.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func (r *rig) target(files ...string) provision.Target {
	return provision.Target{
		VM:          "app-01",
		Description: r.description(),
		Files:       r.files(files...),
		Lookup:      provision.Lookup{IP: r.sshd.Host},
		User:        r.sshd.User,
		Port:        r.sshd.Port,
		Auth:        r.auth,
	}
}

func (r *rig) description() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.desc
}

func (r *rig) options() provision.Options {
	return provision.Options{
		Timeout:      30 * time.Second,
		PollInterval: 20 * time.Millisecond,
		Progress: func(m string) {
			r.mu.Lock()
			r.progress = append(r.progress, m)
			r.mu.Unlock()
		},
		Output: func(l string) {
			r.mu.Lock()
			r.output = append(r.output, l)
			r.mu.Unlock()
		},
		FileStarted: func(name string) {
			r.mu.Lock()
			r.started = append(r.started, name)
			r.mu.Unlock()
		},
		SaveDescription: func(_ context.Context, d string) error {
			r.mu.Lock()
			r.desc = d
			r.saves++
			r.mu.Unlock()
			return nil
		},
		Env:     testEnv(),
		TempDir: r.t.TempDir(),
	}
}

// testEnv is ansible-playbook's environment in the tests: naming the
// guest's Python spares ansible its interpreter discovery, a remote round
// trip per playbook that only makes the tests slower.
func testEnv() []string {
	env := os.Environ()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		env = append(env, "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	}
	return env
}

func (r *rig) run(t provision.Target) (provision.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return provision.Run(ctx, t, r.options())
}

func ran(res provision.Result) string {
	var s []string
	for _, st := range res.Ran {
		s = append(s, st.File.Name+":"+string(st.Reason))
	}
	return strings.Join(s, " ")
}

func state(t *testing.T, desc string) provision.State {
	t.Helper()
	st, err := provision.ParseDescription(desc)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRunLifecycle is design §4 end to end: the first run runs every file
// and pins the host key; a second opens no connection; an edit runs only
// the edited file; a failure keeps the hashes of the files before it and
// not its own; the fix converges. The user's text survives byte for byte.
func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	r := newRig(t, "ansible-playbook", "puppet")
	const note = "Owned by team A.\nSee [the wiki] — don't touch.  "
	r.desc = note
	r.playbook("playbooks/common.yaml", "common", false)
	r.playbook("playbooks/app.yaml", "app", false)
	r.manifest("site.pp", "site")
	list := []string{"playbooks/common.yaml", "playbooks/app.yaml", "site.pp"}

	res, err := r.run(r.target(list...))
	if err != nil {
		t.Fatalf("first run: %v\noutput:\n%s", err, strings.Join(r.output, "\n"))
	}
	// pvectl's own connection, and one that ansible's ssh keeps for both
	// playbooks (ControlPersist).
	if got := r.sshd.Connections(); got != 2 {
		t.Errorf("first run made %d ssh connections, want 2", got)
	}
	if got, want := ran(res), "playbooks/common.yaml:new playbooks/app.yaml:new site.pp:new"; got != want {
		t.Errorf("first run ran %q, want %q", got, want)
	}
	if got, want := strings.Join(r.runs(), " "), "common app site"; got != want {
		t.Errorf("guest saw %q, want %q", got, want)
	}
	if got, want := strings.Join(r.started, " "), strings.Join(list, " "); got != want {
		t.Errorf("FileStarted got %q, want %q", got, want)
	}
	if res.Address != r.sshd.Addr() {
		t.Errorf("address %q, want %q", res.Address, r.sshd.Addr())
	}
	st := state(t, r.desc)
	if st.HostKey != provision.Pin(r.sshd.HostKey) {
		t.Errorf("pinned %q, want %q", st.HostKey, provision.Pin(r.sshd.HostKey))
	}
	if len(st.Files) != 3 {
		t.Errorf("block records %v, want 3 files", st.Files)
	}
	if !strings.HasPrefix(r.desc, note+"\n[pvectl-provision: ") {
		t.Errorf("user text not kept byte for byte:\n%q", r.desc)
	}

	// Nothing changed: no connection at all.
	conns, saves := r.sshd.Connections(), r.saves
	res, err = r.run(r.target(list...))
	if err != nil || len(res.Ran) != 0 || res.Address != "" {
		t.Fatalf("second run: ran %q at %q, err %v; want nothing", ran(res), res.Address, err)
	}
	if got := r.sshd.Connections(); got != conns {
		t.Errorf("second run opened %d ssh connections, want 0", got-conns)
	}
	if r.saves != saves {
		t.Errorf("second run wrote the description")
	}

	// One playbook edited: only it runs.
	r.playbook("playbooks/app.yaml", "app2", false)
	res, err = r.run(r.target(list...))
	if err != nil {
		t.Fatalf("after edit: %v", err)
	}
	if got, want := ran(res), "playbooks/app.yaml:changed"; got != want {
		t.Errorf("after edit ran %q, want %q", got, want)
	}

	// common edited and app broken: common's new hash is kept, app's old
	// one stays, site does not run.
	before := state(t, r.desc)
	r.playbook("playbooks/common.yaml", "common2", false)
	r.playbook("playbooks/app.yaml", "broken-on-purpose", true)
	res, err = r.run(r.target(list...))
	var re *provision.RunError
	if !errors.As(err, &re) || re.File != "playbooks/app.yaml" {
		t.Fatalf("broken playbook: err %v, want a RunError for playbooks/app.yaml", err)
	}
	if !strings.Contains(err.Error(), "broken-on-purpose") {
		t.Errorf("error lacks the output tail:\n%v", err)
	}
	if got, want := ran(res), "playbooks/common.yaml:changed"; got != want {
		t.Errorf("before the failure ran %q, want %q", got, want)
	}
	after := state(t, r.desc)
	files := r.files(list...)
	if h, _ := after.Hash("playbooks/common.yaml"); h != files[0].Hash {
		t.Errorf("common's hash %s not written (want %s)", h, files[0].Hash)
	}
	if h, _ := after.Hash("playbooks/app.yaml"); h != mustHash(before, "playbooks/app.yaml") {
		t.Errorf("the failed playbook's hash changed to %s", h)
	}
	if got, want := strings.Join(r.runs(), " "), "common app site app2 common2"; got != want {
		t.Errorf("guest saw %q, want %q", got, want)
	}

	// Fixed: it runs, and the next run is clean.
	r.playbook("playbooks/app.yaml", "app3", false)
	if res, err = r.run(r.target(list...)); err != nil || ran(res) != "playbooks/app.yaml:changed" {
		t.Fatalf("after the fix ran %q, err %v", ran(res), err)
	}
	if res, err = r.run(r.target(list...)); err != nil || len(res.Ran) != 0 {
		t.Fatalf("converged run ran %q, err %v", ran(res), err)
	}
	if !strings.HasPrefix(r.desc, note+"\n") {
		t.Errorf("user text lost: %q", r.desc)
	}
}

func mustHash(st provision.State, name string) string {
	h, _ := st.Hash(name)
	return h
}

// TestHostKeyChanged: a guest that presents another key than its pin
// fails closed, naming both fingerprints, and nothing runs; a guest new in
// this run is re-pinned.
func TestHostKeyChanged(t *testing.T) {
	t.Parallel()
	r := newRig(t, "ansible-playbook")
	r.playbook("site.yaml", "one", false)
	if _, err := r.run(r.target("site.yaml")); err != nil {
		t.Fatal(err)
	}
	oldPin := provision.Pin(r.sshd.HostKey)

	r.sshd.RotateHostKey()
	newPin := provision.Pin(r.sshd.HostKey)
	r.playbook("site.yaml", "two", false)
	desc := r.desc
	_, err := r.run(r.target("site.yaml"))
	var hk *provision.HostKeyError
	if !errors.As(err, &hk) {
		t.Fatalf("err %v, want a HostKeyError", err)
	}
	if hk.Pinned != oldPin || hk.Got != newPin {
		t.Errorf("HostKeyError pinned %q got %q, want %q and %q", hk.Pinned, hk.Got, oldPin, newPin)
	}
	for _, want := range []string{oldPin, newPin, r.sshd.Addr(), "app-01", "[pvectl-hostkey: …]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}
	if got := strings.Join(r.runs(), " "); got != "one" {
		t.Errorf("guest saw %q after the mismatch, want only the first run", got)
	}
	if r.desc != desc {
		t.Errorf("description written after the mismatch")
	}

	tg := r.target("site.yaml")
	tg.AcceptNewHostKey = true
	if _, err := r.run(tg); err != nil {
		t.Fatalf("re-pin: %v", err)
	}
	if st := state(t, r.desc); st.HostKey != newPin {
		t.Errorf("pin %q after re-pinning, want %q", st.HostKey, newPin)
	}
}

// TestDNSPath: a guest without ip is found by its A record, asked of the
// connection's DNS server directly.
func TestDNSPath(t *testing.T) {
	t.Parallel()
	r := newRig(t, "ansible-playbook")
	dns := provisiontest.StartDNS(t, map[string]string{"app-01.lab.test": r.sshd.Host})
	r.playbook("site.yaml", "dns", false)
	tg := r.target("site.yaml")
	tg.Lookup = provision.Lookup{DNSDomain: "lab.test", DNSServers: []string{dns.Addr}}
	res, err := r.run(tg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Address != r.sshd.Addr() || dns.Queries() == 0 {
		t.Errorf("address %q after %d queries, want %q", res.Address, dns.Queries(), r.sshd.Addr())
	}
	if got := strings.Join(r.runs(), " "); got != "dns" {
		t.Errorf("guest saw %q", got)
	}
}

// TestPuppetFailure: a manifest whose resource fails is a failure (puppet
// apply's detailed exit code 4), its output tail in the error, its hash
// unwritten, though the host key pin is kept.
func TestPuppetFailure(t *testing.T) {
	t.Parallel()
	r := newRig(t, "puppet")
	r.write("bad.pp", "exec { 'fails on purpose': command => '/bin/false' }\n")
	_, err := r.run(r.target("bad.pp"))
	var re *provision.RunError
	if !errors.As(err, &re) || re.File != "bad.pp" {
		t.Fatalf("err %v, want a RunError for bad.pp", err)
	}
	if !strings.Contains(err.Error(), "exit status") || !strings.Contains(err.Error(), "fails on purpose") {
		t.Errorf("error lacks the exit status or the tail:\n%v", err)
	}
	st := state(t, r.desc)
	if len(st.Files) != 0 || st.HostKey != provision.Pin(r.sshd.HostKey) {
		t.Errorf("after the failure the description records %v, pin %q; want no file, the pin kept", st.Files, st.HostKey)
	}
}

// Package ansibletest runs a real ansible-playbook, with Debian's
// community.general proxmox modules and python3-proxmoxer, against a PVE
// simulator on loopback over TLS: the suite's second client that no one
// here wrote. A test skips, naming the package, when ansible-playbook is
// missing, and fails instead when PVECTL_REQUIRE_TOOLS=1 (internal/testtool).
package ansibletest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/internal/testtool"
)

// Timeout bounds one ansible-playbook run: the lifecycle play needs
// about 45 s of CPU (a Python process per task, and the modules poll a
// task once a second), several times that on a loaded machine.
const Timeout = 300 * time.Second

// Target is the simulator the playbook talks to.
type Target struct {
	URL     string // https://127.0.0.1:PORT
	TokenID string // user@realm!token
	Secret  string
}

// vars are the connection facts every play gets (api_host, api_user,
// api_token_id, api_token_secret) and the node's name.
func (tg Target) vars(t testing.TB) map[string]any {
	t.Helper()
	u, err := url.Parse(tg.URL)
	if err != nil || u.Scheme != "https" || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("ansibletest: %q is not an https URL on 127.0.0.1", tg.URL)
	}
	user, token, ok := strings.Cut(tg.TokenID, "!")
	if !ok {
		t.Fatalf("ansibletest: token id %q has no '!'", tg.TokenID)
	}
	return map[string]any{
		"api_host": u.Host, "api_user": user, "api_token_id": token, "api_token_secret": tg.Secret,
		"api_url": tg.URL + "/api2/json", "node": "pve",
	}
}

// Playbook runs ansible-playbook on the playbook file against tg with the
// extra variables, and returns its output; a failed run fails the test
// with the output.
func Playbook(t testing.TB, tg Target, playbook string, extra map[string]any) string {
	t.Helper()
	bin := testtool.Path(t, "ansible-playbook", "ansible python3-proxmoxer")
	requireModules(t)
	dir := t.TempDir()
	vars := tg.vars(t)
	for k, v := range extra {
		vars[k] = v
	}
	b, err := json.Marshal(vars)
	if err != nil {
		t.Fatal(err)
	}
	varsFile := filepath.Join(dir, "vars.json")
	if err := os.WriteFile(varsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-i", "localhost,", "-c", "local", "-e", "@"+varsFile, playbook)
	cmd.Env = environ(dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ansible-playbook %s: no end within %s:\n%s", playbook, Timeout, out.String())
	}
	if err != nil {
		t.Fatalf("ansible-playbook %s: %v\n%s", playbook, err, out.String())
	}
	return out.String()
}

// environ is a small, fixed environment: no proxy variables (the
// modules must reach 127.0.0.1 directly), Ansible's state in dir.
func environ(dir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"LANG=C.UTF-8",
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1",
		"ANSIBLE_LOCAL_TEMP=" + filepath.Join(dir, "tmp"),
		"ANSIBLE_REMOTE_TEMP=" + filepath.Join(dir, "tmp"),
		"ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3",
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_RETRY_FILES_ENABLED=0",
		"ANSIBLE_PIPELINING=1",
		"ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks",
		"ANSIBLE_GATHERING=explicit",
		"ANSIBLE_DEPRECATION_WARNINGS=0",
		"ANSIBLE_INVENTORY_UNPARSED_WARNING=0",
		"ANSIBLE_LOCALHOST_WARNING=0",
		"PYTHONWARNINGS=ignore",
	}
}

// Inventory runs ansible-inventory with the community.general.proxmox
// inventory plugin (want_facts: every guest's config, status and
// snapshots) against tg and returns its --list answer.
func Inventory(t testing.TB, tg Target) map[string]any {
	t.Helper()
	bin := testtool.Path(t, "ansible-inventory", "ansible python3-proxmoxer")
	requireModules(t)
	dir := t.TempDir()
	v := tg.vars(t)
	cfg := fmt.Sprintf(`plugin: community.general.proxmox
url: %s
user: %s
token_id: %s
token_secret: %s
validate_certs: false
want_facts: true
`, tg.URL, v["api_user"], v["api_token_id"], v["api_token_secret"])
	inv := filepath.Join(dir, "sim.proxmox.yml")
	if err := os.WriteFile(inv, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-i", inv, "--list")
	cmd.Env = append(environ(dir), "ANSIBLE_INVENTORY_ENABLED=community.general.proxmox", "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("ansible-inventory: %v\n%s%s", err, out.String(), errOut.String())
	}
	var list map[string]any
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("ansible-inventory --list: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	return list
}

// requireModules checks that the Python the modules run with (Debian's,
// ANSIBLE_PYTHON_INTERPRETER) has proxmoxer and requests: without them
// every module fails, so the test skips, or fails under RequireEnv.
func requireModules(t testing.TB) {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import proxmoxer, requests").Run() == nil {
		return
	}
	msg := "/usr/bin/python3 cannot import proxmoxer and requests (apt-get install python3-proxmoxer python3-requests)"
	if os.Getenv(testtool.RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 requires them", msg, testtool.RequireEnv)
	}
	t.Skipf("%s; skipping (set %s=1 to make this a failure)", msg, testtool.RequireEnv)
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// TestE2EAccessAndClusterKinds is issue 21's acceptance for the access
// kinds: one apply of a Role, a Group, an ACL granting the role to the
// group, an LDAP realm whose bind password comes from the environment,
// its sync job, ClusterOptions and a MetricServer makes each as
// specified; the bind password and the metric token reach PVE yet appear
// in no output, plan file or --debug trace; the next plan is clean; an
// unknown privilege is refused by validate (exit 3, file:line).
func TestE2EAccessAndClusterKinds(t *testing.T) {
	const bindPW, token = "Ld4p-bind/pw+secret=", "influx-T0ken-e2e-9f3a"
	s := simtest.Start(t, simtest.Options{
		Sim:           pvesim.Options{TokenID: e2eTokenID, TokenSecret: e2eTokenSecret, TaskDuration: 30 * time.Millisecond, Seed: 1},
		Conformance:   true,
		ClientOptions: []pve.Option{pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond)},
	})
	env := &simEnv{t: t, url: s.URL, requests: s.Requests, client: s.Client}
	env.extraEnv = []string{"LDAP_BIND_PW=" + bindPW, "INFLUX_TOKEN=" + token}
	_, file, _, _ := runtime.Caller(0)
	example := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "examples", "05-access-and-cluster.yaml")

	planFile := filepath.Join(t.TempDir(), "access.plan")
	var outs []string
	for _, args := range [][]string{
		{"validate", "-f", example},
		{"plan", "--debug", "--out", planFile, "-f", example},
		{"apply", "--debug", "--json", "--auto-approve", planFile},
		{"plan", "--debug", "--detailed-exitcode", "-f", example},
	} {
		r := env.run(args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		outs = append(outs, r.stdout, r.stderr)
	}
	saved, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecretForms(t, strings.Join(outs, "\n")+string(saved), bindPW, token)

	// PVE got them: their digests are what the simulator keeps.
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	if got, _ := s.Server.RealmSecret("corp"); got != sum(bindPW) {
		t.Errorf("realm corp's stored bind password is not the one of LDAP_BIND_PW")
	}
	if got, _ := s.Server.MetricToken("influx"); got != sum(token) {
		t.Errorf("metric server influx's stored token is not the one of INFLUX_TOKEN")
	}

	// PVE's API shows each as specified.
	get := func(path string, out any) {
		t.Helper()
		if err := s.Client.Do(t.Context(), "GET", path, nil, out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var role *pve.Config
	get("/access/roles/Operator", &role)
	for _, p := range []string{"VM.Audit", "VM.Console", "VM.PowerMgmt", "VM.Snapshot", "Datastore.Audit"} {
		if role.Get(p) != "1" {
			t.Errorf("role Operator lacks %s: %v", p, role)
		}
	}
	var acl []*pve.Config
	get("/access/acl", &acl)
	granted := false
	for _, e := range acl {
		granted = granted || (e.Get("path") == "/vms" && e.Get("type") == "group" && e.Get("ugid") == "operators" && e.Get("roleid") == "Operator")
	}
	if !granted {
		t.Errorf("no ACL entry granting Operator to group operators on /vms: %v", acl)
	}
	var realm, job, opts, metric *pve.Config
	get("/access/domains/corp", &realm)
	get("/cluster/jobs/realm-sync/corp-nightly", &job)
	get("/cluster/options", &opts)
	get("/cluster/metrics/server/influx", &metric)
	for _, c := range []struct {
		what      string
		cfg       *pve.Config
		key, want string
	}{
		{"realm", realm, "type", "ldap"}, {"realm", realm, "bind_dn", "cn=pve,ou=services,dc=corp,dc=example"},
		{"realm", realm, "password", ""},
		{"sync job", job, "realm", "corp"}, {"sync job", job, "schedule", "02:30"},
		{"options", opts, "keyboard", "en-us"}, {"options", opts, "migration", `{"network":"10.10.0.0/24","type":"secure"}`},
		{"metric server", metric, "port", "8089"}, {"metric server", metric, "token", ""},
	} {
		if got := c.cfg.Get(c.key); got != c.want {
			t.Errorf("%s %s: got %q want %q", c.what, c.key, got, c.want)
		}
	}

	// An unknown privilege: validate exit 3 at its file:line, nothing sent.
	bad := writeSpec(t, "bad-role.yaml", "kind: Role\nname: ops\nspec:\n  privs: [VM.Audit, VM.PowerMgnt]\n")
	before := s.Requests.Total()
	r := env.run("validate", "-f", bad)
	if r.code != 3 || !strings.Contains(r.stderr, "bad-role.yaml:4: Role/ops: privs: \"VM.PowerMgnt\" is not a PVE privilege") {
		t.Errorf("validate of an unknown privilege: exit %d\n%s", r.code, r.stderr)
	}
	r = env.run("plan", "-f", bad)
	if r.code != 3 || s.Requests.Total() != before {
		t.Errorf("plan of an unknown privilege: exit %d, %d requests sent\n%s", r.code, s.Requests.Total()-before, r.stderr)
	}

	// A rotated bind password: onCreate leaves it; always sends it.
	env.extraEnv = []string{"LDAP_BIND_PW=rotated-" + bindPW, "INFLUX_TOKEN=" + token}
	if r := env.run("plan", "--detailed-exitcode", "-f", example); r.code != 0 {
		t.Errorf("plan after the variable changed (secretUpdate: onCreate): exit %d want 0\n%s", r.code, r.stdout)
	}
	rot := writeSpec(t, "rotate.yaml", strings.Replace(readFileT(t, example), "  password: ${LDAP_BIND_PW}\n", "  password: ${LDAP_BIND_PW}\n  secretUpdate: always\n", 1))
	r = env.run("apply", "--auto-approve", "-f", rot)
	if r.code != 0 || !strings.Contains(r.stdout, "password") {
		t.Fatalf("apply with secretUpdate: always: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	assertNoSecretForms(t, r.stdout+r.stderr, "rotated-"+bindPW, bindPW)
	if got, _ := s.Server.RealmSecret("corp"); got != sum("rotated-"+bindPW) {
		t.Errorf("secretUpdate: always did not send the rotated password")
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestE2EImportAccessKinds: import --all writes the role, group, LDAP realm
// (its bind password a ${VAR} placeholder named on stderr), sync job,
// cluster options and metric server that example 05 made, without PVE's
// built-in roles and realms; the documents plan clean.
func TestE2EImportAccessKinds(t *testing.T) {
	const bindPW = "import-bind-pw-7c1e"
	e := startSim(t)
	e.extraEnv = []string{"LDAP_BIND_PW=" + bindPW, "INFLUX_TOKEN=import-token-44d2"}
	e.mustRun(0, "apply", "--auto-approve", "-f", example(t, "05-access-and-cluster.yaml", nil))
	e.extraEnv = nil
	r := e.mustRun(0, "import", "--all")
	for _, want := range []string{"kind: Role\nname: Operator\n", "kind: Group\nname: operators\n", "kind: Realm\nname: corp\n",
		"kind: RealmSyncJob\nname: corp-nightly\n", "kind: ClusterOptions\nname: cluster\n", "kind: MetricServer\nname: influx\n",
		"password: ${REALM_CORP_PASSWORD}"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import output lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, not := range []string{"name: PVEAdmin", "name: pam\n", "pvectl-options", bindPW} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("import output has %q", not)
		}
	}
	if !strings.Contains(r.stderr, "REALM_CORP_PASSWORD") {
		t.Errorf("the placeholder's variable is not named on stderr:\n%s", r.stderr)
	}
	imported := writeFile(t, "all.yaml", r.stdout)
	e.extraEnv = []string{"REALM_CORP_PASSWORD=whatever-it-was"}
	e.mustRun(0, "plan", "-f", imported, "--detailed-exitcode")
}

package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/secret"
)

// oddSecret holds every character JSON, HTML and URL encodings change.
// (PVE URL-unescapes the header value and splits it at its last "=": no
// "+", "%" or "=" in a token secret.)
const oddSecret = `odd"<>&\tok/-5f0c`

// TestE2ESecretEncodingsJSONDebug is issue 17's acceptance for the
// scrubber and saved plans: a token secret and a guest password holding
// `"<>&\` appear in no form (as written, JSON-escaped with or without
// HTML escaping, URL-encoded, base64) in the output of plan, a saved plan,
// its apply and a replan, all with --json and --debug, nor in the plan
// file. The token secret is also in the VM's description, declared secret
// (secretKeys): PVE echoes it JSON-escaped in every config read of the
// --debug trace. The saved plan holds references, and applies.
func TestE2ESecretEncodingsJSONDebug(t *testing.T) {
	const tokenID = "ci@pve!odd"
	const pw = `pw"<>&\ word+/=?%-77`
	env := startSimOpts(t, pvesim.Options{Tokens: []pvesim.Token{{ID: tokenID, Secret: oddSecret}}}, nil)
	grant := url.Values{"path": {"/"}, "roles": {"Administrator"}, "tokens": {tokenID}, "users": {"ci@pve"}}
	if err := env.client.Do(context.Background(), http.MethodPut, "/access/acl", grant, nil); err != nil {
		t.Fatal(err)
	}
	env.extraEnv = []string{"PROXMOX_TOKEN_ID=" + tokenID, "PROXMOX_TOKEN_SECRET=" + oddSecret, "VM_PW=" + pw}
	f := writeSpec(t, "vm.yaml", `kind: QemuVM
name: odd
secretKeys: [description]
spec:
  node: pve
  vmid: 120
  memory: 512
  ide2: local-lvm:cloudinit
  ciuser: admin
  cipassword: ${VM_PW}
  description: ${PROXMOX_TOKEN_SECRET}
`)
	planFile := filepath.Join(t.TempDir(), "odd.plan")
	var outs []string
	for _, args := range [][]string{
		{"validate", "-f", f},
		{"plan", "--json", "--debug", "-f", f},
		{"plan", "--debug", "--out", planFile, "-f", f},
		{"apply", "--json", "--debug", "--auto-approve", planFile},
		{"plan", "--json", "--debug", "--detailed-exitcode", "-f", f},
	} {
		r := env.run(args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		outs = append(outs, r.stdout, r.stderr)
	}
	// The declared key is (sensitive) in the plan's diff, not REDACTED
	// by the scrubber after the fact.
	masked := false
	for _, c := range parsePlan(t, outs[2]).Changes {
		for _, d := range c.Diff {
			if d.Path == "description" {
				masked = d.After == "(sensitive)"
			}
		}
	}
	if !masked {
		t.Errorf("plan --json: description not shown (sensitive):\n%s", outs[2])
	}
	saved, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecretForms(t, string(saved), oddSecret, pw)
	for _, ref := range []string{`"env":"PROXMOX_TOKEN_SECRET"`, `"env":"VM_PW"`} {
		if !strings.Contains(string(saved), ref) {
			t.Errorf("the saved plan lacks the reference %s:\n%s", ref, saved)
		}
	}
	// The user's text, then pvectl's owner block (planner/marks).
	if got := env.vmConfig("odd").Get("description"); !strings.HasPrefix(got, oddSecret+"\n[pvectl-owner: ") {
		t.Errorf("description in PVE %q, want the declared secret (the user's intent)", got)
	}
	// A bad token: PVE's refusal and the client's error both go through
	// the scrubber too.
	env.extraEnv = []string{"PROXMOX_TOKEN_ID=" + tokenID, "PROXMOX_TOKEN_SECRET=" + oddSecret + "x", "VM_PW=" + pw}
	r := env.run("plan", "--json", "--debug", "-f", f)
	outs = append(outs, r.stdout, r.stderr)
	assertNoSecretForms(t, strings.Join(outs, "\n"), oddSecret, pw, oddSecret+"x")
}

// assertNoSecretForms fails when out holds any encoded form of a secret.
func assertNoSecretForms(t *testing.T, out string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, form := range secret.Forms(s) {
			if i := strings.Index(out, form); i >= 0 {
				lo, hi := max(0, i-80), min(len(out), i+len(form)+40)
				t.Errorf("output holds %q (a form of a secret) in:\n…%s…", form, out[lo:hi])
			}
		}
	}
}

// TestE2ESecretInPlainFieldValidate is issue 17's acceptance: a spec with
// ${PROXMOX_TOKEN_SECRET} in a VM's description is refused by validate
// (exit 3, file:line, nothing sent) without showing the secret; declared
// with secretKeys it validates.
func TestE2ESecretInPlainFieldValidate(t *testing.T) {
	env := startSim(t)
	body := "kind: QemuVM\nname: leaky\nspec:\n  memory: 512\n  description: \"token: ${PROXMOX_TOKEN_SECRET}\"\n"
	f := writeSpec(t, "leak.yaml", body)
	for _, cmd := range []string{"validate", "plan"} {
		r := env.mustRun(3, cmd, "-f", f)
		containsAll(t, cmd+" stderr", r.stderr, "leak.yaml:5", "spec.description uses ${PROXMOX_TOKEN_SECRET}", "secretKeys: [description]")
		assertNoSecretForms(t, r.stdout+r.stderr, e2eTokenSecret)
	}
	if n := env.requests.Total(); n != 0 {
		t.Errorf("a refused spec sent %d requests", n)
	}
	declared := writeSpec(t, "ok.yaml", strings.Replace(body, "spec:", "secretKeys: [description]\nspec:", 1))
	env.mustRun(0, "validate", "-f", declared)
}

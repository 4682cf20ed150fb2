package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Issue 10 acceptance (9): plan --out with Connection documents, then
// apply FILE with only the secret in the environment, works — for a named
// connection and for the default one; the plan file holds no secret.
func TestE2ESavedPlanCarriesConnections(t *testing.T) {
	env := startSim(t)
	f := writeSpec(t, "conn.yaml", `kind: Connection
name: lab
spec:
  url: ${LAB_URL}
  tokenId: `+e2eTokenID+`
  tokenSecret: ${LAB_SECRET}
---
kind: Pool
name: via-lab
connection: lab
---
kind: Pool
name: via-default
`)
	plan := filepath.Join(t.TempDir(), "plan.out")
	full := append(env.environ(), "LAB_URL="+env.url, "LAB_SECRET="+e2eTokenSecret)
	r := env.runEnv(0, full, "plan", "-f", f, "--out", plan)
	if !strings.Contains(r.stdout, "pvectl apply "+plan) {
		t.Errorf("plan --out does not say how to apply it:\n%s", r.stdout)
	}
	b, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), e2eTokenSecret) {
		t.Fatal("the plan file holds the token secret")
	}
	containsAll(t, "plan file", string(b), `"LAB_SECRET"`, `"PROXMOX_TOKEN_SECRET"`, `"url":"`+env.url+`"`)

	// Only the secrets: no URL, no token id, no specs.
	secrets := []string{"LAB_SECRET=" + e2eTokenSecret, "PROXMOX_TOKEN_SECRET=" + e2eTokenSecret}
	r = env.runEnv(3, secrets[:1], "apply", plan)
	if !strings.Contains(r.stderr, "set PROXMOX_TOKEN_SECRET") {
		t.Errorf("apply FILE without one secret: want it named, got:\n%s", r.stderr)
	}
	r = env.runEnv(0, secrets, "apply", plan)
	if !strings.Contains(r.stdout, "Apply complete: 2 created.") {
		t.Errorf("apply FILE:\n%s", r.stdout)
	}
	pools, err := env.client.Pools(context.Background())
	if err != nil || !hasPool(pools, "via-lab") || !hasPool(pools, "via-default") {
		t.Errorf("pools after apply FILE: %v %v", pools, err)
	}
}

// Issue 10 acceptance (10): validate needs no secret; plan reports the
// unset variable of a Connection's secret at its file and line.
func TestE2EValidateNeedsNoSecret(t *testing.T) {
	env := startSim(t)
	f := writeSpec(t, "conn.yaml", `kind: Connection
name: lab
spec:
  url: https://pve.lab.example:8006
  tokenId: ci@pve!deploy
  tokenSecret: ${PROXMOX_TOKEN_SECRET}
---
kind: Pool
name: p
connection: lab
`)
	none := []string{}
	r := env.runEnv(0, none, "validate", "-f", f)
	if !strings.Contains(r.stdout, "Valid: 1 resource, 1 connection.") {
		t.Errorf("validate: %s", r.stdout)
	}
	r = env.runEnv(3, none, "plan", "-f", f)
	if !strings.Contains(r.stderr, f+":6: environment variable PROXMOX_TOKEN_SECRET is not set") {
		t.Errorf("plan: want the unset secret at %s:6, got:\n%s", f, r.stderr)
	}
}

// -f - reads the specs from stdin.
func TestE2ESpecsFromStdin(t *testing.T) {
	env := startSim(t)
	in := writeSpec(t, "in.yaml", "kind: Pool\nname: from-stdin\n")
	fh, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r := env.start(fh, "apply", "-f", "-", "--auto-approve").wait()
	if r.code != 0 || !strings.Contains(r.stdout, "Apply complete: 1 created.") {
		t.Fatalf("apply -f -: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = env.mustRun(3, "apply", "-f", "-")
	if !strings.Contains(r.stderr, "-f - reads the specs from stdin") {
		t.Errorf("apply -f - without --auto-approve: %s", r.stderr)
	}
}

// Issue 23 (7): validate needs no variable at all — every example, and a
// spec whose VM password and Connection URL come from unset variables,
// validate with an empty environment (the unset ones named); plan reports
// each at its file:line; a malformed reference stays a validate error.
func TestE2EValidateNeedsNoVariables(t *testing.T) {
	env := startSim(t)
	none := []string{}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// examples/ is one set (its files name each other); the design's
	// examples stand alone.
	env.runEnv(0, none, "validate", "-f", filepath.Join(root, "examples"))
	paths, _ := filepath.Glob(filepath.Join(root, "testdata", "examples", "*.yaml"))
	for _, p := range paths {
		env.runEnv(0, none, "validate", "-f", p)
	}
	f := writeSpec(t, "vars.yaml", `kind: Connection
name: lab
spec:
  url: ${LAB_URL}
  tokenId: ci@pve!deploy
  tokenSecret: ${LAB_SECRET}
---
kind: QemuVM
name: k3s
connection: lab
spec:
  memory: ${K3S_MEMORY}
  cipassword: ${K3S_PW}
`)
	r := env.runEnv(0, none, "validate", "-f", f)
	if !strings.Contains(r.stdout, "Not set here, so their values are checked by plan: K3S_MEMORY, K3S_PW, LAB_SECRET, LAB_URL.") {
		t.Errorf("validate with no variables:\n%s", r.stdout)
	}
	r = env.runEnv(3, none, "plan", "-f", f)
	containsAll(t, "plan stderr", r.stderr, f+":12: environment variable K3S_MEMORY is not set", f+":13: environment variable K3S_PW is not set")
	bad := writeSpec(t, "bad.yaml", "kind: Pool\nname: p\nspec:\n  comment: ${OOPS\n")
	r = env.runEnv(3, none, "validate", "-f", bad)
	if !strings.Contains(r.stderr, bad+":4: unterminated ${") {
		t.Errorf("validate of a malformed reference:\n%s", r.stderr)
	}
}

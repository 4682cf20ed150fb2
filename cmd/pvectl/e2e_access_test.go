package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
)

// accessExample is the shared example 04 cut down to the documents of the
// kinds this test is about (and what they depend on), in a fresh
// directory; it returns the spec's path.
func accessExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "examples", "04-every-kind.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{"Connection", "Pool", "User", "APIToken", "ACL"}
	var docs []string
	for _, d := range strings.Split(string(b), "\n---\n") {
		for _, line := range strings.Split(d, "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok && slices.Contains(keep, strings.TrimSpace(k)) {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) != len(keep) {
		t.Fatalf("example 04: found %d of the documents %v", len(docs), keep)
	}
	return writeSpec(t, "04-access.yaml", strings.Join(docs, "\n---\n")+"\n")
}

// TestE2EAccessKinds is issue 8's acceptance for User, APIToken and ACL:
// the documents of example 04 apply, plan clean, and destroy; the token's
// secret is in secretFile (0600, directory 0700) and in no output of
// plan, apply or destroy, --debug included; and it authenticates: the new
// token, given the right to read, plans the same specs clean.
func TestE2EAccessKinds(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	f := accessExample(t)
	secretFile := filepath.Join(filepath.Dir(f), "secrets", "ci-deploy.token")
	var outputs []string
	run := func(want int, args ...string) result {
		t.Helper()
		r := e.mustRun(want, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}

	run(0, "validate", "-f", f)
	p := parsePlan(t, run(0, "plan", "--json", "--debug", "-f", f).stdout)
	var got []string
	for _, c := range p.Changes {
		got = append(got, c.Action+" "+c.Address)
	}
	if want := []string{"create Pool/lab", "create User/ci@pve", "create APIToken/ci-deploy", "create ACL/ci-deploy-lab"}; !slices.Equal(got, want) {
		t.Fatalf("first plan: got %v, want %v", got, want)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	run(0, "plan", "--out", planFile, "-f", f)
	ap := run(0, "apply", "--auto-approve", "--debug", planFile)
	if !strings.Contains(ap.stdout, "APIToken/ci-deploy: secret written to "+secretFile+" (mode 0600)") {
		t.Errorf("apply did not say where the secret went:\n%s", ap.stdout)
	}
	if strings.Contains(ap.stdout+ap.stderr, "ONE-TIME SECRETS") {
		t.Errorf("a token with secretFile must not be shown in the one-time block")
	}

	secret, err := os.ReadFile(secretFile)
	if err != nil || len(secret) < 32 {
		t.Fatalf("secretFile: %q, %v", secret, err)
	}
	if fi, _ := os.Stat(secretFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("secretFile mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(secretFile)); fi.Mode().Perm() != 0o700 {
		t.Errorf("secretFile's directory mode %v, want 0700", fi.Mode().Perm())
	}
	run(0, "plan", "--detailed-exitcode", "--debug", "-f", f)

	// The token authenticates with the secret: directly, and as pvectl's
	// own connection once it may read (a privilege-separated token holds
	// what both it and its user hold; the ACL on /pool/lab takes the
	// place of what / gives there, so the reading role goes there too).
	tok, err := pve.NewClient(e.url, pve.WithToken("ci@pve!deploy", string(secret)))
	if err != nil {
		t.Fatal(err)
	}
	if perms, err := tok.Permissions(ctx); err != nil || perms.Has("/pool/lab", "VM.Allocate") {
		t.Errorf("as the new token: got %v, %v; want it to authenticate, privilege-separated (holding nothing its user lacks)", perms, err)
	}
	for _, path := range []string{"/", "/pool/lab"} {
		for _, who := range []url.Values{{"users": {"ci@pve"}}, {"tokens": {"ci@pve!deploy"}}} {
			who.Set("path", path)
			who.Set("roles", "PVEAuditor")
			if err := e.client.Do(ctx, http.MethodPut, "/access/acl", who, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	asToken := *e
	asToken.extraEnv = []string{"PROXMOX_TOKEN_ID=ci@pve!deploy", "PROXMOX_TOKEN_SECRET=" + string(secret)}
	r := asToken.mustRun(0, "plan", "--detailed-exitcode", "-f", f)
	outputs = append(outputs, r.stdout, r.stderr)

	// Changes in place, each call checked against PVE's schema: settings
	// cleared, a user's groups set and emptied, a comment, propagate.
	if err := e.client.Do(ctx, http.MethodPost, "/access/groups", url.Values{"groupid": {"ops"}}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, edit := range []*strings.Replacer{
		strings.NewReplacer("  comment: CI deployer\n", "  comment: null\n  email: ci@example.org\n  groups: [ops]\n  expire: 4102444800\n",
			"  privsep: true\n", "  privsep: false\n  comment: deploys\n", "  propagate: true\n", "  propagate: false\n"),
		strings.NewReplacer("  comment: CI deployer\n", "  email: null\n  groups: []\n  expire: null\n",
			"  privsep: true\n", "  comment: null\n", "  propagate: true\n", "  propagate: null\n"),
	} {
		if err := os.WriteFile(f, []byte(edit.Replace(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(0, "apply", "--auto-approve", "-f", f)
		if !strings.Contains(r.stdout, "Apply complete: 3 updated.") {
			t.Errorf("edit %d: apply did not update:\n%s", i, r.stdout)
		}
		run(0, "plan", "--detailed-exitcode", "-f", f)
	}
	if s, err := os.ReadFile(secretFile); err != nil || string(s) != string(secret) {
		t.Errorf("changes in place touched the secret (%v)", err)
	}

	d := run(0, "destroy", "--auto-approve", "--debug", "-f", f)
	containsAll(t, "destroy output", d.stdout, "ACL/ci-deploy-lab: Delete complete", "APIToken/ci-deploy: removed secretFile", "User/ci@pve: Delete complete", "Destroy complete: 4 destroyed.")
	if _, err := os.Stat(secretFile); !os.IsNotExist(err) {
		t.Errorf("secretFile after destroy: %v, want it gone", err)
	}
	users, err := e.client.Users(ctx)
	if err != nil || len(users) != 1 {
		t.Errorf("users after destroy: %v, %v, want root@pam only", users, err)
	}
	if entries, err := e.client.ACL(ctx); err != nil || len(entries) != 0 {
		t.Errorf("ACL after destroy: %v, %v, want none", entries, err)
	}
	run(2, "plan", "--detailed-exitcode", "-f", f) // all gone: everything to create again

	b, err = os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(b))
	for i, o := range outputs {
		if strings.Contains(o, string(secret)) {
			t.Errorf("output %d shows the token's secret:\n%s", i, o)
		}
	}
}

// TestE2ETokenSecretShownOnce: without secretFile the secret is printed
// once, at the end of apply, in the marked block (on stderr beside JSON
// lines, which never carry it), and it works.
func TestE2ETokenSecretShownOnce(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		t.Run(map[bool]string{false: "human", true: "json"}[asJSON], func(t *testing.T) {
			e := startSim(t)
			f := writeSpec(t, "tok.yaml", `kind: User
name: ci@pve
---
kind: APIToken
name: deploy
spec: {userid: ci@pve, comment: no file}
`)
			args := []string{"apply", "--auto-approve", "-f", f}
			if asJSON {
				args = append(args, "--json")
			}
			r := e.mustRun(0, args...)
			block, lines := r.stdout, r.stdout
			if asJSON {
				block = r.stderr
			}
			const begin, end = "----- BEGIN ONE-TIME SECRETS: PVE shows these once; store them now -----\n", "----- END ONE-TIME SECRETS -----"
			i, j := strings.Index(block, begin), strings.Index(block, end)
			if i < 0 || j < i {
				t.Fatalf("no one-time block:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
			line := strings.TrimSpace(block[i+len(begin) : j])
			secret, ok := strings.CutPrefix(line, "APIToken/deploy secret: ")
			if !ok || secret == "" {
				t.Fatalf("block holds %q, want APIToken/deploy secret: VALUE", line)
			}
			if n := strings.Count(r.stdout+r.stderr, secret); n != 1 {
				t.Errorf("the secret appears %d times, want once", n)
			}
			if asJSON && strings.Contains(lines, secret) {
				t.Errorf("a JSON line carries the secret")
			}
			tok, err := pve.NewClient(e.url, pve.WithToken("ci@pve!deploy", secret))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tok.Permissions(context.Background()); err != nil {
				t.Errorf("the shown secret does not authenticate: %v", err)
			}
			e.mustRun(0, "plan", "--detailed-exitcode", "-f", f)
		})
	}
}

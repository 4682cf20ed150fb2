package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAccessDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"password refused with why", `kind: User
name: ci@pve
spec:
  comment: CI
  password: hunter2hunter2
`, []string{"a.yaml:5: spec.password is not accepted: pvectl sets no passwords: PVE never shows a password back"}},
		{"userid defaults from the name", `kind: User
name: not-a-userid
`, []string{`a.yaml:2: name "not-a-userid" cannot be the User's userid`}},
		{"token needs its user", `kind: APIToken
name: deploy
spec: {privsep: false}
`, []string{"a.yaml:1: APIToken/deploy: spec.userid is required"}},
		{"token id pattern", `kind: APIToken
name: t
spec: {userid: ci@pve, tokenid: "9bad"}
---
kind: APIToken
name: deploy-2
spec: {userid: ci@pve, tokenid: deploy-2}
`, []string{"a.yaml:3: spec.tokenid:"}},
		{"secretFile is a directory", `kind: APIToken
name: deploy
spec: {userid: ci@pve, secretFile: sub}
`, []string{`a.yaml:3: APIToken/deploy: spec.secretFile "sub" is not a regular file`}},
		{"secretFile below a file", `kind: APIToken
name: deploy
spec: {userid: ci@pve, secretFile: plain/x/token}
`, []string{`a.yaml:3: APIToken/deploy: spec.secretFile "plain/x/token": `}},
		{"acl without anything", `kind: ACL
name: a
spec: {propagate: false}
`, []string{
			"a.yaml:1: ACL/a: spec.path is required",
			"a.yaml:1: ACL/a: spec.roles is required",
			"a.yaml:1: ACL/a: set one of spec.users, spec.groups or spec.tokens",
		}},
		{"acl path PVE refuses", `kind: ACL
name: a
spec: {path: /vms/abc, users: ci@pve, roles: PVEAuditor}
`, []string{`a.yaml:3: ACL/a: spec.path "/vms/abc" is not a path PVE accepts`}},
		{"acl is one grant", `kind: ACL
name: a
spec:
  path: /
  users: [a@pve, b@pve]
  groups: ops
  roles: [PVEAuditor, PVEVMUser]
`, []string{
			"a.yaml:5: ACL/a: spec.users names 2 users",
			"a.yaml:6: ACL/a: spec.users and spec.groups are both set",
			"a.yaml:7: ACL/a: spec.roles names 2 roles",
		}},
		{"acl takes no delete", `kind: ACL
name: a
spec: {path: /, users: a@pve, roles: PVEAuditor, delete: 1}
`, []string{`a.yaml:3: unknown field "delete" in ACL spec`}},
		{"same grant twice, path spelled apart", `kind: ACL
name: a
spec: {path: /pool/lab, tokens: "ci@pve!deploy", roles: PVEVMAdmin}
---
kind: ACL
name: b
spec: {path: "//pool/lab/", tokens: "ci@pve!deploy", roles: PVEVMAdmin, propagate: false}
`, []string{"a.yaml:7: ACL/b has the same grant of role PVEVMAdmin to token ci@pve!deploy on /pool/lab as ACL/a (at a.yaml:3)"}},
		{"same token twice", `kind: APIToken
name: deploy
spec: {userid: ci@pve}
---
kind: APIToken
name: other
spec: {userid: ci@pve, tokenid: deploy}
`, []string{`a.yaml:7: APIToken/other has the same token "ci@pve!deploy" as APIToken/deploy`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"a.yaml": tt.yaml, "sub/keep": "", "plain": "x"}
			_, diags := loadFiles(t, files, nil, "a.yaml")
			if len(diags) != len(tt.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(tt.want), strings.Join(diags, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(diags[i], w) {
					t.Errorf("diagnostic %d: got %q, want it to contain %q", i, diags[i], w)
				}
			}
		})
	}
}

func TestAccessLoad(t *testing.T) {
	dir := writeFiles(t, map[string]string{"specs/a.yaml": `kind: Pool
name: lab
---
kind: QemuVM
name: vm
spec: {vmid: 300}
---
kind: User
name: ci@pve
spec: {comment: CI, groups: [b, a], enable: true}
---
kind: APIToken
name: deploy
spec: {userid: ci@pve, privsep: true, secretFile: ../secrets/deploy.token}
---
kind: APIToken
name: abs
spec: {userid: ci@pve, secretFile: /run/pvectl/abs.token}
---
kind: ACL
name: token-lab
spec: {path: /pool/lab/, tokens: "ci@pve!deploy", roles: PVEVMAdmin}
---
kind: ACL
name: user-vm
spec: {path: /vms/300, users: ci@pve, roles: PVEVMUser, propagate: false}
---
kind: ACL
name: group-root
spec: {path: /, groups: ops, roles: PVEAuditor}
`})
	set, err := Load([]string{filepath.Join(dir, "specs")}, LoadOptions{Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string][]string{}
	for _, r := range set.Resources {
		deps[r.Address()] = set.DepGraph().Deps[r.Address()]
	}
	if diff := cmp.Diff(map[string][]string{
		"Pool/lab":        {},
		"QemuVM/vm":       {},
		"User/ci@pve":     {},
		"APIToken/deploy": {"User/ci@pve"},
		"APIToken/abs":    {"User/ci@pve"},
		"ACL/token-lab":   {"APIToken/deploy", "Pool/lab", "User/ci@pve"},
		"ACL/user-vm":     {"QemuVM/vm", "User/ci@pve"},
		"ACL/group-root":  {},
	}, deps); diff != "" {
		t.Errorf("dependencies (-want +got):\n%s", diff)
	}
	if got, want := Token(set.Lookup("APIToken/deploy")).SecretFile, filepath.Join(dir, "secrets", "deploy.token"); got != want {
		t.Errorf("secretFile: got %q, want %q (relative to the spec file)", got, want)
	}
	if got := Token(set.Lookup("APIToken/abs")).SecretFile; got != "/run/pvectl/abs.token" {
		t.Errorf("absolute secretFile: got %q", got)
	}
	tok := set.Lookup("APIToken/deploy")
	if diff := cmp.Diff(map[string]string{"userid": "ci@pve", "tokenid": "deploy", "privsep": "1"}, tok.Params.Map()); diff != "" {
		t.Errorf("token params (-want +got):\n%s", diff)
	}
	if got := set.Lookup("User/ci@pve").Params.Get("groups"); got != "b,a" {
		t.Errorf("groups on the wire: got %q, want b,a", got)
	}
	for addr, want := range map[string][5]string{
		"ACL/token-lab":  {"/pool/lab", "token", "ci@pve!deploy", "PVEVMAdmin"},
		"ACL/user-vm":    {"/vms/300", "user", "ci@pve", "PVEVMUser"},
		"ACL/group-root": {"/", "group", "ops", "PVEAuditor"},
	} {
		path, typ, ugid, role, ok := ACLGrant(set.Lookup(addr))
		if got := [5]string{path, typ, ugid, role}; !ok || got != want {
			t.Errorf("%s grant: got %v %v, want %v", addr, got, ok, want)
		}
	}
}

// A secretFile in specs read from stdin is relative to the working directory.
func TestAccessSecretFileFromStdin(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	set, err := Load([]string{StdinPath}, LoadOptions{Getenv: env(), Stdin: strings.NewReader(`kind: APIToken
name: deploy
spec: {userid: ci@pve, secretFile: s/deploy.token}
`)})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "s", "deploy.token")
	if real, err := filepath.EvalSymlinks(dir); err == nil && !strings.HasPrefix(Token(set.Resources[0]).SecretFile, dir) {
		want = filepath.Join(real, "s", "deploy.token")
	}
	if got := Token(set.Resources[0]).SecretFile; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "s")); err == nil {
		t.Errorf("validate made the secret's directory; only apply may")
	}
}

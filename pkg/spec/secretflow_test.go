package spec

import (
	"slices"
	"strings"
	"testing"
)

// TestSecretFlow: a secret's value or variable in a plain key is refused
// at file:line unless the document declares the key secret.
func TestSecretFlow(t *testing.T) {
	const tok = "5e3d1c0a-token-secret"
	const pw = "hunter2-long-password"
	vm := func(extra string) string {
		return "kind: QemuVM\nname: web\n" + extra + "spec:\n  memory: 512\n"
	}
	conn := "kind: Connection\nname: ci\nspec:\n  url: https://127.0.0.1:8006\n  tokenId: root@pam!ci\n  tokenSecret: ${CI_SECRET}\n---\n"
	getenv := env("PROXMOX_TOKEN_SECRET", tok, "CI_SECRET", tok, "VM_PW", pw, "NOTE", "plain text", "DB_PASSWORD", "x",
		"PROXMOX_SSH_PRIVATE_KEY", "/home/ci/.ssh/id_ed25519")
	tests := []struct {
		name, doc string
		want      []string // substrings of the one diagnostic; none: loads
	}{
		{"token secret variable in description", vm("") + "  description: \"token ${PROXMOX_TOKEN_SECRET}\"\n",
			[]string{"a.yaml:5:", "spec.description uses ${PROXMOX_TOKEN_SECRET}", "secretKeys: [description]"}},
		{"connection's variable in a tag", conn + vm("") + "  tags: ${CI_SECRET}\n",
			[]string{"a.yaml:12:", "spec.tags uses ${CI_SECRET}", "feeds spec.tokenSecret at a.yaml:6"}},
		{"password variable reused", vm("") + "  ide2: local-lvm:cloudinit\n  cipassword: ${VM_PW}\n  description: ${VM_PW}\n",
			[]string{"a.yaml:7:", "spec.description uses ${VM_PW}"}},
		{"a secret-named variable", vm("") + "  description: ${DB_PASSWORD}\n", []string{"a.yaml:5:", "its name says"}},
		{"the secret's value copied", vm("") + "  ide2: local-lvm:cloudinit\n  cipassword: ${VM_PW}\n  description: \"pw is " + pw + "\"\n",
			[]string{"a.yaml:7:", "spec.description holds the value of a secret (QemuVM/web cipassword)"}},
		{"in a name", "kind: Pool\nname: ${PROXMOX_TOKEN_SECRET}\nspec: {}\n", []string{"a.yaml:2:", "name uses ${PROXMOX_TOKEN_SECRET}"}},
		{"declared", vm("secretKeys: [description]\n") + "  description: \"token ${PROXMOX_TOKEN_SECRET}\"\n", nil},
		{"declared, one string", vm("secretKeys: description\n") + "  description: ${PROXMOX_TOKEN_SECRET}\n", nil},
		{"plain variable", vm("") + "  description: ${NOTE}\n", nil},
		{"a key's path is no secret value", vm("") + "  description: key at /home/ci/.ssh/id_ed25519\n", nil},
		{"declared key not set", vm("secretKeys: [descripton]\n") + "  description: x\n", []string{"a.yaml:3:", `lists "descripton"`}},
		{"declared on a Connection", "kind: Connection\nname: c\nsecretKeys: [url]\nspec:\n  url: https://127.0.0.1:8006\n  tokenId: a@pam!b\n  tokenSecret: ${CI_SECRET}\n",
			[]string{"a.yaml:3:", "Connection documents take no secretKeys"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, diags := loadFiles(t, map[string]string{"a.yaml": tt.doc}, getenv)
			if tt.want == nil {
				if diags != nil {
					t.Fatalf("want it to load, got:\n%s", strings.Join(diags, "\n"))
				}
				return
			}
			if len(diags) != 1 {
				t.Fatalf("want one diagnostic, got %d:\n%s", len(diags), strings.Join(diags, "\n"))
			}
			for _, w := range tt.want {
				if !strings.Contains(diags[0], w) {
					t.Errorf("diagnostic %q lacks %q", diags[0], w)
				}
			}
			if strings.Contains(diags[0], tok) || strings.Contains(diags[0], pw) {
				t.Errorf("diagnostic %q shows the secret", diags[0])
			}
			_ = set
		})
	}
}

// TestSecretKeysOnResource: the declared keys and the variables of secret
// keys reach the Resource (the planner masks and references them).
func TestSecretKeysOnResource(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": "kind: QemuVM\nname: web\nsecretKeys: [description]\nspec:\n  ide2: local-lvm:cloudinit\n  cipassword: ${VM_PW}\n  description: ${NOTE}\n"},
		env("VM_PW", "hunter2-long", "NOTE", "n"))
	r := set.Lookup("QemuVM/web")
	if !slices.Equal(r.SecretKeys(), []string{"description"}) {
		t.Errorf("SecretKeys %v", r.SecretKeys())
	}
	if r.SecretEnv()["cipassword"] != "VM_PW" || r.SecretEnv()["description"] != "NOTE" {
		t.Errorf("SecretEnv %v", r.SecretEnv())
	}
	if !IsSecretKey(r, "description") || IsSecretKey(r, "memory") || !IsSecretKey(r, "cipassword") {
		t.Errorf("IsSecretKey")
	}
	if vs := SecretValues(set); !slices.Contains(vs, "n") || !slices.Contains(vs, "hunter2-long") {
		t.Errorf("SecretValues %v", vs)
	}
}

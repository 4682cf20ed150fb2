//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 17 acceptance: hostile files and values are refused by validate
// and plan with exit 3, naming the file (and line), before any API call;
// a device or a FIFO is never read (no hang, no out-of-memory crash).
func TestE2EValidateRefusesHostileInput(t *testing.T) {
	env := startSim(t)
	fifoDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fifoDir, "a.yaml"), []byte("kind: Pool\nname: p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(fifoDir, "b.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	const tmpl = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	tests := []struct {
		name string
		path string
		want string
	}{
		{"a character device", "/dev/zero", "/dev/zero: not a regular file (a character device)"},
		{"a directory holding a FIFO", fifoDir, fifo + ": not a regular file (a FIFO)"},
		{"a FIFO named", fifo, fifo + ": not a regular file (a FIFO)"},
		{"a name with a bidi override", writeSpec(t, "bidi.yaml", "kind: QemuVM\nname: \"web\u202e1\"\n"),
			"bidi.yaml:2: name contains the bidi control U+202E (RIGHT-TO-LEFT OVERRIDE)"},
		{"a name with a newline", writeSpec(t, "nl.yaml", "kind: Pool\nname: \"a\\nb\"\n"),
			"nl.yaml:2: name contains the control character U+000A (newline)"},
		{"a container without ostemplate", writeSpec(t, "ct.yaml", "kind: LxcContainer\nname: ct\nspec:\n  memory: 512\n"),
			"ct.yaml:1: LxcContainer/ct: spec.ostemplate is required"},
		{"a boolean for an integer", writeSpec(t, "user.yaml", "kind: User\nname: ci@pve\nspec:\n  expire: true\n"),
			"user.yaml:4: spec.expire: true is a YAML boolean, but PVE takes an integer here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range []string{"validate", "plan"} {
				r := env.mustRun(3, cmd, "-f", tt.path)
				if !strings.Contains(r.stderr, tt.want) {
					t.Errorf("%s: stderr lacks %q:\n%s", cmd, tt.want, r.stderr)
				}
			}
		})
	}
	if n := env.requests.Total(); n != 0 {
		t.Errorf("%d API requests for invalid specs, want 0", n)
	}
	// With the template the container validates.
	env.mustRun(0, "validate", "-f", writeSpec(t, "ct.yaml", "kind: LxcContainer\nname: ct\nspec:\n  ostemplate: "+tmpl+"\n"))
}

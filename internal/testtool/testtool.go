// Package testtool finds the external programs that tests run (xorriso,
// isoinfo, …): a test skips, saying why, when one is missing on a
// developer's machine, and fails when PVECTL_REQUIRE_TOOLS=1 (set by CI),
// so a missing package in CI cannot turn real checks into skips.
package testtool

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that turns a missing tool from a
// skip into a failure.
const RequireEnv = "PVECTL_REQUIRE_TOOLS"

// Path returns the path of the program name, or ends the test: with a skip
// naming the Debian package (pkg) to install, or with a failure when
// RequireEnv is "1". Besides PATH it looks in /usr/sbin and /sbin, where
// Debian keeps tools such as blkid that a user's PATH may lack.
func Path(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p
		}
	}
	msg := name + " not found in PATH (apt-get install " + pkg + ")"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 requires it", msg, RequireEnv)
	}
	t.Skipf("%s; skipping (set %s=1 to make this a failure)", msg, RequireEnv)
	return ""
}

// Run runs the program at path (from Path) and returns its stdout and
// stderr; a non-zero exit fails the test with stderr shown.
func Run(t testing.TB, path string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), path, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", path, strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}

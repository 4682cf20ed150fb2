package spec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestManyResourcesScript: scripts/many-resources.sh, which
// docs/performance.md gives for the CLI rows, writes the documents
// BenchmarkLoad loads (byte for byte), and its --vms-only variant loads.
func TestManyResourcesScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found: scripts/many-resources.sh not checked")
	}
	script := filepath.Join("..", "..", "scripts", "many-resources.sh")
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bash, append([]string{script}, args...)...).Output()
		if err != nil {
			t.Fatalf("many-resources.sh %v: %v", args, err)
		}
		return out
	}
	for _, n := range []int{1, 150, 1000} {
		if got, want := string(run(strconv.Itoa(n))), manyResources(n); got != want {
			t.Errorf("many-resources.sh %d differs from BenchmarkLoad's documents", n)
		}
	}
	path := filepath.Join(t.TempDir(), "vms.yaml")
	if err := os.WriteFile(path, run("--vms-only", "7"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Load([]string{path}, LoadOptions{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Resources) != 7 {
		t.Fatalf("--vms-only 7: %d resources", len(set.Resources))
	}
	if err := exec.Command(bash, script, "x").Run(); err == nil {
		t.Error("many-resources.sh x: exit 0, want an error")
	}
}

// TestSmallDocsScript: scripts/small-docs.sh writes the documents
// BenchmarkLoadSmallDocs loads (smallDocs), byte for byte.
func TestSmallDocsScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found: scripts/small-docs.sh not checked")
	}
	script := filepath.Join("..", "..", "scripts", "small-docs.sh")
	for _, c := range []struct{ shape, format string }{{"pools", smallPool}, {"vms", smallVM}} {
		out, err := exec.Command(bash, script, c.shape, "5000").Output()
		if err != nil {
			t.Fatalf("small-docs.sh %s: %v", c.shape, err)
		}
		if want, _ := smallDocs(5000, c.format); string(out) != want {
			t.Errorf("small-docs.sh %s 5000 differs from smallDocs", c.shape)
		}
	}
	if err := exec.Command(bash, script, "x").Run(); err == nil {
		t.Error("small-docs.sh x: exit 0, want an error")
	}
}

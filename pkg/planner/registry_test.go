package planner

import (
	"os"
	"slices"
	"testing"

	"github.com/pvectl/pvectl/internal/kindlint"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestEngineNamesNoKind: the engine (observe, build, apply, verify, the
// plan file, render, compare, marks and importdoc) never names a kind; kinds plug in through kindOps
// (their declared traits and doors), registered in kind.go.
func TestEngineNamesNoKind(t *testing.T) {
	names := append(spec.SupportedKinds(), "Template", "LxcContainer", "Storage", "DownloadedImage",
		"ConfigDriveISO", "BondInterface", "NodeDns", "User", "APIToken", "ACL")
	engine := []string{"observe.go", "build.go", "apply.go", "verify.go", "planfile.go", "api.go", "action.go", "importer.go", "importdoc.go", "staging.go"}
	for _, dir := range []string{".", "render", "compare", "marks", "importdoc"} {
		files, err := filesOf(dir)
		if err != nil {
			t.Fatal(err)
		}
		var allowed []string
		for _, f := range files {
			if dir == "." && !slices.Contains(engine, f) {
				allowed = append(allowed, f) // kind files and the registry
			}
		}
		found, err := kindlint.Find(dir, allowed, names)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s: the engine must not name a kind (declare a trait or a door in kind.go)", f)
		}
	}
}

func filesOf(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}

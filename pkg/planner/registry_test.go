package planner

import (
	"testing"

	"github.com/pvectl/pvectl/internal/kindlint"
	"github.com/pvectl/pvectl/pkg/spec"
)

// TestEngineNamesNoKind: the engine (internal/engine: observe, build,
// apply, verify, the plan file, import; render, compare, marks and
// importdoc) never names a kind; kinds plug in through engine.KindOps
// (their declared traits and doors), registered in registry.go.
func TestEngineNamesNoKind(t *testing.T) {
	names := append(spec.SupportedKinds(), "Template", "LxcContainer", "Storage", "DownloadedImage",
		"ConfigDriveISO", "BondInterface", "NodeDns", "User", "APIToken", "ACL")
	// The engine is a package of its own that cannot import the kinds;
	// this keeps kind names (constants, strings) out of it too.
	for _, dir := range []string{"internal/engine", "render", "compare", "marks", "importdoc"} {
		found, err := kindlint.Find(dir, nil, names)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s: the engine must not name a kind (declare a trait or a door in kind.go)", f)
		}
	}
}

package spec

import (
	"testing"

	"github.com/pvectl/pvectl/internal/kindlint"
)

// TestKindsOnlyInRegistry: outside the registry (kinds.go and the files
// of its rows, kinds_*.go), package spec never names a kind; what differs
// between kinds is a field of the kind's row.
func TestKindsOnlyInRegistry(t *testing.T) {
	names := append(SupportedKinds(), plannedKinds...)
	found, err := kindlint.Find(".", []string{"kinds.go", "kinds_guest.go", "kinds_infra.go", "kinds_cluster.go", "kinds_network.go"}, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: kind facts belong in the kind's row (kinds.go, kinds_*.go)", f)
	}
}

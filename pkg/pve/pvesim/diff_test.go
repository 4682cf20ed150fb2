package pvesim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnifiedDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n"
	want := "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
	if diff := cmp.Diff(want, unifiedDiff("a", "b", a, b)); diff != "" {
		t.Errorf("diff (-want +got)\n%s", diff)
	}
	if got := unifiedDiff("a", "b", a, a); got != "" {
		t.Errorf("got %q for equal texts, want empty", got)
	}
}

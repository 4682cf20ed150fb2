package planner

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
)

func TestSplitDescription(t *testing.T) {
	tests := []struct {
		name, in, user string
		blocks         []string
	}{
		{"no block", "web server\nowner: ops", "web server\nowner: ops", nil},
		{"block appended", "web server\n[pvectl-provision: a.yaml=0123456789ab]", "web server", []string{"[pvectl-provision: a.yaml=0123456789ab]"}},
		{"legacy block", "[puls-provision: a.yaml=0123456789ab,b.yaml=ba9876543210]", "", []string{"[puls-provision: a.yaml=0123456789ab,b.yaml=ba9876543210]"}},
		{"text after the block stays", "x\n[pvectl-hostkey: SHA256:abc]\ny", "x\n\ny", []string{"[pvectl-hostkey: SHA256:abc]"}},
		{"a user's brackets are not pvectl's", "[note: keep] [pvectl is great]", "[note: keep] [pvectl is great]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, blocks := splitDescription(tt.in)
			if user != tt.user {
				t.Errorf("user: got %q want %q", user, tt.user)
			}
			if diff := gocmp.Diff(tt.blocks, blocks); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithBlocks(t *testing.T) {
	live := "old text\n[pvectl-provision: a.yaml=0123456789ab]"
	if got, want := withBlocks("new text\n", live), "new text\n[pvectl-provision: a.yaml=0123456789ab]"; got != want {
		t.Errorf("withBlocks: got %q want %q", got, want)
	}
	if got := withBlocks("new", "old"); got != "new" {
		t.Errorf("withBlocks without blocks: got %q want new", got)
	}
}

// TestDescriptionBlockNotDrift: pvectl's blocks in a live description are
// neither drift nor lost when the user's text changes.
func TestDescriptionBlockNotDrift(t *testing.T) {
	live := pve.ConfigOf(map[string]string{"description": "web server\n[pvectl-provision: a.yaml=0123456789ab]\n"})
	wantMarkKept(t, live, map[string]string{"description": "web server"},
		"description", "web server", "db server", "db server\n[pvectl-provision: a.yaml=0123456789ab]")
}

package marks

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
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
			user, blocks := SplitDescription(tt.in)
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
	if got, want := WithBlocks("new text\n", live), "new text\n[pvectl-provision: a.yaml=0123456789ab]"; got != want {
		t.Errorf("WithBlocks: got %q want %q", got, want)
	}
	if got := WithBlocks("new", "old"); got != "new" {
		t.Errorf("WithBlocks without blocks: got %q want new", got)
	}
}

package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// billionLaughs is a document whose aliases multiply one list by 9 per
// level: levels 9 stand for 9^9 values in about 400 bytes.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("kind: QemuVM\nname: bomb\nspec:\n")
	b.WriteString(`  x0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for i := 1; i < levels; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 9), ",")
		fmt.Fprintf(&b, "  x%d: &a%d [%s]\n", i, i, refs)
	}
	fmt.Fprintf(&b, "  tags: *a%d\n", levels-1)
	return b.String()
}

// A small alias bomb is an error at once, at the alias that explodes;
// ordinary aliases still work.
func TestLoadAliasBomb(t *testing.T) {
	bomb := billionLaughs(9)
	if len(bomb) > 1024 {
		t.Fatalf("the bomb is %d bytes, want at most 1 KB", len(bomb))
	}
	dir := writeFiles(t, map[string]string{"bomb.yaml": bomb})
	_, err := Load([]string{filepath.Join(dir, "bomb.yaml")}, LoadOptions{Getenv: env()})
	if err == nil || !strings.Contains(err.Error(), "an alias bomb?") {
		t.Fatalf("got %v, want an alias bomb error", err)
	}
	if d := err.(Diagnostics); len(d) != 1 || d[0].Pos.Line < 4 {
		t.Errorf("got %v, want one diagnostic at an alias line", d)
	}

	set := mustLoad(t, map[string]string{"ok.yaml": "kind: Pool\nname: &n shared\nspec:\n  comment: *n\n"}, nil)
	if got := set.Resources[0].Params.Get("comment"); got != "shared" {
		t.Errorf("an ordinary alias: got comment %q want shared", got)
	}
}

func BenchmarkLoadAliasBomb(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "bomb.yaml")
	if err := os.WriteFile(path, []byte(billionLaughs(9)), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_, _ = Load([]string{path}, LoadOptions{Getenv: env()})
	}
}

package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddresses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Invalid specs still complete: a typo, an unknown kind, a Connection.
	write("a.yaml", "kind: QemuVM\nname: web\nspec:\n  memroy: 1\n---\nkind: Pool\nname: lab\n---\nkind: Connection\nname: c\n")
	write("b.yml", "kind: LinuxBridge\nname: vmbr1\n---\nkind: Nope\nname: x\n---\nkind: QemuVM\nname: ${T_VM_NAME:-db}\n")
	write("c.txt", "kind: Pool\nname: ignored\n")
	got := Addresses([]string{dir, filepath.Join(dir, "a.yaml"), "-", filepath.Join(dir, "missing.yaml")})
	want := []string{"LinuxBridge/vmbr1", "Pool/lab", "QemuVM/db", "QemuVM/web"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("addresses (-want +got):\n%s", d)
	}
}

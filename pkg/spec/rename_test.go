package spec

import (
	"strings"
	"testing"
)

// renamedFrom: taken for guests, refused with the reason for kinds PVE
// cannot rename, for its own name and for another document's identity.
func TestRenamedFrom(t *testing.T) {
	set := mustLoad(t, map[string]string{"spec.yaml": "kind: QemuVM\nname: worker-01\nrenamedFrom: worker-1\nspec: {memory: 512}\n"}, nil)
	if got := set.Resources[0].RenamedFrom(); got != "worker-1" {
		t.Errorf("RenamedFrom %q, want worker-1", got)
	}
	for _, c := range []struct{ doc, want string }{
		{"kind: Pool\nname: b\nrenamedFrom: a\n", "spec.yaml:3: Pool cannot be renamed in place: PVE has no call that changes a pool's poolid"},
		{"kind: QemuVM\nname: a\nrenamedFrom: a\n", "spec.yaml:3: renamedFrom \"a\" is the document's own name"},
		{"kind: QemuVM\nname: a\nrenamedFrom: QemuVM/b\n", "write the object's old name"},
		{"kind: LxcContainer\nname: b\nrenamedFrom: a\nspec: {ostemplate: 'local:vztmpl/x.tar.zst'}\n---\nkind: LxcContainer\nname: a\nspec: {ostemplate: 'local:vztmpl/x.tar.zst'}\n",
			"LxcContainer/b: renamedFrom \"a\" is also LxcContainer/a's hostname"},
	} {
		_, diags := loadFiles(t, map[string]string{"spec.yaml": c.doc}, nil)
		if got := strings.Join(diags, "\n"); !strings.Contains(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.doc, got, c.want)
		}
	}
}

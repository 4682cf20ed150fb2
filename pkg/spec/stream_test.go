package spec

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A large input is converted as it is read; the outcome is Load's without
// streaming: the same resources, the same diagnostics, and Defaults that
// come after resources still apply (Load reads again).
func TestStreamingLoadsTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 1 MiB specs")
	}
	var vms strings.Builder
	for i := 0; vms.Len() < streamMinSize; i++ {
		fmt.Fprintf(&vms, "---\nkind: QemuVM\nname: vm%d\nspec:\n  memory: 512\n", i)
	}
	bad := "kind: QemuVM\nname: bad\nspec:\n  memory: lots\n  name: \"x\\ny\"\n---\nkind: QemuVM\nname: vm1\n---\nkind: LxcContainer\nname: ct\n"
	tests := []struct {
		name  string
		files map[string]string
		check func(t *testing.T, set *Set)
	}{
		{"valid", map[string]string{"a.yaml": vms.String()}, nil},
		{"with problems", map[string]string{"a.yaml": vms.String(), "b.yaml": bad}, nil},
		{"defaults after the resources", map[string]string{"a.yaml": vms.String(), "z.yaml": "kind: Defaults\nname: d\nspec:\n  QemuVM: {cores: 4}\n"},
			func(t *testing.T, set *Set) {
				if got := set.Lookup("QemuVM/vm7").Params["cores"]; got != "4" {
					t.Errorf("cores of vm7: got %q, want the default 4", got)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			opts := LoadOptions{Getenv: env()}
			streamed, err1 := Load([]string{dir}, opts)
			plain, _, err2 := load([]string{dir}, opts, false)
			if diff := cmp.Diff(diagsOf(err2), diagsOf(err1)); diff != "" {
				t.Errorf("diagnostics differ (-plain +streamed):\n%s", diff)
			}
			if (streamed == nil) != (plain == nil) {
				t.Fatalf("streamed set %v, plain set %v", streamed != nil, plain != nil)
			}
			if streamed == nil {
				return
			}
			if diff := cmp.Diff(plain.Resources, streamed.Resources); diff != "" {
				t.Errorf("resources differ (-plain +streamed):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, streamed)
			}
		})
	}
}

// The stream is used, and abandoned for a later Defaults document.
func TestStreamingIsUsed(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 1 MiB specs")
	}
	var vms strings.Builder
	for i := 0; vms.Len() < streamMinSize; i++ {
		fmt.Fprintf(&vms, "---\nkind: Pool\nname: p%d\n", i)
	}
	dir := writeFiles(t, map[string]string{"a.yaml": vms.String(), "z.yaml": "kind: Defaults\nname: d\nspec:\n  Pool: {comment: x}\n"})
	for _, tc := range []struct {
		paths     []string
		abandoned bool
	}{
		{[]string{filepath.Join(dir, "a.yaml")}, false},
		{[]string{dir}, true},
	} {
		_, again, err := load(tc.paths, LoadOptions{Getenv: env()}, true)
		if again != tc.abandoned || (err != nil) {
			t.Errorf("%v: got again %v (%v), want %v", tc.paths, again, err, tc.abandoned)
		}
	}
}

func diagsOf(err error) []string {
	var ds Diagnostics
	if !errors.As(err, &ds) {
		return nil
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

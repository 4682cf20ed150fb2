package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFiles writes name → content into a fresh directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// env is a fixed environment for ${VAR} lookups.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// wantDiags loads doc as a.yaml and checks its diagnostics are want.
func wantDiags(t *testing.T, doc string, want []string) {
	t.Helper()
	_, got := loadFiles(t, map[string]string{"a.yaml": doc}, nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics: got %q\nwant %q\n(-want +got):\n%s", got, want, diff)
	}
}

// loadFiles writes files, loads the given names (all files when names is
// empty, via the directory) and returns the Set and the diagnostics as
// strings with the directory stripped ("a.yaml:3: …").
func loadFiles(t *testing.T, files map[string]string, getenv func(string) (string, bool), names ...string) (*Set, []string) {
	t.Helper()
	dir := writeFiles(t, files)
	paths := []string{dir}
	if len(names) > 0 {
		paths = nil
		for _, n := range names {
			paths = append(paths, filepath.Join(dir, n))
		}
	}
	if getenv == nil {
		getenv = env()
	}
	set, err := Load(paths, LoadOptions{Getenv: getenv})
	if err == nil {
		return set, nil
	}
	var ds Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("Load error is %T, want Diagnostics: %v", err, err)
	}
	if set != nil {
		t.Errorf("Load returned a Set together with an error")
	}
	var out []string
	for _, d := range ds {
		out = append(out, strings.ReplaceAll(d.String(), dir+string(filepath.Separator), ""))
	}
	return nil, out
}

// mustLoad loads files and fails the test on any diagnostic.
func mustLoad(t *testing.T, files map[string]string, getenv func(string) (string, bool)) *Set {
	t.Helper()
	set, diags := loadFiles(t, files, getenv)
	if diags != nil {
		t.Fatalf("Load failed:\n%s", strings.Join(diags, "\n"))
	}
	return set
}

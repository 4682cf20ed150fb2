package spec

import (
	"path/filepath"
	"strings"
	"testing"
)

// A Defaults document applies to every resource of its kind wherever it is
// written: before the resources (built as they are read) or after them
// (Load starts again and reads everything first), from files or stdin.
func TestDefaultsWhereverWritten(t *testing.T) {
	const (
		defaults = "kind: Defaults\nname: d\nspec:\n  QemuVM:\n    memory: 2048\n    cores: 4\n"
		vm       = "kind: QemuVM\nname: a\nspec:\n  node: pve\n  cores: 2\n"
		bad      = "kind: Defaults\nname: d\nspec:\n  QemuVM:\n    memory: lots\n"
	)
	for _, c := range []struct {
		name     string
		content  string
		streamed bool   // built as read, without a second reading
		wantErr  string // a problem of the Defaults document, once
	}{
		{"defaults first", defaults + "---\n" + vm, true, ""},
		{"defaults last", vm + "---\n" + defaults, false, ""},
		{"defaults of another kind last", vm + "---\nkind: Defaults\nname: p\nspec:\n  Pool:\n    comment: x\n", true, ""},
		{"bad defaults last", vm + "---\n" + bad, false, "s.yaml:11: Defaults.QemuVM.memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"s.yaml": c.content})
			path := filepath.Join(dir, "s.yaml")
			l := newLoader(LoadOptions{Getenv: env()})
			if got := l.stream([]string{path}) != nil; got != c.streamed {
				t.Errorf("streamed: %v, want %v", got, c.streamed)
			}
			for _, from := range []string{"file", "stdin"} {
				opts, paths := LoadOptions{Getenv: env()}, []string{path}
				if from == "stdin" {
					opts.Stdin, paths = strings.NewReader(c.content), []string{StdinPath}
				}
				set, err := Load(paths, opts)
				if c.wantErr != "" {
					msg := strings.ReplaceAll(strings.ReplaceAll(errString(err), dir+"/", ""), "stdin:", "s.yaml:")
					if strings.Count(msg, c.wantErr) != 1 {
						t.Errorf("%s: error %q, want %q once", from, msg, c.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", from, err)
				}
				r := set.Lookup("QemuVM/a")
				want := map[string]string{"node": "pve", "cores": "2", "memory": "2048", "name": "a"}
				if c.name == "defaults of another kind last" {
					delete(want, "memory")
					want["cores"] = "2"
				}
				for k, v := range want {
					if r.Params.Get(k) != v {
						t.Errorf("%s: %s = %q, want %q (params %v)", from, k, r.Params.Get(k), v, r.Params)
					}
				}
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

package provision

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newFile(t *testing.T, dir, name string) File {
	t.Helper()
	f, err := NewFile(name, filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPending(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "- hosts: all\n")
	writeFile(t, filepath.Join(dir, "b.yaml"), "- hosts: all\n  tasks: []\n")
	writeFile(t, filepath.Join(dir, "c.pp"), "notice('c')\n")
	a, b, c := newFile(t, dir, "a.yaml"), newFile(t, dir, "b.yaml"), newFile(t, dir, "c.pp")
	files := []File{a, b, c}
	all := "[pvectl-provision: a.yaml=" + a.Hash + ",b.yaml=" + b.Hash + ",c.pp=" + c.Hash + "]"
	oldA := "[pvectl-provision: a.yaml=000000000000,b.yaml=" + b.Hash + ",c.pp=" + c.Hash + "]"
	sum := sha256.Sum256([]byte("- hosts: all\n"))
	legacyA := hex.EncodeToString(sum[:])[:10]

	tests := []struct {
		name   string
		desc   string
		policy Policy
		want   string // "file:reason …"
	}{
		{"nothing recorded", "", Policy{}, "a.yaml:new b.yaml:new c.pp:new"},
		{"all recorded", "note\n" + all, Policy{}, ""},
		{"one changed", oldA, Policy{}, "a.yaml:changed"},
		{"forced", all, Policy{Force: true}, "a.yaml:forced b.yaml:forced c.pp:forced"},
		{"forced keeps the sharper reason", oldA, Policy{Force: true}, "a.yaml:changed b.yaml:forced c.pp:forced"},
		{"rerun after change", oldA, Policy{RerunAfterChange: true}, "a.yaml:changed b.yaml:after an earlier change c.pp:after an earlier change"},
		{"rerun after change, last changed", "[pvectl-provision: a.yaml=" + a.Hash + ",b.yaml=" + b.Hash + "]", Policy{RerunAfterChange: true}, "c.pp:new"},
		{"legacy honoured", "[puls-provision: a.yaml=" + legacyA + ",b.yaml=" + b.Hash + "]", Policy{}, "c.pp:new"},
		{"legacy changed", "[puls-provision: a.yaml=deadbeef00,b.yaml=" + b.Hash + ",c.pp=" + c.Hash + "]", Policy{}, "a.yaml:changed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := Pending(tc.desc, files, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range steps {
				got = append(got, s.File.Name+":"+string(s.Reason))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got  %q\nwant %q", g, tc.want)
			}
		})
	}
	if _, err := Pending("", []File{a, a}, Policy{}); err == nil {
		t.Errorf("a file listed twice: no error")
	}
	if _, err := Pending("[pvectl-provision: broken]", files, Policy{}); err == nil {
		t.Errorf("a broken block: no error")
	}
}

func TestNextState(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "a")
	writeFile(t, filepath.Join(dir, "b.yaml"), "b")
	writeFile(t, filepath.Join(dir, "c.yaml"), "c")
	a, b, c := newFile(t, dir, "a.yaml"), newFile(t, dir, "b.yaml"), newFile(t, dir, "c.yaml")
	st := State{HostKey: pinA, Files: []FileHash{{"gone.yaml", "111111111111"}, {"b.yaml", "222222222222"}, {"c.yaml", c.Hash}}}
	got := nextState(st, []File{a, b, c}, map[string]string{"a.yaml": a.Hash})
	want := "a.yaml=" + a.Hash + " b.yaml=222222222222 c.yaml=" + c.Hash
	if g := render(got); g != want || got.HostKey != pinA {
		t.Errorf("got %q pin %q, want %q", g, got.HostKey, want)
	}
	// A legacy block becomes pvectl's: matching entries take the file's
	// hash, others are dropped (they still run: as new).
	leg := State{Legacy: true, Files: []FileHash{{"a.yaml", a.digest[:20]}, {"b.yaml", "deadbeef"}}}
	if g := render(nextState(leg, []File{a, b}, nil)); g != "a.yaml="+a.Hash {
		t.Errorf("legacy: got %q", g)
	}
}

func render(s State) string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Name+"="+f.Hash)
	}
	return strings.Join(out, " ")
}

func TestNewFileHash(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "site.yaml"), "- hosts: all\n")
	writeFile(t, filepath.Join(dir, "x.pp"), "- hosts: all\n")
	sum := sha256.Sum256([]byte("- hosts: all\n"))
	plain := hex.EncodeToString(sum[:])[:HashLen]
	if f := newFile(t, dir, "site.yaml"); f.Hash != plain {
		t.Errorf("a playbook without roles/ hashes as its bytes: %s, want %s", f.Hash, plain)
	}

	writeFile(t, filepath.Join(dir, "roles/web/tasks/main.yml"), "- debug: msg=1\n")
	withRoles := newFile(t, dir, "site.yaml")
	if withRoles.Hash == plain {
		t.Errorf("roles/ beside the playbook did not change its hash")
	}
	if again := newFile(t, dir, "site.yaml"); again.Hash != withRoles.Hash {
		t.Errorf("hash not deterministic: %s then %s", withRoles.Hash, again.Hash)
	}
	if pp := newFile(t, dir, "x.pp"); pp.Hash != plain {
		t.Errorf("a manifest's hash covers its bytes only: %s, want %s", pp.Hash, plain)
	}

	steps := []struct {
		name string
		edit func()
	}{
		{"role file edited", func() { writeFile(t, filepath.Join(dir, "roles/web/tasks/main.yml"), "- debug: msg=2\n") }},
		{"role file added", func() { writeFile(t, filepath.Join(dir, "roles/web/handlers/main.yml"), "[]\n") }},
		{"role file renamed", func() {
			if err := os.Rename(filepath.Join(dir, "roles/web/handlers/main.yml"), filepath.Join(dir, "roles/web/handlers/other.yml")); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink added", func() {
			if err := os.Symlink("../web", filepath.Join(dir, "roles/alias")); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty dir added", func() {
			if err := os.Mkdir(filepath.Join(dir, "roles/empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	prev := withRoles.Hash
	for _, s := range steps {
		s.edit()
		h := newFile(t, dir, "site.yaml").Hash
		if h == prev {
			t.Errorf("%s: hash unchanged", s.name)
		}
		prev = h
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name, wantErr string
	}{
		{"site.yaml", ""},
		{"playbooks/app.YML", ""},
		{"base.pp", ""},
		{"run.sh", "unknown extension"},
		{"noext", "unknown extension"},
		{"a,b.yaml", "may not contain"},
		{"a=b.yaml", "may not contain"},
		{"a].yaml", "may not contain"},
		{" a.yaml", "surrounding spaces"},
		{"", "empty name"},
	}
	for _, tc := range tests {
		err := CheckName(tc.name)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckName(%q) = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if _, err := NewFile("missing.yaml", filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("NewFile of a missing file: %v", err)
	}
}

//go:build unix

package spec

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// zeros is an endless stdin (cat /dev/zero | pvectl validate -f -).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Only regular files of at most MaxFileSize are read: a FIFO (named or in
// a directory), a device, a socket or a huge file is an error naming it,
// never a hang or an out-of-memory crash.
func TestLoadRefusesHostileFiles(t *testing.T) {
	const pool = "kind: Pool\nname: p\n"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) []string // returns the -f paths
		stdin io.Reader
		want  []string // substrings of the diagnostics
	}{
		{
			name: "fifo named",
			setup: func(t *testing.T, dir string) []string {
				return []string{mkfifo(t, dir, "spec.yaml")}
			},
			want: []string{"spec.yaml: not a regular file (a FIFO)"},
		},
		{
			name: "fifo in a directory",
			setup: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "a.yaml"), pool)
				mkfifo(t, dir, "b.yaml")
				return []string{dir}
			},
			want: []string{"b.yaml: not a regular file (a FIFO)"},
		},
		{
			name:  "character device",
			setup: func(t *testing.T, dir string) []string { return []string{"/dev/zero"} },
			want:  []string{"/dev/zero: not a regular file (a character device)"},
		},
		{
			name: "socket in a directory",
			setup: func(t *testing.T, dir string) []string {
				ln, err := net.Listen("unix", filepath.Join(dir, "s.yml"))
				if err != nil {
					t.Skipf("unix socket: %v", err)
				}
				t.Cleanup(func() { ln.Close() })
				return []string{dir}
			},
			want: []string{"s.yml: not a regular file (a socket)"},
		},
		{
			name: "file over the cap",
			setup: func(t *testing.T, dir string) []string {
				p := filepath.Join(dir, "big.yaml")
				writeFile(t, p, pool)
				// Sparse: the size says 17 MiB, nothing is written.
				if err := os.Truncate(p, MaxFileSize+1<<20); err != nil {
					t.Fatal(err)
				}
				return []string{p}
			},
			want: []string{"big.yaml: file is 17.0 MiB, over the 16.0 MiB limit"},
		},
		{
			name: "fifo as a config drive's userDataFile",
			setup: func(t *testing.T, dir string) []string {
				mkfifo(t, dir, "user-data")
				p := filepath.Join(dir, "seed.yaml")
				writeFile(t, p, "kind: ConfigDriveISO\nname: seed\nspec:\n  storage: local\n  userDataFile: user-data\n")
				return []string{p}
			},
			want: []string{"seed.yaml:5: ConfigDriveISO/seed: userDataFile: read user-data: not a regular file (a FIFO)"},
		},
		{
			name: "fifo as a connection's caFile",
			setup: func(t *testing.T, dir string) []string {
				ca := mkfifo(t, dir, "ca.pem")
				p := filepath.Join(dir, "conn.yaml")
				writeFile(t, p, "kind: Connection\nname: c\nspec:\n  url: https://127.0.0.1:8006\n  tokenId: a@pve!t\n  caFile: "+ca+"\n")
				return []string{p}
			},
			want: []string{"conn.yaml:6: spec.caFile \"ca.pem\" is a FIFO, want a PEM file"},
		},
		{
			name:  "endless stdin",
			setup: func(t *testing.T, dir string) []string { return []string{StdinPath} },
			stdin: zeros{},
			want:  []string{"stdin: over the 16.0 MiB limit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := tt.setup(t, dir)
			set, err := Load(paths, LoadOptions{Getenv: env(), Stdin: tt.stdin})
			var ds Diagnostics
			if set != nil || !errors.As(err, &ds) {
				t.Fatalf("Load: got set %v, error %v; want Diagnostics", set != nil, err)
			}
			got := strings.ReplaceAll(ds.Error(), dir+string(filepath.Separator), "")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("got:\n%s\nwant it to contain %q", got, w)
				}
			}
		})
	}
}

// A file at the cap is read; the cap is on size, not on content.
func TestLoadReadsFileAtCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "spec.yaml")
	body := "kind: Pool\nname: p\n"
	writeFile(t, p, body+"#"+strings.Repeat("x", MaxFileSize-len(body)-2)+"\n")
	if _, err := Load([]string{p}, LoadOptions{Getenv: env()}); err != nil {
		t.Fatalf("Load of a %d-byte file: %v", MaxFileSize, err)
	}
}

func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --read-concurrency: the flag, else PVECTL_READ_CONCURRENCY, else the
// profile's readConcurrency, else 16; bad values are invalid input.
func TestReadConcurrency(t *testing.T) {
	cfg := writeConfig(t, "profiles:\n  default:\n    url: https://pve.test:8006\n    readConcurrency: 24\n  bad:\n    readConcurrency: lots\n")
	tests := []struct {
		name    string
		flag    int // 0: not given
		env     string
		config  string
		profile string
		want    int
		wantErr string
	}{
		{name: "default", want: 16},
		{name: "profile", config: cfg, want: 24},
		{name: "env over profile", config: cfg, env: "40", want: 40},
		{name: "flag over env", config: cfg, env: "40", flag: 4, want: 4},
		{name: "bad env", env: "0", wantErr: `PVECTL_READ_CONCURRENCY "0": want a whole number from 1 to 256`},
		{name: "bad profile", config: cfg, profile: "bad", wantErr: `readConcurrency "lots": want a whole number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearProxmoxEnv(t)
			t.Setenv(readConcurrencyEnv, tt.env)
			g := &globalOptions{configFile: tt.config, profile: tt.profile, readConcurrency: 16}
			if tt.flag != 0 {
				g.readConcurrency, g.readConcurrencySet = tt.flag, true
			}
			got, err := g.resolveReadConcurrency()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	// The flag is checked before anything runs.
	if code, _, errs := run(t, "validate", "--read-concurrency", "0", "-f", "x.yaml"); code != exitInvalid || !strings.Contains(errs, "--read-concurrency") {
		t.Errorf("--read-concurrency 0: exit %d, %s", code, errs)
	}
}

// The hidden --cpuprofile writes a pprof profile (gzip) of the command.
func TestCPUProfileFlag(t *testing.T) {
	dir := t.TempDir()
	specFile := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(specFile, []byte("kind: Pool\nname: lab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "cpu.prof")
	if code, _, errs := run(t, "--cpuprofile", prof, "validate", "-f", specFile); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile: %v, %d bytes, want a gzip'd pprof profile", err, len(b))
	}
	if code, _, errs := run(t, "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "x"), "validate", "-f", specFile); code != exitInvalid || !strings.Contains(errs, "--cpuprofile") {
		t.Errorf("unwritable --cpuprofile: exit %d, %s", code, errs)
	}
	if code, out, _ := run(t, "--help"); code != 0 || strings.Contains(out, "cpuprofile") {
		t.Errorf("--cpuprofile shows in --help (exit %d)", code)
	}
}

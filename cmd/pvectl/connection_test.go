package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/spec"
)

func clearProxmoxEnv(t *testing.T) {
	t.Helper()
	for _, k := range envKeys {
		t.Setenv(k.env, "")
	}
	t.Setenv("PVECTL_PROFILE", "")
	t.Setenv("PVECTL_CONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no user config file
	t.Setenv("XDG_CONFIG_HOME", "")
}

// checkDefaultConnection: g's default connection is want, or, when wantErr
// is set, an error that says it.
func checkDefaultConnection(t *testing.T, g *globalOptions, want spec.Connection, wantErr string) {
	t.Helper()
	got, err := g.defaultConnection()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got error %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("connection (-want +got):\n%s", diff)
	}
}

// writeConfig writes body as a config file, config.yaml (0600) in a new
// temporary directory.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	return writeTemp(t, "config.yaml", body, 0o600)
}

func TestDefaultConnection(t *testing.T) {
	const file = `profiles:
  lab:
    url: https://pve.lab.test:8006
    tokenId: ops@pve!lab
    nodes: pve1,pve2
    insecure: true
  other:
    url: https://other.test:8006
`
	cfg := writeConfig(t, file)
	tests := []struct {
		name    string
		profile string
		env     map[string]string
		want    spec.Connection
		wantErr string
	}{
		{
			name: "environment only",
			env:  map[string]string{"PROXMOX_URL": "https://a.test:8006", "PROXMOX_USER": "ci@pve", "PROXMOX_TOKEN_NAME": "deploy", "PROXMOX_TOKEN_SECRET": "s3", "PROXMOX_NODES": "n1, n2"},
			want: spec.Connection{URL: "https://a.test:8006", User: "ci@pve", TokenName: "deploy", TokenID: "ci@pve!deploy", TokenSecret: "s3", Nodes: []string{"n1", "n2"},
				SecretEnv: map[string]string{"tokenSecret": "PROXMOX_TOKEN_SECRET"}},
		},
		{
			name:    "profile",
			profile: "lab",
			env:     map[string]string{"PROXMOX_TOKEN_SECRET": "s3"},
			want: spec.Connection{URL: "https://pve.lab.test:8006", TokenID: "ops@pve!lab", TokenSecret: "s3", Nodes: []string{"pve1", "pve2"}, Insecure: true,
				SecretEnv: map[string]string{"tokenSecret": "PROXMOX_TOKEN_SECRET"}},
		},
		{
			name:    "environment wins over the profile",
			profile: "lab",
			env:     map[string]string{"PROXMOX_URL": "https://b.test:8006", "PROXMOX_INSECURE": "0"},
			want:    spec.Connection{URL: "https://b.test:8006", TokenID: "ops@pve!lab", Nodes: []string{"pve1", "pve2"}},
		},
		{
			name: "profile from PVECTL_PROFILE",
			env:  map[string]string{"PVECTL_PROFILE": "other"},
			want: spec.Connection{URL: "https://other.test:8006"},
		},
		{name: "unknown profile", profile: "nope", wantErr: `profile "nope" not found in ` + cfg + ` (profiles there: lab, other)`},
		{name: "bad PROXMOX_INSECURE", env: map[string]string{"PROXMOX_INSECURE": "nope"}, wantErr: `"nope" is not a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearProxmoxEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			checkDefaultConnection(t, &globalOptions{profile: tt.profile, configFile: cfg}, tt.want, tt.wantErr)
		})
	}
}

// A profile named default is used when none is chosen; keys are matched
// exactly as documented; lists are accepted where the variable takes a
// comma-separated list.
func TestConfigProfiles(t *testing.T) {
	tests := []struct {
		name, file, profile string
		want                spec.Connection
		wantErr             string
	}{
		{name: "default profile", file: "profiles:\n  default:\n    url: https://d.test:8006\n    nodes: [a, b]\n",
			want: spec.Connection{URL: "https://d.test:8006", Nodes: []string{"a", "b"}}},
		{name: "chosen over default", file: "profiles:\n  default:\n    url: https://d.test:8006\n  x:\n    url: https://x.test:8006\n", profile: "x",
			want: spec.Connection{URL: "https://x.test:8006"}},
		{name: "no default: none", file: "profiles:\n  x:\n    url: https://x.test:8006\n"},
		{name: "keys exactly", file: "profiles:\n  default:\n    tokenid: a@pve!t\n", wantErr: `unknown key "tokenid" (did you mean tokenId?)`},
		{name: "unknown top-level key", file: "profile:\n  x: {}\n", wantErr: "field profile not found"},
		{name: "empty file", file: ""},
		{name: "no profiles at all", file: "", profile: "x", wantErr: `profile "x" not found in`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearProxmoxEnv(t)
			checkDefaultConnection(t, &globalOptions{profile: tt.profile, configFile: writeConfig(t, tt.file)}, tt.want, tt.wantErr)
		})
	}
	clearProxmoxEnv(t)
	g := &globalOptions{profile: "lab"}
	if _, err := g.defaultConnection(); err == nil || !strings.Contains(err.Error(), "there is no config file") {
		t.Errorf("--profile without a config file: got %v", err)
	}
	g = &globalOptions{configFile: filepath.Join(t.TempDir(), "missing.yaml")}
	if _, err := g.defaultConnection(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("--config of a missing file: got %v", err)
	}
}

// The CLI maps errors to exit codes in one place.
func TestExitCodes(t *testing.T) {
	clearProxmoxEnv(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("kind: Pool\nname: p\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("kind: Pool\nname: p\nspec:\n  coment: x\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"version", []string{"version"}, 0, "pvectl test"},
		{"valid", []string{"validate", "-f", good}, 0, "Valid: 1 resource, 0 connections."},
		{"invalid spec", []string{"validate", "-f", bad}, 3, bad + ":4"},
		{"unknown flag", []string{"plan", "--nope"}, 3, "unknown flag"},
		{"no specs", []string{"plan"}, 3, "no specs given"},
		{"unknown target", []string{"plan", "-f", good, "--target", "Pool/nope"}, 3, "--target Pool/nope: no such resource in the specs (write Kind/name, e.g. Pool/p)"},
		{"mistyped target", []string{"plan", "-f", good, "--target", "Pool/q"}, 3, "(did you mean Pool/p?)"},
		{"no connection", []string{"plan", "-f", good}, 3, "PROXMOX_URL"},
		{"apply off a terminal", []string{"apply", "-f", good}, 3, "--auto-approve"},
		{"apply --json needs approval", []string{"apply", "-f", good, "--json"}, 3, "--json needs --auto-approve"},
		{"destroy off a terminal", []string{"destroy", "-f", good}, 3, "destroy needs --auto-approve when its input is not a terminal\n"},
		{"specs without -f", []string{"plan", dir}, 3, "pvectl plan -f " + dir},
		{"specs given as a plan file", []string{"apply", good}, 3, "looks like specs, not a plan file: pvectl apply -f " + good},
		{"parallelism 0", []string{"plan", "-f", good, "--parallelism", "0"}, 3, "--parallelism 0"},
		{"sim on all interfaces", []string{"sim", "--listen", "0.0.0.0:0"}, 3, "loopback only"},
		{"sim empty node", []string{"sim", "--listen", "127.0.0.1:0", "--nodes", ""}, 3, "--nodes"},
		{"sim negative latency", []string{"sim", "--listen", "127.0.0.1:0", "--latency", "-1s"}, 3, "cannot be negative"},
		{"sim extra token without secret", []string{"sim", "--listen", "127.0.0.1:0", "--extra-token", "ci@pve!x"}, 3, "--extra-token \"ci@pve!x\": want ID=SECRET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := Execute("test", tt.args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			if got != tt.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, out.String(), errb.String())
			}
			if all := out.String() + errb.String(); !strings.Contains(all, tt.out) {
				t.Errorf("output lacks %q:\n%s", tt.out, all)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		if code := Execute("v1.2.3", args, Streams{In: strings.NewReader(""), Out: &out, Err: &out}); code != 0 || out.String() != "pvectl v1.2.3\n" {
			t.Errorf("%v: exit %d, printed %q; want \"pvectl v1.2.3\\n\"", args, code, out.String())
		}
	}
	tests := []struct {
		name, set string
		info      *debug.BuildInfo
		want      string
	}{
		{"ldflags", "v0.4.0", &debug.BuildInfo{Main: debug.Module{Version: "v9"}}, "v0.4.0"},
		{"go install", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.5.1"}}, "v0.5.1"},
		{"local build", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "dev-0123456789ab-dirty"},
		{"nothing known", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "dev", nil, "dev"},
	}
	for _, tt := range tests {
		if got := resolveVersion(tt.set, tt.info); got != tt.want {
			t.Errorf("%s: got %q want %q", tt.name, got, tt.want)
		}
	}
}

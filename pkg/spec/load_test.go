package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoadExample loads the shared example 01 (copied into testdata).
func TestLoadExample(t *testing.T) {
	set, err := Load([]string{"testdata/01-bridge-and-vm.yaml"}, LoadOptions{Getenv: env()})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	vm := set.Lookup("QemuVM/app-vm-1")
	if vm == nil {
		t.Fatalf("QemuVM/app-vm-1 missing; got %d resources", len(set.Resources))
	}
	wantParams := map[string]string{
		"name": "app-vm-1", "node": "pve", "vmid": "100", "memory": "2048", "cores": "2",
		"sockets": "1", "cpu": "host", "ostype": "l26", "scsihw": "virtio-scsi-pci",
		"scsi0": "local-lvm:32", "net0": "virtio,bridge=vmbr0", "net1": "virtio,bridge=vmbr1,tag=100",
		"boot": "order=scsi0;net0",
	}
	if diff := cmp.Diff(wantParams, vm.Params.Map()); diff != "" {
		t.Errorf("QemuVM params: got %v want %v (-want +got):\n%s", vm.Params, wantParams, diff)
	}
	if running := Guest(vm).Running; running == nil || !*running {
		t.Errorf("running: got %v want true", running)
	}
	wantKeyPos := Pos{File: "testdata/01-bridge-and-vm.yaml", Line: 24, Col: 3}
	if got, _ := vm.KeyPos.Get("memory"); got != wantKeyPos {
		t.Errorf("KeyPos[memory]: got %+v want %+v", got, wantKeyPos)
	}
	if got, want := vm.Pos.String(), "testdata/01-bridge-and-vm.yaml:18"; got != want {
		t.Errorf("Pos: got %s want %s", got, want)
	}
	wantDeps := map[string][]string{
		"LinuxBridge/vmbr1": {},
		"NetworkApply/pve":  {"LinuxBridge/vmbr1"},
		// net1 uses vmbr1: an implicit edge beside the explicit one.
		"QemuVM/app-vm-1": {"LinuxBridge/vmbr1", "NetworkApply/pve"},
	}
	if diff := cmp.Diff(wantDeps, set.DepGraph().Deps); diff != "" {
		t.Errorf("Graph.Deps (-want +got):\n%s", diff)
	}
	wantOrder := []string{"LinuxBridge/vmbr1", "NetworkApply/pve", "QemuVM/app-vm-1"}
	if diff := cmp.Diff(wantOrder, set.Order()); diff != "" {
		t.Errorf("Order (-want +got):\n%s", diff)
	}
	br := set.Lookup("LinuxBridge/vmbr1")
	wantBridge := map[string]string{
		"node": "pve", "iface": "vmbr1", "type": "bridge", "bridge_ports": "eno2",
		"bridge_vlan_aware": "1", "autostart": "1",
	}
	if diff := cmp.Diff(wantBridge, br.Params.Map()); diff != "" {
		t.Errorf("LinuxBridge params (-want +got):\n%s", diff)
	}
}

// TestLoadDirectory reads every *.yaml|*.yml of a directory, sorted, and
// skips empty documents.
func TestLoadDirectory(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"b.yml":        "---\n# only a comment\n---\nkind: Pool\nname: b\n---\n",
		"a.yaml":       "kind: Pool\nname: a\n",
		"c.txt":        "not: yaml: at all",
		"sub/d.yaml":   "kind: Pool\nname: d\n",
		"z.YAML":       "kind: Pool\nname: z\n",
		"empty.yaml":   "",
		"comment.yaml": "# nothing yet\n",
	})
	set, err := Load([]string{dir}, LoadOptions{Getenv: env()})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	for _, r := range set.Resources {
		got = append(got, r.Address()+"@"+filepath.Base(r.Pos.File))
	}
	want := []string{"Pool/a@a.yaml", "Pool/b@b.yml", "Pool/z@z.YAML"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources: got %v want %v (-want +got):\n%s", got, want, diff)
	}
	// The same file named twice (directly and via its directory) is read once.
	if _, err := Load([]string{dir, filepath.Join(dir, "a.yaml")}, LoadOptions{Getenv: env()}); err != nil {
		t.Errorf("Load of a file and its directory: got %v want no error", err)
	}
}

func TestLoadDefaults(t *testing.T) {
	set := mustLoad(t, map[string]string{
		"0-defaults.yaml": `kind: Defaults
name: base
spec:
  QemuVM:
    cores: 2
    memory: 1024
    running: true
    net0: {model: virtio, bridge: vmbr0}
  LinuxBridge:
    node: pve
---
kind: Defaults
name: later
spec:
  QemuVM:
    memory: 4096
`,
		"1-vms.yaml": `kind: QemuVM
name: big
spec:
  cores: 8
  running: null
---
kind: QemuVM
name: small
state: absent
---
kind: LinuxBridge
name: vmbr1
`,
	}, nil)
	tests := []struct {
		addr       string
		wantParams map[string]string
		wantOwn    map[string]any
	}{
		{
			addr:       "QemuVM/big",
			wantParams: map[string]string{"name": "big", "cores": "8", "memory": "4096", "net0": "model=virtio,bridge=vmbr0"},
			wantOwn:    map[string]any{},
		},
		{
			addr:       "QemuVM/small",
			wantParams: map[string]string{"name": "small", "cores": "2", "memory": "4096", "net0": "model=virtio,bridge=vmbr0"},
			wantOwn:    map[string]any{"running": true},
		},
		{
			addr:       "LinuxBridge/vmbr1",
			wantParams: map[string]string{"iface": "vmbr1", "node": "pve", "type": "bridge"},
			wantOwn:    map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			r := set.Lookup(tt.addr)
			if r == nil {
				t.Fatalf("%s missing", tt.addr)
			}
			if diff := cmp.Diff(tt.wantParams, r.Params.Map()); diff != "" {
				t.Errorf("Params: got %v want %v (-want +got):\n%s", r.Params, tt.wantParams, diff)
			}
			if diff := cmp.Diff(tt.wantOwn, r.OwnFields()); diff != "" {
				t.Errorf("Own: got %v want %v (-want +got):\n%s", r.OwnFields(), tt.wantOwn, diff)
			}
		})
	}
	// A defaulted key's position is the Defaults document's.
	r := set.Lookup("QemuVM/small")
	if got, _ := r.KeyPos.Get("memory"); filepath.Base(got.File) != "0-defaults.yaml" || got.Line != 16 {
		t.Errorf("KeyPos[memory]: got %v want 0-defaults.yaml:16", got)
	}
}

func TestLoadConnection(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: Connection
name: lab
spec:
  url: ${URL}
  user: ci@pve
  tokenName: deploy
  tokenSecret: ${SECRET}
  nodes: pve1, pve2
  dnsServers: [10.0.0.1, 10.0.0.2]
  insecure: true
---
kind: Pool
name: p
connection: lab
`}, env("URL", "https://10.0.0.10:8006", "SECRET", "abc-123"))
	got := set.Connections["lab"]
	if got == nil {
		t.Fatalf("Connections: got %v want lab", set.Connections)
	}
	want := &Connection{
		Name: "lab", URL: "https://10.0.0.10:8006", TokenID: "ci@pve!deploy", User: "ci@pve",
		TokenName: "deploy", TokenSecret: "abc-123", Nodes: []string{"pve1", "pve2"},
		DNSServers: []string{"10.0.0.1", "10.0.0.2"}, Insecure: true, Pos: got.Pos,
		SecretEnv: map[string]string{"tokenSecret": "SECRET"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Connection (-want +got):\n%s", diff)
	}
	if r := set.Lookup("Pool/p"); r.Connection != "lab" {
		t.Errorf("Pool/p connection: got %q want lab", r.Connection)
	}
	if len(set.Resources) != 1 {
		t.Errorf("Resources: got %d want 1 (Connection is not a resource)", len(set.Resources))
	}
}

// A Connection's secret is only needed to connect: an unset variable there
// is not a load error but kept for plan (with its place); anywhere else it
// is an error. Only a secret written as exactly ${VAR} names its variable.
func TestLoadConnectionSecretUnset(t *testing.T) {
	files := map[string]string{"a.yaml": `kind: Connection
name: lab
spec:
  url: https://10.0.0.10:8006
  tokenId: ci@pve!deploy
  tokenSecret: ${LAB_SECRET}
---
kind: Connection
name: other
spec:
  url: https://10.0.0.11:8006
  tokenId: ci@pve!deploy
  tokenSecret: "x-${OTHER}"
`}
	set := mustLoad(t, files, env("OTHER", "abcd"))
	lab := set.Connections["lab"]
	if len(lab.Unresolved) != 1 || lab.Unresolved[0].Pos.Line != 6 || !strings.Contains(lab.Unresolved[0].Msg, "LAB_SECRET is not set") {
		t.Errorf("lab.Unresolved: got %v, want LAB_SECRET unset at line 6", lab.Unresolved)
	}
	if diff := cmp.Diff(map[string]string{"tokenSecret": "LAB_SECRET"}, lab.SecretEnv); diff != "" {
		t.Errorf("lab.SecretEnv (-want +got):\n%s", diff)
	}
	if other := set.Connections["other"]; other.SecretEnv != nil || other.TokenSecret != "x-abcd" || other.Unresolved != nil {
		t.Errorf("other: got SecretEnv %v, secret set %v, unresolved %v; want no variable name for a composed secret",
			other.SecretEnv, other.TokenSecret != "", other.Unresolved)
	}

	dir := writeFiles(t, map[string]string{"b.yaml": "kind: QemuVM\nname: v\nspec:\n  cipassword: ${VM_PASSWORD}\n"})
	_, err := Load([]string{filepath.Join(dir, "b.yaml")}, LoadOptions{Getenv: env()})
	if err == nil || !strings.Contains(err.Error(), "b.yaml:4: environment variable VM_PASSWORD is not set") {
		t.Errorf("an unset secret outside a Connection: got %v, want an error at b.yaml:4", err)
	}
}

func TestLoadGetenvDefault(t *testing.T) {
	t.Setenv("PVECTL_SPEC_TEST_COMMENT", "from the environment")
	dir := writeFiles(t, map[string]string{"a.yaml": "kind: Pool\nname: p\nspec:\n  comment: ${PVECTL_SPEC_TEST_COMMENT}\n"})
	set, err := Load([]string{filepath.Join(dir, "a.yaml")}, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := set.Resources[0].Params.Get("comment"), os.Getenv("PVECTL_SPEC_TEST_COMMENT"); got != want {
		t.Errorf("comment: got %q want %q", got, want)
	}
}

func TestLoadManagedFalse(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": "kind: Pool\nname: p\nmanaged: false\n---\nkind: Pool\nname: q\nmanaged: true\n"}, nil)
	if r := set.Lookup("Pool/p"); !r.ReadOnly {
		t.Errorf("Pool/p: managed: false should make it read-only")
	}
	if r := set.Lookup("Pool/q"); r.ReadOnly {
		t.Errorf("Pool/q: managed: true should leave it managed")
	}
}

// "-f -" reads the specs from stdin; problems are placed at stdin:LINE.
func TestLoadStdin(t *testing.T) {
	set, err := Load([]string{StdinPath}, LoadOptions{Stdin: strings.NewReader("kind: Pool\nname: p\n"), Getenv: env()})
	if err != nil || len(set.Resources) != 1 {
		t.Fatalf("Load(-): got %v, %v; want one Pool", set, err)
	}
	_, err = Load([]string{StdinPath}, LoadOptions{Stdin: strings.NewReader("kind: Pool\nname: p\nspec:\n  coment: x\n"), Getenv: env()})
	if err == nil || !strings.HasPrefix(err.Error(), "stdin:4: ") {
		t.Errorf("Load(-) of a bad spec: got %v, want an error at stdin:4", err)
	}
}

package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMu2dTvNNTWYm9t4yw0mvQSzLvd9EcVBNi3AZdCpq7Bu ops@example.com"

// The conveniences become the PVE keys they stand for, in PVE's wire form.
func TestQemuConveniencesDerive(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want map[string]string // params that must hold exactly these values
		none []string          // params that must be absent
	}{
		{name: "ip with the default gateway and prefix", spec: "ip: 10.8.10.50",
			want: map[string]string{"ipconfig0": "ip=10.8.10.50/24,gw=10.8.10.1"}},
		{name: "ip with a prefix and a gateway", spec: "ip: 10.8.10.51/16\n  gateway: 10.8.0.254",
			want: map[string]string{"ipconfig0": "ip=10.8.10.51/16,gw=10.8.0.254"}},
		{name: "ip dhcp", spec: "ip: dhcp", want: map[string]string{"ipconfig0": "ip=dhcp"}},
		{name: "vlan on the default bridge, a new NIC", spec: "vlan: 2010",
			want: map[string]string{"net0": "virtio,bridge=vmbr1,tag=2010"}},
		{name: "vlan on a clone: only the sub-keys", spec: "image: \"9000\"\n  vlan: 2010",
			want: map[string]string{"net0": "bridge=vmbr1,tag=2010", "machine": "q35"}},
		{name: "vlan and bridge merge into a written net0", spec: "net0: {model: e1000, firewall: 1}\n  vlan: 7\n  bridge: vmbr2",
			want: map[string]string{"net0": "model=e1000,firewall=1,bridge=vmbr2,tag=7"}},
		{name: "vlan takes net0's bridge", spec: "net0: virtio,bridge=vmbr3\n  vlan: 7",
			want: map[string]string{"net0": "virtio,bridge=vmbr3,tag=7"}},
		{name: "sshKeys URL-encoded, one per line", spec: "sshKeys:\n    - " + testKey + "\n    - " + testKey,
			want: map[string]string{"sshkeys": URIEscape(testKey + "\n" + testKey)}},
		{name: "i440fx is pc, also for a clone", spec: "image: ubuntu\n  machine: i440fx", want: map[string]string{"machine": "pc"}},
		{name: "no q35 without image", spec: "memory: 512", none: []string{"machine", "ipconfig0", "net0", "sshkeys"}},
		{name: "machine: null keeps a clone's machine", spec: "image: ubuntu\n  machine: null", none: []string{"machine"}},
		{name: "ipconfig0: null beside ip drops a default", spec: "ipconfig0: null\n  ip: 10.0.0.5",
			want: map[string]string{"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, diags := loadFiles(t, map[string]string{"a.yaml": "kind: QemuVM\nname: vm\nspec:\n  " + tt.spec + "\n"}, nil)
			if len(diags) > 0 {
				t.Fatalf("diagnostics: %v", diags)
			}
			r := set.Resources[0]
			for k, v := range tt.want {
				if r.Params.Get(k) != v {
					t.Errorf("%s: got %q want %q", k, r.Params.Get(k), v)
				}
				if slices.Contains(r.Remove, k) {
					t.Errorf("%s: set and removed (%v)", k, r.Remove)
				}
			}
			for _, k := range tt.none {
				if v, ok := r.Params.Lookup(k); ok {
					t.Errorf("%s: got %q want none", k, v)
				}
			}
		})
	}
}

func TestSSHKeysParam(t *testing.T) {
	got, err := SSHKeysParam([]string{testKey, " " + testKey + " "})
	if err != nil {
		t.Fatal(err)
	}
	const one = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIMu2dTvNNTWYm9t4yw0mvQSzLvd9EcVBNi3AZdCpq7Bu%20ops%40example.com"
	if want := one + "%0A" + one; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if URIEscape("a+b/c=d~e_f.g-h") != "a%2Bb%2Fc%3Dd~e_f.g-h" {
		t.Errorf("URIEscape: got %q", URIEscape("a+b/c=d~e_f.g-h"))
	}
}

// What cannot be derived, or would be refused by PVE, is a validate error
// at its key, naming it.
func TestQemuConveniencesRefused(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"ip and ipconfig0", "ip: 10.0.0.5\n  ipconfig0: ip=dhcp", `a.yaml:4: QemuVM/vm: spec.ip and spec.ipconfig0 both set the first NIC's address: write one of them`},
		{"bad ip", "ip: 10.0.0", `a.yaml:4: QemuVM/vm: spec.ip: "10.0.0" is not an IPv4 address (A.B.C.D or A.B.C.D/NN, or dhcp)`},
		{"bad prefix", "ip: 10.0.0.5/33", `a.yaml:4: QemuVM/vm: spec.ip: "10.0.0.5/33": the prefix length must be 1-32`},
		{"bad gateway", "ip: 10.0.0.5\n  gateway: router", `a.yaml:4: QemuVM/vm: spec.ip: gateway "router" is not an IPv4 address`},
		{"gateway with dhcp", "ip: dhcp\n  gateway: 10.0.0.1", `a.yaml:4: QemuVM/vm: spec.ip: a gateway cannot go with ip: dhcp (DHCP hands out the gateway)`},
		{"vlan range", "vlan: 4095", `a.yaml:4: QemuVM/vm: spec.vlan must be a VLAN tag (1-4094), got 4095`},
		{"vlan against net0's tag", "net0: virtio,bridge=vmbr1,tag=5\n  vlan: 6", `a.yaml:5: QemuVM/vm: spec.vlan 6 and spec.net0's tag=5 differ: write one of them`},
		{"bridge against net0's", "net0: virtio,bridge=vmbr1\n  bridge: vmbr2", `a.yaml:5: QemuVM/vm: spec.bridge vmbr2 and spec.net0's bridge=vmbr1 differ: write one of them`},
		{"not a key", "sshKeys: [ssh-rsa nonsense]", `a.yaml:4: QemuVM/vm: spec.sshKeys: item 1 is not an OpenSSH public key (TYPE BASE64 [COMMENT], as in id_ed25519.pub); PVE's ssh-keygen check would refuse it`},
		{"sshKeys and sshkeys", "sshKeys: [\"" + testKey + "\"]\n  sshkeys: x", `a.yaml:4: QemuVM/vm: spec.sshKeys and spec.sshkeys both set cloud-init's keys: write one of them (a resource's sshKeys: null drops the Defaults' list)`},
		{"sshPort", "sshPort: 70000", `a.yaml:4: QemuVM/vm: spec.sshPort must be a TCP port (1-65535), got 70000`},
		{"full without image", "full: false", `a.yaml:4: QemuVM/vm: spec.full applies to clones: set image or fromTemplate too, or drop full`},
		{"storage on a linked clone", "image: ubuntu\n  full: false\n  storage: local-lvm", `a.yaml:6: QemuVM/vm: PVE refuses storage for a linked clone (full: false): drop storage, or make a full clone`},
		{"start with image", "image: ubuntu\n  start: true", `a.yaml:5: QemuVM/vm: spec.start cannot go with image (a clone): write running: false to keep a clone stopped (it is started by default)`},
		{"archive with image", "image: ubuntu\n  archive: local:backup/vzdump-qemu-100.vma.zst", `a.yaml:5: QemuVM/vm: spec.archive cannot go with image (a clone): a clone is not a restore`},
		{"running template", "template: true\n  running: true", `a.yaml:5: QemuVM/vm: a template cannot run (template: 1): drop running: true`},
		{"replace itself", "replace: vm", `a.yaml:4: QemuVM/vm: spec.replace names this VM itself (vm): name the VM it replaces`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := loadFiles(t, map[string]string{"a.yaml": "kind: QemuVM\nname: vm\nspec:\n  " + tt.spec + "\n"}, nil)
			if diff := cmp.Diff([]string{tt.want}, diags); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// A Defaults list of keys is replaced by a resource's own; null drops it.
func TestQemuSSHKeysDefaults(t *testing.T) {
	const other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMu2dTvNNTWYm9t4yw0mvQSzLvd9EcVBNi3AZdCpq7Bu other@example.com"
	set := mustLoad(t, map[string]string{"a.yaml": "kind: Defaults\nname: d\nspec:\n  QemuVM:\n    sshKeys: [\"" + testKey + "\"]\n    sshUser: ubuntu\n" +
		"---\nkind: QemuVM\nname: a\n" +
		"---\nkind: QemuVM\nname: b\nspec:\n  sshKeys: [\"" + other + "\"]\n" +
		"---\nkind: QemuVM\nname: c\nspec:\n  sshKeys: null\n  sshkeys: " + URIEscape(other) + "\n"}, nil)
	want := map[string]string{"a": URIEscape(testKey), "b": URIEscape(other), "c": URIEscape(other)}
	for _, r := range set.Resources {
		if r.Params.Get("sshkeys") != want[r.Name] {
			t.Errorf("%s: sshkeys %q want %q", r.Name, r.Params.Get("sshkeys"), want[r.Name])
		}
		if u := Guest(r).SSHUser; u == nil || *u != "ubuntu" {
			t.Errorf("%s: sshUser %v want ubuntu from Defaults", r.Name, u)
		}
	}
}

// The conveniences are QemuVM's: a container refuses them as unknown.
func TestLxcRefusesQemuConveniences(t *testing.T) {
	_, diags := loadFiles(t, map[string]string{"a.yaml": "kind: LxcContainer\nname: ct\nspec:\n  image: ubuntu\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n"}, nil)
	if len(diags) != 1 || !strings.Contains(diags[0], `unknown field "image" in LxcContainer spec`) {
		t.Errorf("diagnostics: %v", diags)
	}
}

// vlan's bridge is an implicit dependency like a written net0's.
func TestVLANBridgeIsADependency(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": "kind: LinuxBridge\nname: vmbr1\n---\nkind: QemuVM\nname: vm\nspec:\n  vlan: 10\n"}, nil)
	if diff := cmp.Diff([]string{"LinuxBridge/vmbr1"}, set.DepGraph().Deps["QemuVM/vm"]); diff != "" {
		t.Errorf("deps (-want +got):\n%s", diff)
	}
}

// ShownAs names the diff paths the conveniences wrote by the key the user
// wrote, and leaves PVE keys the user wrote (or an address settled from
// DNS, for gateway alone) under PVE's name.
func TestShownAs(t *testing.T) {
	tests := []struct {
		name, spec string
		want       map[string]string
	}{
		{"ip", "ip: 10.0.0.5", map[string]string{"ipconfig0": "ip", "ipconfig0.ip": "ip", "ipconfig0.gw": "gateway"}},
		{"gateway alone: the address is DNS's", "gateway: 10.0.0.254", map[string]string{"ipconfig0.gw": "gateway"}},
		{"vlan", "vlan: 30", map[string]string{"net0": "vlan", "net0.tag": "vlan", "net0.bridge": "bridge"}},
		{"bridge", "bridge: vmbr2", map[string]string{"net0": "bridge", "net0.bridge": "bridge"}},
		{"vlan beside a written net0", "net0: virtio,bridge=vmbr3\n  vlan: 7", map[string]string{"net0.tag": "vlan"}},
		{"sshKeys", "sshKeys:\n    - " + testKey, map[string]string{"sshkeys": "sshKeys"}},
		{"PVE keys", "ipconfig0: ip=dhcp\n  net0: virtio,bridge=vmbr0,tag=3\n  sshkeys: " + URIEscape(testKey), map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, diags := loadFiles(t, map[string]string{"a.yaml": "kind: QemuVM\nname: vm\nspec:\n  " + tt.spec + "\n"}, nil)
			if len(diags) > 0 {
				t.Fatalf("diagnostics: %v", diags)
			}
			if diff := cmp.Diff(tt.want, ShownAs(set.Resources[0])); diff != "" {
				t.Errorf("ShownAs (-want +got):\n%s", diff)
			}
		})
	}
}

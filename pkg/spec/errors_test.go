package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoadDiagnostics checks each validation rule's message and file:line.
func TestLoadDiagnostics(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		env   func(string) (string, bool)
		names []string // files to load; empty = the directory
		want  []string
	}{
		{
			name:  "missing file",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\n"},
			names: []string{"a.yaml", "nope.yaml"},
			want:  []string{`nope.yaml: stat: no such file or directory`},
		},
		{
			name: "an unparsable file silences undefined references into it",
			files: map[string]string{
				"a.yaml": "kind: Pool\nname: p\ndependsOn: [LinuxBridge/vmbr1, User/s]\n",
				"b.yaml": "kind: LinuxBridge\nname: vmbr1\nspec: {node: pve\n",
				"c.yaml": "kind: Templat\nname: s\n",
			},
			want: []string{
				`b.yaml:3: invalid YAML: did not find expected ',' or '}'`,
				`c.yaml:1: unknown kind "Templat" — did you mean "Template"? (supported: ` + supportedList() + `)`,
			},
		},
		{
			name: "acceptance: unknown key, type error and cycle all reported",
			files: map[string]string{"a.yaml": `kind: QemuVM
name: a
dependsOn: [Pool/b]
spec:
  node: pve
  memroy: 2048
  cores: two
  pool: b
---
kind: Pool
name: b
dependsOn: QemuVM/a
`},
			want: []string{
				`a.yaml:1: dependency cycle: QemuVM/a -> Pool/b -> QemuVM/a`,
				`a.yaml:6: unknown field "memroy" in QemuVM spec — did you mean "memory"?`,
				`a.yaml:7: spec.cores: type check ('integer') failed - got 'two'`,
			},
		},
		{
			name: "an ISO image in a drive needs media=cdrom, said with what to write",
			files: map[string]string{"a.yaml": `kind: QemuVM
name: a
spec:
  ide2: local:iso/noble.iso
  sata0:
    file: nfs-1:iso/win.ISO
    media: disk
  ide3: local:iso/ok.iso,media=cdrom
  cdrom: local:iso/alias.iso
  scsi0: local-lvm:iso-like
`},
			want: []string{
				`a.yaml:4: QemuVM/a: spec.ide2: local:iso/noble.iso is an ISO image, which PVE attaches only as a CD-ROM: write ide2: "local:iso/noble.iso,media=cdrom"`,
				`a.yaml:5: QemuVM/a: spec.sata0: nfs-1:iso/win.ISO is an ISO image, which PVE attaches only as a CD-ROM: write sata0: "file=nfs-1:iso/win.ISO,media=cdrom"`,
			},
		},
		{
			name:  "YAML syntax error",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nspec:\n  comment: a\n    bad: x\n"},
			want:  []string{`a.yaml:5: invalid YAML: mapping values are not allowed in this context`},
		},
		{
			name:  "YAML unknown anchor (the decoder gives no line)",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nspec:\n  comment: *nope\n"},
			want:  []string{`a.yaml:4: invalid YAML: unknown anchor 'nope' referenced`},
		},
		{
			name:  "unknown top-level key with suggestion",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nspecs: {}\n"},
			want: []string{`a.yaml:3: unknown key "specs" in Pool/p — did you mean "spec"? ` +
				`(allowed: kind, name, renamedFrom, connection, dependsOn, protected, managed, state, secretKeys, spec)`},
		},
		{
			name:  "kind and name required",
			files: map[string]string{"a.yaml": "spec: {}\n---\nkind: Pool\n"},
			want: []string{
				`a.yaml:1: kind is required (supported: ` + supportedList() + `)`,
				`a.yaml:1: name is required in this document`,
				`a.yaml:3: name is required in this Pool document`,
			},
		},
		{
			name:  "unknown kind with suggestion",
			files: map[string]string{"a.yaml": "kind: QemuVm\nname: x\n"},
			want: []string{
				`a.yaml:1: unknown kind "QemuVm" — did you mean "QemuVM"? (supported: ` + supportedList() + `)`,
			},
		},
		{
			name: "duplicate Kind/name names both positions",
			files: map[string]string{
				"a.yaml": "kind: Pool\nname: p\n",
				"b.yaml": "# the same pool again\nkind: Pool\nname: p\n",
			},
			want: []string{`b.yaml:2: duplicate Pool/p: also defined at ` + "" + `a.yaml:1`},
		},
		{
			name:  "protected and absent contradict; bad state",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nprotected: true\nstate: absent\n---\nkind: Pool\nname: q\nstate: gone\n"},
			want: []string{
				`a.yaml:3: Pool/p is protected: true and state: absent; a protected resource cannot be destroyed (remove one of them)`,
				`a.yaml:8: state must be present or absent, got "gone"`,
			},
		},
		{
			name:  "managed: false with state: absent, managed not a boolean",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nmanaged: false\nstate: absent\n---\nkind: Pool\nname: q\nmanaged: \"no\"\n"},
			want: []string{
				`a.yaml:3: Pool/p is managed: false and state: absent; pvectl never deletes what it does not manage (drop managed: false to let state: absent remove it)`,
				`a.yaml:8: managed must be a boolean (true or false), got a string`,
			},
		},
		{
			name:  "unset variable",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nspec:\n  comment: owner ${OWNER}\n"},
			want:  []string{`a.yaml:4: environment variable OWNER is not set (write ${OWNER:-default} for a default)`},
		},
		{
			name: "fromTemplate naming no Template, wrong own type, fixed type",
			files: map[string]string{"a.yaml": `kind: QemuVM
name: vm
spec:
  fromTemplate: base
  running: "yes"
---
kind: LinuxBridge
name: vmbr1
spec:
  type: bond
`},
			want: []string{
				`a.yaml:4: QemuVM/vm: fromTemplate: no Template named "base" in these specs (on this connection); to clone a PVE template the specs do not manage, use image`,
				`a.yaml:5: spec.running: must be a boolean (true or false), got a string`,
				`a.yaml:10: spec.type must be "bridge" for a LinuxBridge, got "bond"`,
			},
		},
		{
			name: "maps, lists and nulls where they do not fit",
			files: map[string]string{"a.yaml": `kind: QemuVM
name: vm
spec:
  cores: {n: 2}
  ostype: [l26]
  vmid: null
  net0: {model: virtio, bridge: vmbr0, colour: red}
`},
			want: []string{
				`a.yaml:4: spec.cores: a map is only allowed for property strings (k=v,k=v); cores takes a integer`,
				`a.yaml:5: spec.ostype: a list is only allowed for list parameters; ostype takes a string`,
				`a.yaml:6: spec.vmid cannot be null: QemuVM needs it`,
				`a.yaml:7: spec.net0: invalid format - property 'colour' is not defined (allowed: bridge, firewall, link_down, macaddr, model, mtu, queues, rate, tag, trunks)`,
			},
		},
		{
			// Each problem inside a property-string map or a list is reported
			// at its own line, not at the line where the map starts.
			name: "sub-key and list item lines",
			files: map[string]string{"a.yaml": `kind: QemuVM
name: vm
spec:
  net0:
    model: virtio
    brigde: vmbr0
  net1: {model: virtio,
         bridge: "vm br"}
  ipconfig0:
    ip: 10.0.0.5
  tags: [web, "two words"]
  efidisk0: {file: "local-lvm:1", efitype: 3m}
  sshkeys: ssh-ed25519 AAAA me@host
---
kind: LinuxBridge
name: vmbr1
spec:
  bridge_ports:
    - eno1
    - eno2,eno3
`},
			want: []string{
				`a.yaml:6: spec.net0: invalid format - property 'brigde' is not defined — did you mean "bridge"? (allowed: bridge, firewall, link_down, macaddr, model, mtu, queues, rate, tag, trunks)`,
				`a.yaml:8: spec.net1.bridge: invalid format - invalid bridge ID 'vm br'`,
				`a.yaml:10: spec.ipconfig0.ip: invalid format - invalid IPv4 configuration: 10.0.0.5`,
				`a.yaml:11: spec.tags: list item "two words" must be a single value without spaces, commas or semicolons; write each value as its own list item`,
				`a.yaml:12: spec.efidisk0.efitype: value '3m' does not have a value in the enumeration '2m, 4m'`,
				`a.yaml:13: spec.sshkeys: invalid format - invalid urlencoded string: ssh-ed25519 AAAA me@host (PVE wants this value URL-encoded: %20 for a space, %0A between lines)`,
				`a.yaml:20: spec.bridge_ports: list item "eno2,eno3" must be a single value without spaces, commas or semicolons; write each value as its own list item`,
			},
		},
		{
			name:  "identity defaulted from a name PVE refuses",
			files: map[string]string{"a.yaml": "kind: Pool\nname: bad pool\n"},
			want:  []string{`a.yaml:2: name "bad pool" cannot be the Pool's poolid (invalid format - invalid pool ID 'bad pool'): set spec.poolid`},
		},
		{
			name:  "the run lock's pool",
			files: map[string]string{"a.yaml": "kind: Pool\nname: lock\nspec:\n  poolid: pvectl-lock\n"},
			want:  []string{`a.yaml:4: Pool/lock: the pool pvectl-lock is pvectl's run lock, which apply and destroy create and delete: give this pool another poolid`},
		},
		{
			name: "references: bad dependsOn, undefined target, undefined connection",
			files: map[string]string{"a.yaml": `kind: Pool
name: p
connection: lba
dependsOn: [nokind, Pool/q, Pool/pp]
---
kind: Connection
name: lab
spec: {url: "https://pve:8006", tokenId: "a@pve!t"}
---
kind: Pool
name: pp
`},
			want: []string{
				`a.yaml:3: connection "lba" is not defined: no Connection document has that name — did you mean "lab"?`,
				`a.yaml:4: dependsOn: invalid reference "nokind": want Kind/name, e.g. LinuxBridge/vmbr1`,
				`a.yaml:4: dependsOn: Pool/q is not defined in the given files — did you mean "Pool/p"?`,
			},
		},
		{
			name:  "self dependency is a cycle",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\ndependsOn: Pool/p\n"},
			want:  []string{`a.yaml:1: dependency cycle: Pool/p -> Pool/p`},
		},
		{
			name: "Connection: required keys, bad URL, header keys that do not apply",
			files: map[string]string{"a.yaml": `kind: Connection
name: c1
spec:
  tokenSecret: s3cr3t
---
kind: Connection
name: c2
protected: true
spec:
  url: pve:8006
  tokenId: root
`},
			want: []string{
				`a.yaml:1: Connection/c1: spec.url is required`,
				`a.yaml:1: Connection/c1: set spec.tokenId (user@realm!tokenname) or spec.user and spec.tokenName`,
				`a.yaml:8: Connection documents take only kind, name and spec; "protected" does not apply`,
				`a.yaml:10: spec.url "pve:8006" has no scheme: write https://pve:8006`,
				`a.yaml:11: spec.tokenId must be user@realm!tokenname, got "root"`,
			},
		},
		{
			name: "bad Defaults value reported once, at the Defaults document",
			files: map[string]string{
				"a.yaml": "kind: Defaults\nname: d\nspec:\n  QemuVM:\n    cores: many\n    name: same\n  Template: {}\n  Qemu: {}\n",
				"b.yaml": "kind: QemuVM\nname: v1\n---\nkind: QemuVM\nname: v2\n",
			},
			want: []string{
				`a.yaml:5: Defaults.QemuVM.cores: type check ('integer') failed - got 'many'`,
				`a.yaml:6: Defaults.QemuVM cannot set name: it identifies each QemuVM (it defaults to the document's name)`,
				`a.yaml:8: Defaults for unknown kind "Qemu" — did you mean "QemuVM"? (supported: ` + supportedList() + `)`,
			},
		},
		{
			name:  "duplicate spec key and a document that is not a map",
			files: map[string]string{"a.yaml": "kind: Pool\nname: p\nspec:\n  comment: a\n  comment: b\n---\n- a list\n"},
			want: []string{
				`a.yaml:5: duplicate key "comment" in spec (first at a.yaml:4)`,
				`a.yaml:7: a document must be a mapping with kind, name and spec, got a list`,
			},
		},
		{
			name:  "secrets never appear in messages",
			files: map[string]string{"a.yaml": "kind: QemuVM\nname: vm\nspec:\n  cipassword: [hunter2]\n"},
			want: []string{`a.yaml:4: spec.cipassword is a secret: write it as ${VAR} (exactly that, the whole value) and set VAR in the environment; ` +
				`a secret written into a spec file ends up in version control and backups`},
		},
		{
			name:  "a secret from the environment is checked without showing it",
			files: map[string]string{"a.yaml": "kind: LxcContainer\nname: ct\nspec:\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  password: ${PW}\n"},
			env:   env("PW", "abc"),
			want:  []string{`a.yaml:5: spec.password: invalid value (not shown: it is a secret)`},
		},
		{
			name:  "NetworkApply takes only node",
			files: map[string]string{"a.yaml": "kind: NetworkApply\nname: pve\nspec:\n  regenerate-frr: true\n"},
			want:  []string{`a.yaml:4: unknown field "regenerate-frr" in NetworkApply spec`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := loadFiles(t, tt.files, tt.env, tt.names...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diagnostics: got %q\nwant %q\n(-want +got):\n%s", got, tt.want, diff)
			}
		})
	}
}

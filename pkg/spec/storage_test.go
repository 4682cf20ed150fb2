package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStorageLoads(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: Storage
name: nfs-images
spec:
  type: nfs
  server: 10.8.10.20
  export: /srv/images
  content: [iso, vztmpl, images]
  nodes: pve
  disable: false
---
kind: Storage
name: smb
spec:
  storage: smb-backup
  type: cifs
  server: files.lab
  share: backup
  username: svc
  password: ${SMB_PASSWORD}
`}, env("SMB_PASSWORD", "pa55word"))
	nfs := set.Lookup("Storage/nfs-images")
	want := map[string]string{"storage": "nfs-images", "type": "nfs", "server": "10.8.10.20", "export": "/srv/images",
		"content": "iso,vztmpl,images", "nodes": "pve", "disable": "0"}
	if diff := cmp.Diff(want, nfs.Params.Map()); diff != "" {
		t.Errorf("nfs params (-want +got)\n%s", diff)
	}
	if got := set.Lookup("Storage/smb").Params; got.Get("storage") != "smb-backup" || got.Get("password") != "pa55word" {
		t.Errorf("got smb params %v, want the spec's storage id and the password from the environment", got)
	}
}

// What the storage plugins refuse is found by validate, at the line.
func TestStorageDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		spec string
		env  func(string) (string, bool)
		want []string
	}{
		{
			name: "no type",
			spec: "kind: Storage\nname: st1\nspec:\n  path: /srv\n",
			want: []string{`a.yaml:1: Storage/st1: spec.type is required: one of btrfs, cephfs, cifs, dir, esxi, iscsi, iscsidirect, lvm, lvmthin, nfs, pbs, rbd, zfs, zfspool`},
		},
		{
			name: "required options, at the type",
			spec: "kind: Storage\nname: st1\nspec:\n  type: lvmthin\n  content: images\n",
			want: []string{`a.yaml:4: Storage/st1: spec.type: a lvmthin storage needs spec.thinpool and spec.vgname: PVE refuses to create it without ("missing value for required option")`},
		},
		{
			name: "pbs needs server and datastore",
			spec: "kind: Storage\nname: st1\nspec:\n  type: pbs\n  username: u@pbs\n",
			want: []string{`a.yaml:4: Storage/st1: spec.type: a pbs storage needs spec.datastore and spec.server: PVE refuses to create it without ("missing value for required option")`},
		},
		{
			name: "an option of another type",
			spec: "kind: Storage\nname: st1\nspec:\n  type: dir\n  path: /srv/s\n  server: h\n",
			want: []string{`a.yaml:6: Storage/st1: spec.server: a dir storage has no option server: PVE refuses it ("unexpected property"); a dir storage takes ` +
				`bwlimit, content, content-dirs, create-base-path, create-subdirs, disable, format, is_mountpoint, max-protected-backups, ` +
				`mkdir, nodes, path, preallocation, prune-backups, shared, snapshot-as-volume-chain`},
		},
		{
			name: "a format the type cannot keep",
			spec: "kind: Storage\nname: st1\nspec:\n  type: btrfs\n  path: /srv/b\n  format: qcow2\n",
			want: []string{`a.yaml:6: Storage/st1: spec.format: a btrfs storage cannot keep format qcow2 (pve-storage Plugin.pm decode_value drops it, so every plan would show it again); it keeps raw, subvol`},
		},
		{
			name: "nodes of local, an empty value",
			spec: "kind: Storage\nname: local\nspec:\n  type: dir\n  path: /var/lib/vz\n  nodes: pve\n  prune-backups: \"\"\n",
			want: []string{
				`a.yaml:6: Storage/local: spec.nodes: the storage local is on every node: PVE drops its nodes (pve-storage Plugin.pm parse_config), so every plan would show them again: leave nodes out`,
				`a.yaml:7: Storage/local: spec.prune-backups: an empty value is not kept: PVE writes no line for it (SectionConfig.pm format_config_line): leave the key out, or write null to remove it`,
			},
		},
		{
			name: "content the type cannot hold",
			spec: "kind: Storage\nname: st1\nspec:\n  type: lvm\n  vgname: vg\n  content: images,iso\n",
			want: []string{`a.yaml:6: Storage/st1: spec.content: a lvm storage cannot hold iso (PVE drops it, so every plan would show it again); it holds images, rootdir`},
		},
		{
			name: "null on required and fixed options",
			spec: "kind: Storage\nname: st1\nspec:\n  type: nfs\n  server: h\n  export: /e\n  path: null\n  options: null\n  snapshot-as-volume-chain: null\n",
			want: []string{
				`a.yaml:7: Storage/st1: spec.path: cannot be null: a nfs storage requires it`,
				`a.yaml:9: Storage/st1: spec.snapshot-as-volume-chain: cannot be null: PVE never changes a nfs storage's snapshot-as-volume-chain after its creation`,
			},
		},
		{
			name: "an illegal directory",
			spec: "kind: Storage\nname: st1\nspec:\n  type: dir\n  path: /srv/my vms\n",
			want: []string{`a.yaml:5: Storage/st1: spec.path: "/srv/my vms" is no path PVE accepts for a dir storage (an absolute path of letters, digits and - _ . @ /)`},
		},
		{
			name: "a literal password",
			spec: "kind: Storage\nname: st1\nspec:\n  type: cifs\n  server: h\n  share: s\n  password: hunter22\n",
			want: []string{`a.yaml:7: spec.password is a secret: write it as ${VAR} (exactly that, the whole value) and set VAR in the environment; ` +
				`a secret written into a spec file ends up in version control and backups`},
		},
		{
			name: "a password with a default in the file is literal too",
			spec: "kind: Storage\nname: st1\nspec:\n  type: pbs\n  server: h\n  datastore: d\n  password: ${PBS_PW:-hunter22}\n  encryption-key: pre${KEY}\n",
			env:  env("KEY", "k"),
			want: []string{
				`a.yaml:7: spec.password is a secret: write it as ${VAR} (exactly that, the whole value) and set VAR in the environment; ` +
					`a secret written into a spec file ends up in version control and backups`,
				`a.yaml:8: spec.encryption-key is a secret: write it as ${VAR} (exactly that, the whole value) and set VAR in the environment; ` +
					`a secret written into a spec file ends up in version control and backups`,
			},
		},
		{
			name: "a literal secret of another kind, in Defaults",
			spec: "kind: Defaults\nname: d\nspec:\n  QemuVM:\n    cipassword: hunter22\n---\nkind: QemuVM\nname: vm\n",
			want: []string{`a.yaml:5: Defaults.QemuVM.cipassword is a secret: write it as ${VAR} (exactly that, the whole value) and set VAR in the environment; ` +
				`a secret written into a spec file ends up in version control and backups`},
		},
		{
			name: "an unset secret variable",
			spec: "kind: Storage\nname: st1\nspec:\n  type: rbd\n  keyring: ${KEYRING}\n",
			want: []string{`a.yaml:5: environment variable KEYRING is not set (write ${KEYRING:-default} for a default)`},
		},
		{
			name: "read-only and absent storages need no type",
			spec: "kind: Storage\nname: local\nmanaged: false\n---\nkind: Storage\nname: old\nstate: absent\n",
		},
		{
			name: "two documents, one storage id",
			spec: "kind: Storage\nname: one\nspec: {storage: xx, type: dir, path: /a}\n---\nkind: Storage\nname: two\nspec: {storage: xx, type: dir, path: /b}\n",
			want: []string{`a.yaml:7: Storage/two has the same storage "xx" as Storage/one (at a.yaml:3): both would manage the same storage; ` +
				`a storage ID names one storage.cfg entry: give each a different storage, or remove one`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := loadFiles(t, map[string]string{"a.yaml": tt.spec}, tt.env)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got)\n%s", diff)
			}
		})
	}
}

// A guest whose volumes live on a storage of the specs waits for it.
func TestStorageImplicitEdges(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": `kind: Storage
name: nfs-images
spec: {type: nfs, server: 10.0.0.1, export: /e}
---
kind: Storage
name: fast
spec: {type: lvmthin, vgname: pve, thinpool: fast}
---
kind: Storage
name: iso
spec: {type: dir, path: /srv/iso}
---
kind: Storage
name: snippets
spec: {type: dir, path: /srv/snippets}
---
kind: Storage
name: gone
state: absent
---
kind: QemuVM
name: vm
spec:
  scsi0: nfs-images:32
  scsi1: {file: "fast:8", iothread: true}
  efidisk0: local-lvm:1,efitype=4m
  ide2: iso:iso/debian.iso,media=cdrom
  virtio0: local-lvm:0,import-from=gone:import/x.qcow2
  cicustom: user=snippets:snippets/u.yaml
---
kind: LxcContainer
name: ct
spec:
  ostemplate: iso:vztmpl/debian.tar.zst
  rootfs: fast:8
  mp0: {volume: "nfs-images:16", mp: /data}
  storage: snippets
`}, nil)
	want := map[string][]string{
		"QemuVM/vm":       {"Storage/fast", "Storage/iso", "Storage/nfs-images", "Storage/snippets"},
		"LxcContainer/ct": {"Storage/fast", "Storage/iso", "Storage/nfs-images", "Storage/snippets"},
	}
	for addr, deps := range want {
		if diff := cmp.Diff(deps, set.DepGraph().Deps[addr]); diff != "" {
			t.Errorf("%s deps (-want +got)\n%s", addr, diff)
		}
	}
}

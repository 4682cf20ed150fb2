package planner

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

func qemuComparer(t *testing.T) compare.Comparer {
	t.Helper()
	m, ok := schema.Default().Lookup("POST", qemuCreatePath)
	if !ok {
		t.Fatal("schema lacks POST /nodes/{node}/qemu")
	}
	return compare.Comparer{M: m}
}

// diffCase is a DiffParams case: desired, and remove, against live
// are the diffs want.
type diffCase struct {
	name    string
	desired map[string]string
	remove  []string
	live    *pve.Config
	want    []engine.FieldDiff
}

// checkDiffs runs each case through cmpr's DiffParams, leaving out the
// keys skip gives for it.
func checkDiffs(t *testing.T, cmpr compare.Comparer, cases []diffCase, skip func(tc diffCase) map[string]bool) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := cmpr.DiffParams(tc.desired, tc.remove, tc.live, skip(tc))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diffParams: got %v want %v (-want +got):\n%s", got, tc.want, diff)
			}
		})
	}
}

func TestDiffParamsQemu(t *testing.T) {
	cmpr := qemuComparer(t)
	tests := []diffCase{
		{
			name:    "equal numbers",
			desired: map[string]string{"memory": "2048", "cores": "2"},
			live:    pve.ConfigOf(map[string]string{"memory": "2048", "cores": "2", "sockets": "1"}),
		},
		{
			name:    "memory changed keeps the plain path",
			desired: map[string]string{"memory": "4096"},
			live:    pve.ConfigOf(map[string]string{"memory": "2048"}),
			want:    []engine.FieldDiff{{Path: "memory", Before: "2048", After: "4096"}},
		},
		{
			name:    "generated MAC is not drift",
			desired: map[string]string{"net0": "virtio,bridge=vmbr0"},
			live:    pve.ConfigOf(map[string]string{"net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0"}),
		},
		{
			name:    "model written as a key",
			desired: map[string]string{"net0": "model=virtio,bridge=vmbr0"},
			live:    pve.ConfigOf(map[string]string{"net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0"}),
		},
		{
			name:    "vlan tag changed is a sub-key diff",
			desired: map[string]string{"net1": "virtio,bridge=vmbr1,tag=200"},
			live:    pve.ConfigOf(map[string]string{"net1": "virtio=BC:24:11:AA:BB:CD,bridge=vmbr1,tag=100"}),
			want:    []engine.FieldDiff{{Path: "net1.tag", Before: "100", After: "200"}},
		},
		{
			name:    "sub-key added",
			desired: map[string]string{"net1": "virtio,bridge=vmbr1,firewall=1"},
			live:    pve.ConfigOf(map[string]string{"net1": "virtio=BC:24:11:AA:BB:CD,bridge=vmbr1"}),
			want:    []engine.FieldDiff{{Path: "net1.firewall", Before: nil, After: "1"}},
		},
		{
			name:    "allocated disk equals its volume",
			desired: map[string]string{"scsi0": "local-lvm:32"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G"}),
		},
		{
			name:    "disk size in other units",
			desired: map[string]string{"scsi0": "local-lvm:32"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32768M"}),
		},
		{
			name:    "disk grows",
			desired: map[string]string{"scsi0": "local-lvm:64"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G"}),
			want:    []engine.FieldDiff{{Path: "scsi0.size", Before: "32G", After: "64G"}},
		},
		{
			name:    "disk on other storage",
			desired: map[string]string{"scsi0": "fast:32"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G"}),
			want:    []engine.FieldDiff{{Path: "scsi0.storage", Before: "local-lvm", After: "fast"}},
		},
		{
			name:    "import-from is create-only",
			desired: map[string]string{"scsi0": "local-lvm:0,import-from=local:import/noble.qcow2"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=3584M"}),
		},
		{
			name:    "cloud-init drive",
			desired: map[string]string{"ide2": "local-lvm:cloudinit"},
			live:    pve.ConfigOf(map[string]string{"ide2": "local-lvm:vm-100-cloudinit,media=cdrom"}),
		},
		{
			name:    "booleans",
			desired: map[string]string{"onboot": "1"},
			live:    pve.ConfigOf(map[string]string{"onboot": "1"}),
		},
		{
			name:    "boolean written as true",
			desired: map[string]string{"onboot": "true"},
			live:    pve.ConfigOf(map[string]string{"onboot": "1"}),
		},
		{
			name:    "schema default equals absent",
			desired: map[string]string{"onboot": "0", "cores": "1", "ostype": "other", "memory": "512"},
			live:    pve.NewConfig(0),
		},
		{
			name:    "non-default absent is a diff",
			desired: map[string]string{"cores": "2"},
			live:    pve.NewConfig(0),
			want:    []engine.FieldDiff{{Path: "cores", Before: nil, After: "2"}},
		},
		{
			name:    "tags as sets",
			desired: map[string]string{"tags": "web,prod"},
			live:    pve.ConfigOf(map[string]string{"tags": "prod;web"}),
		},
		{
			name:    "tags differ",
			desired: map[string]string{"tags": "web prod db"},
			live:    pve.ConfigOf(map[string]string{"tags": "prod;web"}),
			want:    []engine.FieldDiff{{Path: "tags", Before: "prod;web", After: "web prod db"}},
		},
		{
			name:    "description trailing newline",
			desired: map[string]string{"description": "hello"},
			live:    pve.ConfigOf(map[string]string{"description": "hello\n"}),
		},
		{
			name:    "description trailing whitespace stripped by qemu-server",
			desired: map[string]string{"description": "hello \nworld  \n\n"},
			live:    pve.ConfigOf(map[string]string{"description": "hello \nworld"}),
		},
		{
			name:    "description changed inside",
			desired: map[string]string{"description": "hello world"},
			live:    pve.ConfigOf(map[string]string{"description": "hello \nworld"}),
			want:    []engine.FieldDiff{{Path: "description", Before: "hello \nworld", After: "hello world"}},
		},
		{
			name:    "identity keys are not compared",
			desired: map[string]string{"node": "pve", "vmid": "100"},
			live:    pve.NewConfig(0),
		},
		{
			name:    "live extras are ignored",
			desired: map[string]string{"cores": "2"},
			live:    pve.ConfigOf(map[string]string{"cores": "2", "smbios1": "uuid=x", "vmgenid": "y", "digest": "z"}),
		},
		{
			name:   "null removes a present key",
			remove: []string{"tags", "agent"},
			live:   pve.ConfigOf(map[string]string{"tags": "a"}),
			want:   []engine.FieldDiff{{Path: "tags", Before: "a", After: nil}},
		},
		{
			name:    "secrets are masked",
			desired: map[string]string{"cipassword": "hunter2"},
			live:    pve.ConfigOf(map[string]string{"cipassword": "hunter1"}),
			want:    []engine.FieldDiff{{Path: "cipassword", Before: secret.Shown, After: secret.Shown}},
		},
		{
			name:    "secret PVE answers masked cannot drift",
			desired: map[string]string{"cipassword": "hunter2"},
			live:    pve.ConfigOf(map[string]string{"cipassword": "**********"}),
		},
		{
			name:    "secret missing live is added",
			desired: map[string]string{"cipassword": "hunter2"},
			live:    pve.NewConfig(0),
			want:    []engine.FieldDiff{{Path: "cipassword", Before: nil, After: secret.Shown}},
		},
		{
			name:    "ssh keys escaped differently",
			desired: map[string]string{"sshkeys": "ssh-ed25519%20AAAAC3Nza%2B1%20me@host%0A"},
			live:    pve.ConfigOf(map[string]string{"sshkeys": "ssh-ed25519%20AAAAC3Nza%2B1%20me%40host"}),
		},
		{
			name:    "ssh keys changed",
			desired: map[string]string{"sshkeys": "ssh-ed25519%20BBBB%20me"},
			live:    pve.ConfigOf(map[string]string{"sshkeys": "ssh-ed25519%20AAAA%20me"}),
			want:    []engine.FieldDiff{{Path: "sshkeys", Before: "ssh-ed25519%20AAAA%20me", After: "ssh-ed25519%20BBBB%20me"}},
		},
		{
			name:    "empty value equals absent",
			desired: map[string]string{"tags": "", "description": ""},
			live:    pve.NewConfig(0),
		},
		{
			name:    "efidisk size is PVE's choice",
			desired: map[string]string{"efidisk0": "local-lvm:1,efitype=4m,pre-enrolled-keys=1"},
			live:    pve.ConfigOf(map[string]string{"efidisk0": "local-lvm:vm-100-disk-1,efitype=4m,pre-enrolled-keys=1,size=4M"}),
		},
		{
			name:    "tpm state size is PVE's choice",
			desired: map[string]string{"tpmstate0": "local-lvm:1,version=v2.0"},
			live:    pve.ConfigOf(map[string]string{"tpmstate0": "local-lvm:vm-100-disk-2,size=4M,version=v2.0"}),
		},
		{
			name:    "efidisk on other storage still differs",
			desired: map[string]string{"efidisk0": "fast:1,efitype=4m"},
			live:    pve.ConfigOf(map[string]string{"efidisk0": "local-lvm:vm-100-disk-1,efitype=4m,size=4M"}),
			want:    []engine.FieldDiff{{Path: "efidisk0.storage", Before: "local-lvm", After: "fast"}},
		},
		{
			name:    "disk write-backs and dropped raw format",
			desired: map[string]string{"scsi0": "local-lvm:32,format=raw,iothread=1,ssd=1,discard=on"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,discard=on,iothread=1,size=32G,ssd=1"}),
		},
		{
			name:    "qcow2 format read from the volume name",
			desired: map[string]string{"scsi0": "local:32,format=qcow2"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local:100/vm-100-disk-0.qcow2,size=32G"}),
		},
		{
			name:    "format differing from the volume name",
			desired: map[string]string{"scsi0": "local:32,format=qcow2"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local:100/vm-100-disk-0.raw,size=32G"}),
			want:    []engine.FieldDiff{{Path: "scsi0.format", Before: "raw", After: "qcow2"}},
		},
		{
			name:    "false flag without schema default equals absent",
			desired: map[string]string{"net0": "virtio,bridge=vmbr0,firewall=0"},
			live:    pve.ConfigOf(map[string]string{"net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0"}),
		},
		{
			name:    "true flag without schema default absent is a diff",
			desired: map[string]string{"net0": "virtio,bridge=vmbr0,firewall=1"},
			live:    pve.ConfigOf(map[string]string{"net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0"}),
			want:    []engine.FieldDiff{{Path: "net0.firewall", Before: nil, After: "1"}},
		},
	}
	checkDiffs(t, cmpr, tests, func(diffCase) map[string]bool { return qemu.notInConfig })
}

func TestDiffParamsBridge(t *testing.T) {
	m, ok := schema.Default().Lookup("POST", networkCreatePath)
	if !ok {
		t.Fatal("schema lacks POST /nodes/{node}/network")
	}
	cmpr := compare.Comparer{M: m}
	tests := []diffCase{
		{
			name:    "ports as sets",
			desired: map[string]string{"bridge_ports": "eno2 eno3", "bridge_vlan_aware": "1", "autostart": "1"},
			live:    pve.ConfigOf(map[string]string{"bridge_ports": "eno3 eno2", "bridge_vlan_aware": "1", "autostart": "1", "active": "1"}),
		},
		{
			name:    "vlan awareness changed",
			desired: map[string]string{"bridge_vlan_aware": "1"},
			live:    pve.ConfigOf(map[string]string{"bridge_vlan_aware": "0"}),
			want:    []engine.FieldDiff{{Path: "bridge_vlan_aware", Before: "0", After: "1"}},
		},
		{
			name:    "comments newline",
			desired: map[string]string{"comments": "data"},
			live:    pve.ConfigOf(map[string]string{"comments": "data\n"}),
		},
		{
			name:    "comment lines as PVE reads them back",
			desired: map[string]string{"comments": "uplink  \nrack 4\n\n"},
			live:    pve.ConfigOf(map[string]string{"comments": "uplink\nrack 4\n"}),
		},
		{
			name:    "comment text changed",
			desired: map[string]string{"comments": "uplink"},
			live:    pve.ConfigOf(map[string]string{"comments": "downlink\n"}),
			want:    []engine.FieldDiff{{Path: "comments", Before: "downlink\n", After: "uplink"}},
		},
		{
			name:    "PVE's VLAN list of a VLAN-aware bridge is not drift",
			desired: map[string]string{"bridge_vlan_aware": "1", "mtu": "9000"},
			live:    pve.ConfigOf(map[string]string{"bridge_vlan_aware": "1", "bridge_vids": "2-4094", "mtu": "9000"}),
		},
		{
			name:    "false flags read back absent",
			desired: map[string]string{"autostart": "0", "bridge_vlan_aware": "0"},
			live:    pve.ConfigOf(map[string]string{"type": "bridge"}),
		},
		{
			name:    "true flag absent is a diff",
			desired: map[string]string{"autostart": "1"},
			live:    pve.ConfigOf(map[string]string{"type": "bridge"}),
			want:    []engine.FieldDiff{{Path: "autostart", Before: nil, After: "1"}},
		},
		{
			name:    "vlan ranges as sets",
			desired: map[string]string{"bridge_vids": "100 2-10"},
			live:    pve.ConfigOf(map[string]string{"bridge_vids": "2-10 100"}),
		},
		{
			name:    "dotted netmask reads back as a prefix",
			desired: map[string]string{"address": "10.0.0.1", "netmask": "255.255.255.0"},
			live:    pve.ConfigOf(map[string]string{"address": "10.0.0.1", "netmask": "24", "cidr": "10.0.0.1/24"}),
		},
		{
			name:    "netmask changed",
			desired: map[string]string{"netmask": "255.255.0.0"},
			live:    pve.ConfigOf(map[string]string{"netmask": "24"}),
			want:    []engine.FieldDiff{{Path: "netmask", Before: "24", After: "255.255.0.0"}},
		},
	}
	checkDiffs(t, cmpr, tests, func(diffCase) map[string]bool { return ifaceIdentity })
}

func TestUpdateParams(t *testing.T) {
	cmpr := qemuComparer(t)
	tests := []struct {
		name    string
		desired map[string]string
		remove  []string
		live    *pve.Config
		want    map[string]string
	}{
		{
			name:    "scalar",
			desired: map[string]string{"memory": "4096", "cores": "2"},
			live:    pve.ConfigOf(map[string]string{"memory": "2048", "cores": "2"}),
			want:    map[string]string{"memory": "4096"},
		},
		{
			name:    "nic keeps its MAC",
			desired: map[string]string{"net1": "virtio,bridge=vmbr1,tag=200"},
			live:    pve.ConfigOf(map[string]string{"net1": "virtio=BC:24:11:AA:BB:CD,bridge=vmbr1,tag=100"}),
			want:    map[string]string{"net1": "virtio=BC:24:11:AA:BB:CD,bridge=vmbr1,tag=200"},
		},
		{
			name:    "disk option keeps its volume, resize is separate",
			desired: map[string]string{"scsi0": "local-lvm:64,cache=writeback"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G"}),
			want:    map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G,cache=writeback"},
		},
		{
			name:    "existing disk is not sent a format",
			desired: map[string]string{"scsi0": "local-lvm:32,format=raw,ssd=1"},
			live:    pve.ConfigOf(map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G"}),
			want:    map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=32G,ssd=1"},
		},
		{
			name:    "a CD-ROM gets the new ISO",
			desired: map[string]string{"ide2": "local:iso/b.iso,media=cdrom"},
			live:    pve.ConfigOf(map[string]string{"ide2": "local:iso/a.iso,media=cdrom"}),
			want:    map[string]string{"ide2": "local:iso/b.iso,media=cdrom"},
		},
		{
			name:    "a CD-ROM is emptied",
			desired: map[string]string{"ide2": "none,media=cdrom"},
			live:    pve.ConfigOf(map[string]string{"ide2": "local:iso/a.iso,media=cdrom"}),
			want:    map[string]string{"ide2": "none,media=cdrom"},
		},
		{
			name:   "delete",
			remove: []string{"tags", "agent"},
			live:   pve.ConfigOf(map[string]string{"tags": "a", "agent": "1"}),
			want:   map[string]string{"delete": "agent,tags"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffs := cmpr.DiffParams(tt.desired, tt.remove, tt.live, qemu.notInConfig)
			got := cmpr.UpdateParams(diffs, tt.desired, tt.live, isResize)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("updateParams: got %v want %v (-want +got):\n%s", got, tt.want, diff)
			}
		})
	}
}

func TestPoolDiff(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		remove []string
		live   string
		want   *engine.FieldDiff
	}{
		{"same pool", map[string]string{"pool": "lab"}, nil, "lab", nil},
		{"joins", map[string]string{"pool": "lab"}, nil, "", &engine.FieldDiff{Path: "pool", Before: nil, After: "lab"}},
		{"moves", map[string]string{"pool": "lab"}, nil, "old", &engine.FieldDiff{Path: "pool", Before: "old", After: "lab"}},
		{"unmanaged", map[string]string{}, nil, "old", nil},
		{"removed", map[string]string{}, []string{"pool"}, "old", &engine.FieldDiff{Path: "pool", Before: "old", After: nil}},
		{"removed already", map[string]string{}, []string{"pool"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &spec.Resource{Kind: spec.KindQemuVM, Name: "vm", Params: spec.ParamsOf(tt.params), Remove: tt.remove}
			got, ok := poolDiff(r, tt.live)
			if (tt.want != nil) != ok {
				t.Fatalf("poolDiff changed = %v, want %v", ok, tt.want != nil)
			}
			if ok {
				if diff := cmp.Diff(*tt.want, got); diff != "" {
					t.Errorf("poolDiff (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestSendFlags(t *testing.T) {
	tests := []struct {
		name       string
		params     map[string]string
		live       *pve.Config
		wantParams map[string]string
		wantDelete []string
	}{
		{"false is left out of a create", map[string]string{"bridge_vlan_aware": "0", "autostart": "0"}, nil,
			map[string]string{"autostart": "0"}, nil},
		{"false is deleted on update", map[string]string{"bridge_vlan_aware": "0"}, pve.ConfigOf(map[string]string{"bridge_vlan_aware": "1"}),
			map[string]string{}, []string{"bridge_vlan_aware"}},
		{"true is sent", map[string]string{"bridge_vlan_aware": "1"}, pve.NewConfig(0), map[string]string{"bridge_vlan_aware": "1"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			del := sendFlags(tc.params, tc.live)
			if diff := cmp.Diff(tc.wantParams, tc.params); diff != "" {
				t.Errorf("params (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelete, del); diff != "" {
				t.Errorf("delete (-want +got)\n%s", diff)
			}
		})
	}
}

package planner

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func TestOwnVolume(t *testing.T) {
	tests := []struct {
		name, key, vol, size string
		vmid                 int
		want                 string
	}{
		{"lvm disk", "scsi0", "local-lvm:vm-100-disk-0", "32G", 100, "local-lvm:32"},
		{"file disk", "virtio0", "local:100/vm-100-disk-1.qcow2", "10G", 100, "local:10"},
		{"fractional", "scsi0", "local-lvm:base-9000-disk-0", "3584M", 9000, "local-lvm:3.5"},
		{"linked clone", "scsi0", "local-lvm:base-9000-disk-0/vm-101-disk-0", "8G", 101, "local-lvm:8"},
		{"efi vars", "efidisk0", "local-lvm:vm-300-disk-0", "4M", 300, "local-lvm:1"},
		{"cloud-init", "ide2", "local-lvm:vm-9000-cloudinit", "4M", 9000, "local-lvm:cloudinit"},
		{"container rootfs", "rootfs", "local-lvm:subvol-200-disk-0", "8G", 200, "local-lvm:8"},
		{"another guest's disk", "scsi1", "local-lvm:vm-101-disk-0", "8G", 100, "local-lvm:vm-101-disk-0"},
		{"iso", "ide3", "local:iso/seed.iso", "", 300, "local:iso/seed.iso"},
		{"none", "ide2", "none", "", 100, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownVolume(tt.key, tt.vol, tt.size, tt.vmid); got != tt.want {
				t.Errorf("ownVolume(%q, %q, %q, %d): got %q want %q", tt.key, tt.vol, tt.size, tt.vmid, got, tt.want)
			}
		})
	}
}

// TestImportQemuFields: a VM's config becomes the keys a user manages —
// no generated values but the MAC address, no defaults, typed values,
// own disks as STORAGE:SIZE, a secret as a placeholder whose value stays
// out of the document, no power state unless asked for.
func TestImportQemuFields(t *testing.T) {
	cfg := pve.ConfigOf(map[string]string{
		"name": "web", "memory": "2048", "cores": "2", "sockets": "1", "numa": "0",
		"net0":       "virtio=BC:24:11:07:3E:3A,bridge=vmbr0,firewall=0",
		"scsi0":      "local-lvm:vm-100-disk-0,size=32G,discard=on",
		"vmgenid":    "d26b4967-227a-4792-86ab-56b71c9de0c5",
		"smbios1":    "uuid=312f47f1-f9b6-4bf7-bb23-b2d6c1bffab5",
		"meta":       "creation-qemu=9.2.0,ctime=1796315204",
		"cipassword": "**********", "digest": "abc", "unused0": "local-lvm:vm-100-disk-9", "lock": "backup",
		"onboot": "1",
	})
	lo := &engine.LiveObj{Exists: true, Node: "pve", Config: cfg, State: &guestLive{VMID: 100, Status: "running", Pool: "lab"}}
	ic := &engine.ImportCtx{Table: schema.Default(), Docs: map[string]*engine.ImportedDoc{}}
	d, err := qemu.ImportDoc(ic, nil, lo)
	if err != nil || d == nil {
		t.Fatalf("importDoc: %v %v", d, err)
	}
	got, err := d.YAML()
	if err != nil {
		t.Fatal(err)
	}
	want := `# cipassword: set $VM_100_CIPASSWORD (PVE does not give the secret back)
kind: QemuVM
name: web
spec:
  node: pve
  vmid: 100
  cipassword: ${VM_100_CIPASSWORD}
  cores: 2
  memory: 2048
  net0: virtio=BC:24:11:07:3E:3A,bridge=vmbr0
  onboot: true
  scsi0: local-lvm:32,discard=on
  pool: lab
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if v := d.Vars(); len(v) != 1 || v[0] != "VM_100_CIPASSWORD" {
		t.Errorf("Vars: got %v", v)
	}

	ic.WithGenerated, ic.WithPowerState = true, true
	ic.Docs = map[string]*engine.ImportedDoc{"QemuVM/web": d}
	d2, _ := qemu.ImportDoc(ic, nil, lo)
	if d2.Name != "web-100" {
		t.Errorf("a second VM named web: got document %s, want web-100", d2.Name)
	}
	if v, _ := importdoc.Value(d2.Spec, "running"); v != true {
		t.Errorf("--with-power-state: running is %v, want true", v)
	}
	for _, key := range []string{"vmgenid", "smbios1", "name"} {
		if _, ok := importdoc.Value(d2.Spec, key); !ok {
			t.Errorf("--with-generated (or a renamed document) lacks %s: %v", key, d2.Spec)
		}
	}
	if v, _ := importdoc.Value(d2.Spec, "net0"); v != "virtio=BC:24:11:07:3E:3A,bridge=vmbr0" {
		t.Errorf("--with-generated net0: got %v", v)
	}
}

// TestSimImportSelections: Kind/id selections against the simulator —
// each id form finds its object, a multi-node --all keeps interfaces of
// one name apart, and the result plans clean.
func TestSimImportSelections(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	ctx := context.Background()
	res, err := engine.Import(ctx, sim, engine.ImportOptions{Refs: []string{"QemuVM/ubuntu-24.04-cloud", "QemuVM/9000", "LinuxBridge/pve/vmbr0", "NodeDns/pve2", "Storage/local"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range res.Docs {
		got = append(got, d.Address())
	}
	if want := []string{"LinuxBridge/vmbr0", "NodeDns/pve2", "QemuVM/ubuntu-24.04-cloud", "Storage/local"}; !slices.Equal(got, want) {
		t.Errorf("documents: got %v want %v", got, want)
	}
	planImported(t, sim, res)

	res, err = engine.Import(ctx, sim, engine.ImportOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range res.Docs {
		names[d.Address()] = true
	}
	for _, want := range []string{"LinuxBridge/vmbr0", "LinuxBridge/vmbr0-pve2", "NodeDns/pve", "NodeDns/pve2"} {
		if !names[want] {
			t.Errorf("--all on two nodes lacks %s: %v", want, names)
		}
	}
	planImported(t, sim, res)

	_, err = engine.Import(ctx, sim, engine.ImportOptions{Refs: []string{"Pool", "Template/x", "QemuVM/nope"}})
	var ie *engine.ImportError
	if !errors.As(err, &ie) || !ie.Invalid || len(ie.Problems) != 2 {
		t.Errorf("bad selections: got %v, want two problems found before any call", err)
	}
	// A Template is refused through its importRefuser capability, although
	// it embeds the QemuVM kind's importer.
	if want := `"Template/x": Template is not imported: PVE does not keep what a template was baked from (baseImage, the provisioning files); templates are imported as QemuVM with template: true`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Template/x: got %v, want %q", err, want)
	}
	if slices.Contains(engine.ImportableKinds(), "Template") {
		t.Errorf("ImportableKinds lists Template: %v", engine.ImportableKinds())
	}
	_, err = engine.Import(ctx, sim, engine.ImportOptions{Refs: []string{"QemuVM/nope"}})
	if !errors.As(err, &ie) || ie.Invalid || !strings.Contains(err.Error(), "QemuVM/nope: not found (there are: 9000)") {
		t.Errorf("a selection that finds nothing: got %v", err)
	}
}

// TestSimImportDescriptionBlocks: a provisioned guest's description holds
// pvectl's blocks after the user's text; import writes the user's text
// only (none when there is none), and the document plans clean.
func TestSimImportDescriptionBlocks(t *testing.T) {
	sim := newSim(t, "pve")
	ctx := context.Background()
	blocks := "[pvectl-provision: playbooks/a.yaml=0123456789ab]\n[pvectl-hostkey: ssh-ed25519 SHA256:oXPtYld1JM7HAcVNCc6cRVQyGybj9TLEbPKBeiHvADw]"
	for _, tc := range []struct {
		name, desc string
		want       any // the document's description; nil: none
	}{
		{"user text and blocks", "golden image  \n\tby ops\n\n" + blocks, "golden image  \n\tby ops"},
		{"blocks only", blocks, nil},
		{"legacy block", "web\n[puls-provision: a.yaml=0123456789ab]", "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := sim.cl.UpdateQemu(ctx, "pve", 9000, url.Values{"description": {tc.desc}}); err != nil {
				t.Fatal(err)
			}
			res, err := engine.Import(ctx, sim, engine.ImportOptions{Refs: []string{"QemuVM/9000"}})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := importdoc.Value(res.Docs[0].Spec, "description")
			if tc.want == nil && ok || tc.want != nil && got != tc.want {
				t.Errorf("description: got %q (present %v), want %v", got, ok, tc.want)
			}
			planImported(t, sim, res)
		})
	}
}

// TestImportLoadProblems: documents that do not load are named (not the
// whole import failed): one wrong alone, or the second of two that clash;
// the others load.
func TestImportLoadProblems(t *testing.T) {
	pool := func(name string) *engine.ImportedDoc {
		return &engine.ImportedDoc{Kind: "Pool", Name: name, Spec: []engine.Field{{Key: "comment", Value: "c"}}}
	}
	badVM := &engine.ImportedDoc{Kind: "QemuVM", Name: "bad", Spec: []engine.Field{{Key: "node", Value: "pve"}, {Key: "vmid", Value: 100}, {Key: "memory", Value: "lots"}}}
	for _, tc := range []struct {
		name string
		docs []*engine.ImportedDoc
		bad  []string
	}{
		{"clean", []*engine.ImportedDoc{pool("a"), pool("b")}, nil},
		{"one wrong", []*engine.ImportedDoc{pool("a"), badVM, pool("b")}, []string{"QemuVM/bad"}},
		{"two that clash", []*engine.ImportedDoc{pool("a"), pool("b"), pool("a")}, []string{"Pool/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, bad, err := engine.LoadEach(tc.docs, schema.Default())
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(bad)); !slices.Equal(got, tc.bad) {
				t.Errorf("bad: got %v want %v", bad, tc.bad)
			}
			if tc.bad == nil && (set == nil || len(set.Resources) != len(tc.docs)) {
				t.Errorf("set: %v", set)
			}
			for _, why := range bad {
				if !strings.HasPrefix(why, "the document does not load: ") {
					t.Errorf("why: %q", why)
				}
			}
		})
	}
}

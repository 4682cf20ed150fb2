package planner

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
)

// where lists vmid's node/status rows across nodes.
func where(t *testing.T, sim *simClients, typ pve.GuestType, vmid int, nodes ...string) []string {
	t.Helper()
	var out []string
	for _, r := range guestsNow(t, sim, typ, nodes...) {
		if r.VMID == vmid {
			out = append(out, r.Node+"/"+r.Status)
		}
	}
	return out
}

// A guest whose node changes migrates: it keeps its vmid, disks and power
// state — a running VM live with its local disks, a stopped one offline,
// a running container in restart mode — and the next plan is clean.
func TestSimNodeChangeMigrates(t *testing.T) {
	tests := []struct {
		name, doc string
		typ       pve.GuestType
		vmid      int
		how       string // in the plan's reasons
		after     string // node/status after apply
	}{
		{
			name: "running vm", typ: pve.QEMU, vmid: 150, after: "pve2/running",
			doc: "kind: QemuVM\nname: mover\nspec:\n  node: pve\n  vmid: 150\n  memory: 1024\n  scsi0: local-lvm:4\n  ide2: local-lvm:cloudinit\n" +
				"  net0: virtio,bridge=vmbr0\n  running: true\n",
			how: "migrates vm 150 from pve to pve2 (online, with its local disks local-lvm:vm-150-disk-0), keeping its vmid",
		},
		{
			name: "stopped vm", typ: pve.QEMU, vmid: 151, after: "pve2/stopped",
			doc: "kind: QemuVM\nname: still\nspec:\n  node: pve\n  vmid: 151\n  scsi0: local-lvm:4\n  running: false\n",
			how: "migrates vm 151 from pve to pve2 (offline), keeping its vmid",
		},
		{
			name: "running container", typ: pve.LXC, vmid: 250, after: "pve2/running",
			doc: "kind: LxcContainer\nname: ct\nspec:\n  node: pve\n  vmid: 250\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  net0: name=eth0,bridge=vmbr0\n  running: true\n",
			how: "migrates container 250 from pve to pve2 (in restart mode",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSim(t, "pve", "pve2")
			ctx := context.Background()
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, tc.doc), engine.Options{}))
			before, err := sim.cl.GuestConfig(ctx, tc.typ, "pve", tc.vmid)
			if err != nil {
				t.Fatal(err)
			}
			set := loadSpec(t, strings.Replace(tc.doc, "node: pve", "node: pve2", 1))
			p := planFor(t, sim, set, engine.Options{})
			c := p.Changes[0]
			if c.Action != engine.Update || stateOf(c).PrevNode != "pve" || c.Node != "pve2" {
				t.Fatalf("plan: got %s %s→%s, want an update pve→pve2", c.Action, stateOf(c).PrevNode, c.Node)
			}
			if diff := cmp.Diff([]engine.FieldDiff{{Path: "node", Before: "pve", After: "pve2"}}, c.Diff); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
			if r := strings.Join(c.Reasons, "\n"); !strings.Contains(r, tc.how) {
				t.Errorf("reasons %q lack %q", c.Reasons, tc.how)
			}
			applyPlan(t, sim, p)
			if diff := cmp.Diff([]string{tc.after}, where(t, sim, tc.typ, tc.vmid, "pve", "pve2")); diff != "" {
				t.Errorf("guest %d after the migration (-want +got):\n%s", tc.vmid, diff)
			}
			after, err := sim.cl.GuestConfig(ctx, tc.typ, "pve2", tc.vmid)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"scsi0", "rootfs", "net0"} {
				if before.Get(k) != after.Get(k) {
					t.Errorf("%s: %q before, %q after the migration", k, before.Get(k), after.Get(k))
				}
			}
			vols, err := sim.cl.StorageContent(ctx, "pve2", "local-lvm", "")
			if err != nil {
				t.Fatal(err)
			}
			moved := 0
			for _, v := range vols {
				if v.VMID == tc.vmid {
					moved++
				}
			}
			if moved == 0 {
				t.Errorf("pve2's local-lvm lists no volume of guest %d", tc.vmid)
			}
			if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
				t.Errorf("plan after the migration: %q %q", summary(p), p.Changes[0].Reasons)
			}
		})
	}
}

// What PVE would refuse in a migration is a plan error that says what to
// do: a local ISO on a CD-ROM.
func TestSimMigrationRefusedAtPlan(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	const doc = "kind: QemuVM\nname: cd\nspec:\n  node: pve\n  vmid: 160\n  ide2: local:iso/debian.iso,media=cdrom\n"
	ctx := context.Background()
	if err := sim.cl.DownloadURL(ctx, "pve", "local", url.Values{"content": {"iso"}, "filename": {"debian.iso"}, "url": {"https://cdimage.debian.org/debian.iso"}}); err != nil {
		t.Fatal(err)
	}
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	set := loadSpec(t, strings.Replace(doc, "node: pve", "node: pve2", 1))
	_, err := tryPlan(t, sim, set, engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "ide2 holds local:iso/debian.iso, an image on a storage of node pve only; eject it") {
		t.Errorf("plan: got %v, want the local CD-ROM refused", err)
	}
}

// A disk whose storage changes moves there in place (move_disk, online,
// the old volume deleted); a size and an option changed with it apply to
// the moved disk. A container's volume moves while it is stopped: a
// running one is shut down for the move and started again.
func TestSimDiskMoves(t *testing.T) {
	const storage = "kind: Storage\nname: fast\nspec:\n  type: dir\n  path: /srv/fast\n  content: images,rootdir\n---\n"
	tests := []struct {
		name, doc, from, to string
		typ                 pve.GuestType
		vmid                int
		key, want           string // the moved disk after apply
		note                string // in the plan's reasons
	}{
		{
			name: "running vm", typ: pve.QEMU, vmid: 170, key: "scsi0",
			doc:  "kind: QemuVM\nname: mv\nspec:\n  vmid: 170\n  scsi0: local-lvm:4\n  efidisk0: local-lvm:1,efitype=4m\n  bios: ovmf\n  running: true\n",
			from: "scsi0: local-lvm:4", to: "scsi0: fast:6,cache=writeback",
			want: "fast:170/vm-170-disk-0.raw,cache=writeback,size=6G",
			note: "moves scsi0 → fast (old volumes deleted)",
		},
		{
			name: "running container", typ: pve.LXC, vmid: 270, key: "rootfs",
			doc: "kind: LxcContainer\nname: mv\nspec:\n  vmid: 270\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  running: true\n",
			from: "rootfs: local-lvm:2", to: "rootfs: fast:2",
			want: "fast:270/vm-270-disk-0.raw,size=2G",
			note: "PVE moves a container's volumes only while it is stopped: it is shut down for the move and started again",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSim(t)
			ctx := context.Background()
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, storage+tc.doc), engine.Options{}))
			old, err := sim.cl.GuestConfig(ctx, tc.typ, "pve", tc.vmid)
			if err != nil {
				t.Fatal(err)
			}
			set := loadSpec(t, storage+strings.Replace(tc.doc, tc.from, tc.to, 1))
			p := planFor(t, sim, set, engine.Options{})
			c := p.Change(map[pve.GuestType]string{pve.QEMU: "QemuVM/mv", pve.LXC: "LxcContainer/mv"}[tc.typ])
			if c.Action != engine.Update || !strings.Contains(strings.Join(c.Reasons, "\n"), tc.note) {
				t.Fatalf("plan: %s %q, want an update that %s", c.Action, c.Reasons, tc.note)
			}
			applyPlan(t, sim, p)
			cfg, err := sim.cl.GuestConfig(ctx, tc.typ, "pve", tc.vmid)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Get(tc.key) != tc.want {
				t.Errorf("%s after the move: got %q want %q", tc.key, cfg.Get(tc.key), tc.want)
			}
			oldVol := driveFile(old.Get(tc.key))
			vols, err := sim.cl.StorageContent(ctx, "pve", "local-lvm", "")
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vols {
				if v.VolID == oldVol {
					t.Errorf("old volume %s still there after the move", oldVol)
				}
			}
			for k, v := range cfg.All() {
				if strings.HasPrefix(k, "unused") {
					t.Errorf("%s = %s after a move with delete=1", k, v)
				}
			}
			if st, err := sim.cl.GuestStatus(ctx, tc.typ, "pve", tc.vmid); err != nil || st.Status != "running" {
				t.Errorf("guest after the move: %+v %v, want running", st, err)
			}
			if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
				t.Errorf("plan after the move: %q %q", summary(p), p.Change(c.Address).Reasons)
			}
		})
	}
}

// A smaller disk is refused at plan time, saying what to do instead.
func TestSimDiskShrinkRefused(t *testing.T) {
	sim := newSim(t)
	const doc = "kind: QemuVM\nname: sh\nspec:\n  vmid: 180\n  scsi0: local-lvm:8\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	set := loadSpec(t, strings.Replace(doc, "local-lvm:8", "local-lvm:4", 1))
	if _, err := tryPlan(t, sim, set, engine.Options{}); err == nil || !strings.Contains(err.Error(), "scsi0: PVE cannot shrink a disk (8G → 4G)") {
		t.Errorf("plan of a smaller disk: got %v", err)
	}
}

// Adding UEFI to an existing VM — bios: ovmf and an EFI disk — is an
// update, never a replace; on a running VM both wait for its next start.
func TestSimAddEFIDiskIsAnUpdate(t *testing.T) {
	for _, running := range []bool{false, true} {
		t.Run(map[bool]string{false: "stopped", true: "running"}[running], func(t *testing.T) {
			sim := newSim(t)
			ctx := context.Background()
			doc := "kind: QemuVM\nname: uefi\nspec:\n  vmid: 190\n  scsi0: local-lvm:4\n  running: " + map[bool]string{false: "false", true: "true"}[running] + "\n"
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
			set := loadSpec(t, doc+"  bios: ovmf\n  efidisk0: local-lvm:1,efitype=4m,pre-enrolled-keys=1\n")
			p := planFor(t, sim, set, engine.Options{})
			c := p.Changes[0]
			want := []engine.FieldDiff{{Path: "bios", Before: nil, After: "ovmf"}, {Path: "efidisk0", Before: nil, After: "local-lvm:1,efitype=4m,pre-enrolled-keys=1"}}
			if c.Action != engine.Update || !cmp.Equal(want, c.Diff) {
				t.Fatalf("plan: %s %+v, want an update adding bios and efidisk0", c.Action, c.Diff)
			}
			if pending := strings.Contains(strings.Join(c.Reasons, "\n"), "pending until reboot: bios, efidisk0"); pending != running {
				t.Errorf("reasons %q: pending until reboot announced %v, want %v", c.Reasons, pending, running)
			}
			applyPlan(t, sim, p)
			cfg, err := sim.cl.GuestConfig(ctx, pve.QEMU, "pve", 190)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Get("bios") != "ovmf" || !strings.HasPrefix(cfg.Get("efidisk0"), "local-lvm:vm-190-disk-1,") {
				t.Errorf("after apply: bios %q efidisk0 %q", cfg.Get("bios"), cfg.Get("efidisk0"))
			}
			if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
				t.Errorf("second plan: %q %+v", summary(p), p.Changes[0].Diff)
			}
		})
	}
}

// An HA-managed guest's migration is a request to the HA manager (an
// hamigrate task that ends before the guest moves: qemu-server
// API2/Qemu.pm migrate_vm): apply waits until the guest is on its new
// node before it goes on there.
func TestSimHAManagedGuestMigrates(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	doc := "kind: QemuVM\nname: ha-app\nspec:\n  node: pve\n  vmid: 152\n  memory: 1024\n  scsi0: local-lvm:4\n  running: true\n---\n" +
		"kind: HAResource\nname: ha-app\nspec:\n  guest: QemuVM/ha-app\n  state: started\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	set := loadSpec(t, strings.Replace(strings.Replace(doc, "node: pve", "node: pve2", 1), "memory: 1024", "memory: 2048", 1))
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
		t.Errorf("plan after the migration: %q", summary(p))
	}
	if diff := cmp.Diff([]string{"pve2/running"}, where(t, sim, pve.QEMU, 152, "pve", "pve2")); diff != "" {
		t.Errorf("guest 152 (-want +got):\n%s", diff)
	}
}

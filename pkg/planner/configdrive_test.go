package planner

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

const driveSpec = `kind: ConfigDriveISO
name: seed-web01
spec:
  storage: local
  hostname: web01
  userData: |
    #cloud-config
    packages: [nginx]
---
kind: QemuVM
name: web01
spec:
  vmid: 150
  memory: 512
  configDrive: seed-web01
`

// seqHooks records every hook call in one ordered list.
type seqHooks struct {
	mu     sync.Mutex
	events []string
}

func (h *seqHooks) add(s string)              { h.mu.Lock(); h.events = append(h.events, s); h.mu.Unlock() }
func (h *seqHooks) PreApply(c *engine.Change) { h.add("pre " + c.Address) }
func (h *seqHooks) PostApply(c *engine.Change, e error) {
	h.add(fmt.Sprintf("post %s err=%v", c.Address, e))
}
func (h *seqHooks) Skipped(c *engine.Change, r string)          { h.add("skip " + c.Address + ": " + r) }
func (h *seqHooks) Message(c *engine.Change, m string)          { h.add(c.Address + ": " + m) }
func (h *seqHooks) Output(*engine.Change, string, string, bool) {}
func (h *seqHooks) index(prefix string) int {
	return slices.IndexFunc(h.events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}
func (h *seqHooks) String() string { return strings.Join(h.events, "\n") }

func newDataSim(t *testing.T) (*simClients, string) {
	t.Helper()
	dir := t.TempDir()
	s := simtest.Start(t, simtest.Options{Conformance: true, Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret,
		TaskDuration: time.Millisecond, Seed: 1, DataDir: dir}})
	return &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}, dir
}

func applySeq(t *testing.T, cl engine.Clients, p *engine.Plan) *seqHooks {
	t.Helper()
	h := &seqHooks{}
	if _, err := engine.Apply(context.Background(), cl, p, engine.ApplyOptions{Hooks: h}); err != nil {
		t.Fatalf("Apply: %v\n%s", err, h)
	}
	return h
}

func isoFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "local", "iso", "*.iso"))
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// TestSimConfigDriveLifecycle: the drive is uploaded before the VM that
// has it on ide3; an edited seed is a new version that the VM follows in
// place, and the old one goes only after the VM moved; a version that a
// VM outside the specs has stays (and the plan is clean with it); destroy
// removes the VM, then every version.
func TestSimConfigDriveLifecycle(t *testing.T) {
	sim, dir := newDataSim(t)
	ctx := context.Background()
	set := loadSpec(t, driveSpec)
	first := set.Lookup("ConfigDriveISO/seed-web01").Params.Get("filename")

	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "first plan", p, []string{"create ConfigDriveISO/seed-web01", "create QemuVM/web01 <- ConfigDriveISO/seed-web01"})
	applySeq(t, sim, p)
	img, _, _ := spec.ConfigDriveImage(set.Lookup("ConfigDriveISO/seed-web01"))
	if got, err := os.ReadFile(filepath.Join(dir, "local", "iso", first)); err != nil || !bytes.Equal(got, img) {
		t.Errorf("uploaded file: %d bytes (%v), want the %d bytes of the image", len(got), err, len(img))
	}
	cfg, err := sim.cl.GuestConfig(ctx, pve.QEMU, "pve", 150)
	if err != nil || !strings.HasPrefix(cfg.Get("ide3"), "local:iso/"+first+",media=cdrom") {
		t.Fatalf("vm 150 ide3: %q (%v), want the drive as a CD-ROM", cfg.Get("ide3"), err)
	}
	wantConverged(t, t.Fatalf, sim, set, "second plan")

	// An edited seed: a new version, the VM re-pointed, the old one removed after it.
	edited := loadSpec(t, strings.Replace(driveSpec, "nginx", "apache2", 1))
	second := edited.Lookup("ConfigDriveISO/seed-web01").Params.Get("filename")
	p = planFor(t, sim, edited, engine.Options{})
	wantPlan(t, "plan after the edit", p, []string{"update ConfigDriveISO/seed-web01", "update QemuVM/web01 <- ConfigDriveISO/seed-web01"})
	// No cache of the first version's content (drivecache.go): the new
	// content is shown as such.
	if diff := cmp.Diff([]engine.FieldDiff{{Path: "hostname", After: "web01"}, {Path: "userData", After: "#cloud-config\npackages: [apache2]\n"},
		{Path: "filename", Before: first, After: second}, {Path: "versions", Before: first, After: nil}}, p.Changes[0].Diff); diff != "" {
		t.Errorf("drive diff (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]engine.FieldDiff{{Path: "ide3.file", Before: "local:iso/" + first, After: "local:iso/" + second}}, p.Changes[1].Diff); diff != "" {
		t.Errorf("VM diff (-want +got):\n%s", diff)
	}
	h := applySeq(t, sim, p)
	upload, vmDone, removal := h.index("ConfigDriveISO/seed-web01: uploading "+second), h.index("post QemuVM/web01 err=<nil>"), h.index("ConfigDriveISO/seed-web01: removing local:iso/"+first)
	if upload < 0 || vmDone < 0 || removal < 0 || !(upload < vmDone && vmDone < removal) {
		t.Errorf("want upload, then the VM, then the old version's removal:\n%s", h)
	}
	if diff := cmp.Diff([]string{second}, isoFiles(t, dir)); diff != "" {
		t.Errorf("ISO files (-want +got):\n%s", diff)
	}
	cfg, _ = sim.cl.GuestConfig(ctx, pve.QEMU, "pve", 150)
	if !strings.HasPrefix(cfg.Get("ide3"), "local:iso/"+second+",") {
		t.Errorf("vm 150 ide3: %q, want the new version", cfg.Get("ide3"))
	}
	wantConverged(t, t.Fatalf, sim, edited, "plan after the edit was applied")

	// A VM outside the specs has the current version: the next edit keeps it.
	if err := sim.cl.CreateGuest(ctx, pve.QEMU, "pve", url.Values{"vmid": {"151"}, "ide2": {"local:iso/" + second + ",media=cdrom"}}); err != nil {
		t.Fatal(err)
	}
	third := loadSpec(t, strings.Replace(driveSpec, "nginx", "caddy", 1))
	p = planFor(t, sim, third, engine.Options{})
	if c := p.Changes[0]; c.Action != engine.Update || !slices.Contains(c.Reasons, "old version "+second+" kept: in use by VM 151") {
		t.Fatalf("plan with a foreign user: %s %q, want an update that keeps %s", c.Action, c.Reasons, second)
	}
	applySeq(t, sim, p)
	if got := isoFiles(t, dir); len(got) != 2 || !slices.Contains(got, second) {
		t.Errorf("ISO files %v: want the new version and the one VM 151 has", got)
	}
	wantConverged(t, t.Fatalf, sim, third, "plan with the foreign user's version kept")

	// Destroy: the VM first, then the versions; one still on VM 151 is an error.
	p = planFor(t, sim, third, engine.Options{Destroy: true})
	wantPlan(t, "destroy plan", p, []string{"delete QemuVM/web01", "delete ConfigDriveISO/seed-web01 <- QemuVM/web01"})
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{})
	if err == nil || !strings.Contains(fmt.Sprint(res.Failed["ConfigDriveISO/seed-web01"]), "local:iso/"+second+" is on a drive of VM 151: detach it there first") {
		t.Fatalf("destroy with VM 151 using a version: %v, want a refusal naming it", err)
	}
	if err := sim.cl.DeleteGuest(ctx, pve.QEMU, "pve", 151); err != nil {
		t.Fatal(err)
	}
	applyPlan(t, sim, planFor(t, sim, third, engine.Options{Destroy: true}))
	if got := isoFiles(t, dir); len(got) != 0 {
		t.Errorf("ISO files after destroy: %v, want none", got)
	}
}

// TestSimConfigDriveKeptWhenVMFails: when the VM cannot be
// re-pointed, the old version stays and the next plan shows it again.
func TestSimConfigDriveKeptWhenVMFails(t *testing.T) {
	sim, dir := newDataSim(t)
	ctx := context.Background()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, driveSpec), engine.Options{}))
	first := isoFiles(t, dir)
	edited := loadSpec(t, strings.Replace(driveSpec, "nginx", "apache2", 1))
	p := planFor(t, sim, edited, engine.Options{})
	// An edit behind the plan's back: the VM's update fails on the digest.
	if err := sim.cl.UpdateGuest(ctx, pve.QEMU, "pve", 150, url.Values{"cores": {"2"}}); err != nil {
		t.Fatal(err)
	}
	h := &seqHooks{}
	_, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{Hooks: h})
	if err == nil {
		t.Fatalf("apply with a locked VM succeeded:\n%s", h)
	}
	if h.index("ConfigDriveISO/seed-web01: kept what it removes after its dependents: QemuVM/web01 did not finish") < 0 {
		t.Errorf("want the late removal left out:\n%s", h)
	}
	if got := isoFiles(t, dir); len(got) != 2 || !slices.Contains(got, first[0]) {
		t.Errorf("ISO files %v: want both versions", got)
	}
}

// TestSimDownloadedImage: download-url with the spec's parameters, waited
// for; the second plan is clean; destroy deletes the file.
func TestSimDownloadedImage(t *testing.T) {
	sim, dir := newDataSim(t)
	set := loadSpec(t, `kind: DownloadedImage
name: debian-12-cloud
spec:
  node: pve
  storage: local
  content: import
  filename: debian-12-genericcloud-amd64.qcow2
  url: https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2
  checksum: 8f2d2f8d36756ea892a3ad9ede1128f1593c29a8f86d2046b0bda80cd02dafa76c96a1a6ea64d49e2ce04ff0e97b9c3b5945cc2506d541ff70501e0dd7fcea25
  checksum-algorithm: sha512
  verify-certificates: true
`)
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"create DownloadedImage/debian-12-cloud"})
	applyPlan(t, sim, p)
	file := filepath.Join(dir, "local", "import", "debian-12-genericcloud-amd64.qcow2")
	if _, err := os.Stat(file); err != nil {
		t.Errorf("no downloaded file in the data dir: %v", err)
	}
	wantConverged(t, t.Fatalf, sim, set, "second plan")
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{Destroy: true}))
	if vs, err := sim.cl.StorageContent(context.Background(), "pve", "local", "import"); err != nil || len(vs) != 0 {
		t.Errorf("after destroy: %v, %v, want no import content", vs, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the file is still in the data dir: %v", err)
	}
}

// TestSimConfigDriveSavedPlan: a saved plan carries what apply needs (the
// seed to build again, the old versions to remove) and applies without
// the specs.
func TestSimConfigDriveSavedPlan(t *testing.T) {
	sim, dir := newDataSim(t)
	ctx := context.Background()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, driveSpec), engine.Options{}))
	edited := loadSpec(t, strings.Replace(driveSpec, "nginx", "apache2", 1))
	_, p := marshalled(t, planFor(t, sim, edited, engine.Options{}))
	if err := engine.Verify(ctx, sim, p); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	applySeq(t, sim, p)
	want := edited.Lookup("ConfigDriveISO/seed-web01").Params.Get("filename")
	if diff := cmp.Diff([]string{want}, isoFiles(t, dir)); diff != "" {
		t.Errorf("ISO files after applying the saved plan (-want +got):\n%s", diff)
	}
	wantConverged(t, t.Errorf, sim, edited, "plan after the saved plan")
}

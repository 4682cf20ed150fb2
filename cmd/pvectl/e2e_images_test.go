package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/internal/testtool"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// imagesSpec is the Connection, DownloadedImage and ConfigDriveISO of the
// shared example 04, and a VM with the config drive.
func imagesSpec(t *testing.T, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "04-every-kind-images.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b) + `
---
kind: QemuVM
name: web01
connection: lab
spec:
  node: pve
  vmid: 300
  memory: 512
  configDrive: seed-web01
`
	if edit != nil {
		s = edit(s)
	}
	return writeSpec(t, "images.yaml", s)
}

func startDataSim(t *testing.T) (*simEnv, string) {
	t.Helper()
	dir := t.TempDir()
	return startSimOpts(t, pvesim.Options{DataDir: dir, TaskDuration: 30 * time.Millisecond}, nil), dir
}

// seedFiles are the config drive versions in the simulator's data dir.
func seedFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "local", "iso", "seed-web01-*.iso"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestE2EConfigDriveAndImage is issue 8's acceptance for both kinds: the
// documents of the shared example apply against `sim --data-dir`; the
// uploaded config drive is an ISO that xorriso reads, labelled cidata,
// with the exact user-data, and two builds are byte-identical; editing
// userData uploads a new version, re-points the VM, removes the old file,
// and the next plan is clean; destroy removes everything. (The simulator
// never downloads: the image is a placeholder, see docs/simulator.md.)
func TestE2EConfigDriveAndImage(t *testing.T) {
	xorriso := testtool.Path(t, "xorriso", "xorriso")
	e, dir := startDataSim(t)
	// One cache across runs, as a user's machine keeps it (HOME is new
	// per run here): the edit below shows the old userData's lines.
	e.extraEnv = append(e.extraEnv, "PVECTL_CACHE_DIR="+t.TempDir())
	spec := imagesSpec(t, nil)
	e.mustRun(0, "apply", "-f", spec, "--auto-approve")
	if r := e.run("plan", "-f", spec, "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("second plan: exit %d, want 0 (clean)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "local", "import", "debian-12-genericcloud-amd64.qcow2")); err != nil {
		t.Errorf("the downloaded image is not in the data dir: %v", err)
	}
	files := seedFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("config drive files: %v, want one", files)
	}
	first := files[0]
	out, errOut := testtool.Run(t, xorriso, "-indev", first, "-ls")
	if !strings.Contains(out+errOut, "Volume id    : 'cidata'") || !strings.Contains(out, "'user-data'") || !strings.Contains(out, "'network-config'") {
		t.Errorf("xorriso -ls: want label cidata, user-data and network-config:\n%s%s", errOut, out)
	}
	userData := func(iso string) string {
		x := filepath.Join(t.TempDir(), "user-data")
		testtool.Run(t, xorriso, "-osirrox", "on", "-indev", iso, "-extract", "/user-data", x)
		b, err := os.ReadFile(x)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := userData(first); got != "#cloud-config\npackages: [nginx]\n" {
		t.Errorf("user-data on the drive: %q", got)
	}
	cfg, err := e.client.GuestConfig(context.Background(), pve.QEMU, "pve", 300)
	// qemu-server's create_disks writes the ISO's size as the storage reports it.
	if err != nil || !strings.HasPrefix(cfg.Get("ide3"), "local:iso/"+filepath.Base(first)+",media=cdrom,size=") {
		t.Errorf("vm 300 ide3: %q (%v), want the drive", cfg.Get("ide3"), err)
	}

	// Another cluster, the same spec: the same bytes.
	e2, dir2 := startDataSim(t)
	e2.mustRun(0, "apply", "-f", spec, "--auto-approve")
	if other := seedFiles(t, dir2); len(other) != 1 || filepath.Base(other[0]) != filepath.Base(first) {
		t.Fatalf("second build: %v, want %s", other, filepath.Base(first))
	} else if a, b := readFile(t, first), readFile(t, other[0]); !bytes.Equal(a, b) {
		t.Errorf("two builds of one spec differ (%d and %d bytes)", len(a), len(b))
	}

	// An edited userData: a new version, the VM re-pointed, the old file gone.
	edited := imagesSpec(t, func(s string) string { return strings.Replace(s, "packages: [nginx]", "packages: [nginx, curl]", 1) })
	p := parsePlan(t, e.mustRun(0, "plan", "-f", edited, "--json").stdout)
	var actions []string
	for _, c := range p.Changes {
		if c.Action != "noop" {
			actions = append(actions, c.Action+" "+c.Address)
		}
	}
	if want := []string{"update ConfigDriveISO/seed-web01", "update QemuVM/web01"}; !slices.Equal(actions, want) {
		t.Errorf("plan after the edit: %v, want %v", actions, want)
	}
	// Issue 23: the userData change shows the changed lines.
	shown := e.mustRun(0, "plan", "-f", edited).stdout
	if !regexp.MustCompile(`(?m)^ +- packages: \[nginx\]\n +\+ packages: \[nginx, curl\]$`).MatchString(shown) || strings.Contains(shown, "not known on this machine") {
		t.Errorf("plan after the edit does not show the changed lines of userData:\n%s", shown)
	}
	e.mustRun(0, "apply", "-f", edited, "--auto-approve")
	files = seedFiles(t, dir)
	if len(files) != 1 || files[0] == first {
		t.Fatalf("config drive files after the edit: %v, want only a new version", files)
	}
	if got := userData(files[0]); got != "#cloud-config\npackages: [nginx, curl]\n" {
		t.Errorf("user-data of the new version: %q", got)
	}
	cfg, _ = e.client.GuestConfig(context.Background(), pve.QEMU, "pve", 300)
	if !strings.HasPrefix(cfg.Get("ide3"), "local:iso/"+filepath.Base(files[0])+",") {
		t.Errorf("vm 300 ide3 after the edit: %q, want %s", cfg.Get("ide3"), filepath.Base(files[0]))
	}
	if r := e.run("plan", "-f", edited, "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("plan after the edit was applied: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}

	r := e.mustRun(0, "destroy", "-f", edited, "--auto-approve")
	if files := seedFiles(t, dir); len(files) != 0 {
		t.Errorf("config drive files after destroy: %v", files)
	}
	if vs, err := e.client.StorageContent(context.Background(), "pve", "local", "import"); err != nil || len(vs) != 0 {
		t.Errorf("import content after destroy: %v (%v), want none", vs, err)
	}
	if !regexp.MustCompile(`(?s)QemuVM/web01.*ConfigDriveISO/seed-web01`).MatchString(r.stdout) {
		t.Errorf("destroy output: want the VM before its drive:\n%s", r.stdout)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

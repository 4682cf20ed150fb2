package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// generatedMAC matches the MAC address PVE wrote into a NIC: "virtio=MAC"
// (qemu) or "hwaddr=MAC" (lxc).
var generatedMAC = regexp.MustCompile(`(=|hwaddr=)[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}`)

// managedConfig is a VM's config without what PVE generates or keeps
// for itself, and without PVE's defaults (written or not, they are the
// same configuration): what must be the same after it is made again.
func managedConfig(cfg *pve.Config) map[string]string {
	m, _ := schema.Default().Lookup("POST", "/nodes/{node}/qemu")
	out := map[string]string{}
	for k, v := range cfg.All() {
		switch k {
		case "digest", "vmgenid", "smbios1", "meta":
			continue
		}
		if p, ok := m.Param(k); ok && p.Default != nil && fmt.Sprint(p.Default) == v {
			continue
		}
		out[k] = generatedMAC.ReplaceAllString(v, "")
	}
	return out
}

// ifaceConfig is an interface as the node lists it, without what changes
// by itself (its position in the file, whether it is up).
func ifaceConfig(t *testing.T, e *simEnv, iface string) map[string]string {
	t.Helper()
	ifaces, _, err := e.client.NetworkList(context.Background(), "pve")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ifaces {
		if c.Get("iface") == iface {
			out := c.Map()
			delete(out, "priority")
			delete(out, "active")
			return out
		}
	}
	return nil
}

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/<TestName>.golden (-update rewrites it).
func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to rewrite it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// writeFile is writeSpec: body in a file of its own, name in a new
// temporary directory.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	return writeSpec(t, name, body)
}

// TestE2EImportExample01 is issue 12's acceptance: after example 01 is
// applied, `import --all --node pve` writes specs that plan clean; after
// the example's resources are destroyed, applying the imported specs makes
// them again with the same managed configuration.
func TestE2EImportExample01(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	f := example(t, "01-bridge-and-vm.yaml", nil)
	e.mustRun(0, "apply", "-f", f, "--auto-approve")
	vmBefore, err := e.client.GuestConfig(ctx, pve.QEMU, "pve", 100)
	if err != nil {
		t.Fatal(err)
	}
	brBefore := ifaceConfig(t, e, "vmbr1")

	r := e.mustRun(0, "import", "--all", "--node", "pve")
	golden(t, generatedMAC.ReplaceAllString(r.stdout, "=MAC"))
	containsAll(t, "import output", r.stdout, "kind: QemuVM\nname: app-vm-1\n", "kind: LinuxBridge\nname: vmbr1\n", "kind: NetworkApply\nname: pve\n",
		"scsi0: local-lvm:32", "kind: LinuxBridge\nname: vmbr0\nmanaged: false\n")
	if !regexp.MustCompile(`net1: virtio=BC:24:11(:[0-9A-F]{2}){3},bridge=vmbr1,tag=100\n`).MatchString(r.stdout) {
		t.Errorf("import output does not keep the MAC of net1:\n%s", r.stdout)
	}
	// No write-backs but the MACs, no defaults, no power state.
	for _, not := range []string{"vmgenid", "smbios1", "meta:", "vm-100-disk-0", "bridge_vids", "digest", "running:"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("import output has %q:\n%s", not, r.stdout)
		}
	}
	e.mustRun(0, "plan", "-f", writeFile(t, "plain.yaml", r.stdout), "--detailed-exitcode")
	// With its power state, the VM is made again running, as example 01 has it.
	r = e.mustRun(0, "import", "--all", "--node", "pve", "--with-power-state")
	if !strings.Contains(r.stdout, "running: true") {
		t.Errorf("--with-power-state did not write running: true:\n%s", r.stdout)
	}
	imported := writeFile(t, "imported.yaml", r.stdout)
	e.mustRun(0, "validate", "-f", imported)
	e.mustRun(0, "plan", "-f", imported, "--detailed-exitcode")

	// The same, one file per document and with -o.
	dir := t.TempDir()
	e.mustRun(0, "import", "--all", "--node", "pve", "--out-dir", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if !slices.Contains(files, filepath.Join(dir, "qemuvm-app-vm-1.yaml")) || !slices.Contains(files, filepath.Join(dir, "linuxbridge-vmbr1.yaml")) {
		t.Errorf("--out-dir wrote %v", files)
	}
	e.mustRun(0, "plan", "-f", dir, "--detailed-exitcode")
	out := filepath.Join(t.TempDir(), "one.yaml")
	e.mustRun(0, "import", "QemuVM/100", "LinuxBridge/pve/vmbr1", "-o", out)
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "name: app-vm-1") || strings.Contains(string(b), "vmbr0\nspec") {
		t.Errorf("-o wrote:\n%s", b)
	}

	// Gone, then made again from the imported specs.
	e.mustRun(0, "destroy", "-f", imported, "--target", "QemuVM/app-vm-1", "--target", "LinuxBridge/vmbr1", "--auto-approve")
	if _, err := e.client.GuestConfig(ctx, pve.QEMU, "pve", 100); !pve.IsNotFound(err) {
		t.Fatalf("VM 100 after destroy: %v", err)
	}
	if ifaceConfig(t, e, "vmbr1") != nil {
		t.Fatal("vmbr1 is still there after destroy")
	}
	e.mustRun(0, "apply", "-f", imported, "--auto-approve")
	e.mustRun(0, "plan", "-f", imported, "--detailed-exitcode")
	vmAfter, err := e.client.GuestConfig(ctx, pve.QEMU, "pve", 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := managedConfig(vmAfter), managedConfig(vmBefore); !maps.Equal(got, want) {
		t.Errorf("VM 100 made again from the import:\ngot  %v\nwant %v", got, want)
	}
	if got := ifaceConfig(t, e, "vmbr1"); !maps.Equal(got, brBefore) {
		t.Errorf("vmbr1 made again from the import:\ngot  %v\nwant %v", got, brBefore)
	}
	// The original specs plan clean on what the import made.
	e.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// TestE2EImportEveryKind imports what example 04 applies: every kind but
// the derived ConfigDriveISO is written, the import plans clean, a VM's
// secret becomes a ${VAR} placeholder whose value appears nowhere, and
// so does the token's secret.
func TestE2EImportEveryKind(t *testing.T) {
	e := startSimOpts(t, pvesim.Options{DataDir: t.TempDir()}, nil)
	ctx := context.Background()
	e.addGPUMapping()
	f := example(t, "04-every-kind.yaml", nil)
	e.mustRun(0, "apply", "-f", f, "--auto-approve")
	const password = "hunter2-cloudinit-pw"
	if err := e.client.Do(ctx, http.MethodPut, "/nodes/pve/qemu/300/config", url.Values{"cipassword": {password}, "ciuser": {"ops"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Do(ctx, http.MethodPut, "/pools", url.Values{"poolid": {"lab"}, "storage": {"nfs-images"}}, nil); err != nil {
		t.Fatal(err)
	}
	const pbsPassword = "pbs-s3cret-password"
	if err := e.client.Do(ctx, http.MethodPost, "/storage", url.Values{"type": {"pbs"}, "storage": {"pbs1"}, "server": {"127.0.0.9"},
		"datastore": {"store"}, "username": {"backup@pbs"}, "password": {pbsPassword}, "content": {"backup"}}, nil); err != nil {
		t.Fatal(err)
	}
	tokenSecret, err := os.ReadFile(filepath.Join(filepath.Dir(f), "secrets", "ci-deploy.token"))
	if err != nil || len(tokenSecret) < 8 {
		t.Fatalf("the token's secret file: %v", err)
	}

	r := e.mustRun(0, "import", "--all", "--debug")
	for _, kind := range []string{"Storage", "Pool", "DownloadedImage", "BondInterface", "LinuxBridge", "NodeDns", "NetworkApply", "User", "APIToken", "ACL", "LxcContainer", "QemuVM"} {
		if !strings.Contains(r.stdout, "kind: "+kind+"\n") {
			t.Errorf("import output has no %s", kind)
		}
	}
	// The config drive's ISO is pvectl's own (derived), root@pam PVE's.
	for _, not := range []string{"kind: ConfigDriveISO", "kind: Connection", "filename: seed-web01-", "root@pam"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("import output has %q:\n%s", not, r.stdout)
		}
	}
	for _, secret := range []string{password, pbsPassword, strings.TrimSpace(string(tokenSecret)), e2eTokenSecret} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("import printed a secret (%.4s…)", secret)
		}
	}
	if !strings.Contains(r.stdout, "password: ${STORAGE_PBS1_PASSWORD}") || !strings.Contains(r.stderr, "STORAGE_PBS1_PASSWORD") {
		t.Errorf("the PBS storage's password is not a placeholder named on stderr:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "cipassword: ${VM_300_CIPASSWORD}") || !strings.Contains(r.stderr, "VM_300_CIPASSWORD") {
		t.Errorf("the VM's cipassword is not a placeholder named on stderr:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	containsAll(t, "import output", r.stdout, "kind: DownloadedImage\nname: debian-12-genericcloud-amd64.qcow2\nmanaged: false\n", "rootfs: local-lvm:8", "efidisk0: local-lvm:1,",
		"kind: Pool\nname: lab\nspec:\n  comment: Lab machines\n  storages:\n    - nfs-images\n")
	if !strings.Contains(r.stdout, "name: ubuntu-24.04-cloud\nmanaged: false\nspec:\n  node: pve\n  vmid: 9000\n") || !strings.Contains(r.stdout, "template: true") {
		t.Errorf("the seeded template is not imported as a QemuVM with template: true:\n%s", r.stdout)
	}
	imported := writeFile(t, "all.yaml", r.stdout)
	if !strings.Contains(r.stdout, "ostemplate: ${CONTAINER_200_OSTEMPLATE}") || !strings.Contains(r.stderr, "CONTAINER_200_OSTEMPLATE") {
		t.Errorf("the container's template (PVE does not record it) is not a placeholder named on stderr:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// Distinct values: a secret's value in a plain field is refused.
	e.extraEnv = []string{"VM_300_CIPASSWORD=vm-300-password", "STORAGE_PBS1_PASSWORD=pbs1-password", "CONTAINER_200_OSTEMPLATE=local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"}
	e.mustRun(0, "plan", "-f", imported, "--detailed-exitcode")
	e.extraEnv = nil
	e.mustRun(3, "plan", "-f", imported) // the placeholder's variable is unset: refused

	// Example 04's resources destroyed with the imported specs and made
	// again from them: the same managed configuration. The container's
	// template is the one thing PVE does not record.
	e.extraEnv = []string{"VM_300_CIPASSWORD=" + password, "STORAGE_PBS1_PASSWORD=" + pbsPassword}
	vmBefore, _ := e.client.GuestConfig(ctx, pve.QEMU, "pve", 300)
	ctBefore, _ := e.client.GuestConfig(ctx, pve.LXC, "pve", 200)
	withTemplate := writeFile(t, "all2.yaml", strings.Replace(r.stdout, "${CONTAINER_200_OSTEMPLATE}", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", 1))
	var targets []string
	for _, a := range []string{"Storage/nfs-images", "Storage/pbs1", "Pool/lab", "BondInterface/bond0", "User/ci@pve", "APIToken/deploy", "ACL/ci-pve-deploy-pool-lab-pvevmadmin", "LxcContainer/dns01", "QemuVM/gpu-worker"} {
		targets = append(targets, "--target", a)
	}
	e.mustRun(0, append([]string{"destroy", "-f", withTemplate, "--auto-approve"}, targets...)...)
	if _, err := e.client.GuestConfig(ctx, pve.QEMU, "pve", 300); !pve.IsNotFound(err) {
		t.Fatalf("VM 300 after destroy: %v", err)
	}
	e.mustRun(0, "apply", "-f", withTemplate, "--auto-approve")
	e.mustRun(0, "plan", "-f", withTemplate, "--detailed-exitcode")
	vmAfter, _ := e.client.GuestConfig(ctx, pve.QEMU, "pve", 300)
	if got, want := managedConfig(vmAfter), managedConfig(vmBefore); !maps.Equal(got, want) {
		t.Errorf("VM 300 made again from the import:\ngot  %v\nwant %v", got, want)
	}
	ctAfter, _ := e.client.GuestConfig(ctx, pve.LXC, "pve", 200)
	if got, want := managedConfig(ctAfter), managedConfig(ctBefore); !maps.Equal(got, want) {
		t.Errorf("container 200 made again from the import:\ngot  %v\nwant %v", got, want)
	}
}

// TestE2EImportRestrictedToken: a token that may not audit some objects
// gets a warning naming what it lacks for --all (PVE would hide them), and
// an error for an object it names.
func TestE2EImportRestrictedToken(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	e.mustRun(0, "apply", "-f", example(t, "01-bridge-and-vm.yaml", nil), "--auto-approve")
	admin := func(method, path string, params url.Values, out any) {
		t.Helper()
		if err := e.client.Do(ctx, method, path, params, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	admin(http.MethodPost, "/pools", url.Values{"poolid": {"lab"}}, nil)
	tok := e.privsepToken(t, "ro@pve", "import", grant{"/vms", "PVEAuditor"})
	e.extraEnv = tok.env()

	r := e.mustRun(0, "import", "--all", "--node", "pve")
	if !strings.Contains(r.stdout, "name: app-vm-1") {
		t.Errorf("the VM the token may audit was not imported:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	containsAll(t, "stderr", r.stderr,
		"Warning: Pool: the API token "+tok.Full+" lacks Pool.Audit on /pool",
		"Warning: LinuxBridge: the API token "+tok.Full+" lacks Sys.Audit on /nodes/pve",
		"what the token may not audit is not imported",
	)
	if strings.Contains(r.stdout+r.stderr, tok.Value) {
		t.Error("import printed the token's secret")
	}
	r = e.mustRun(1, "import", "Pool/lab")
	if !strings.Contains(r.stderr, "lacks Pool.Audit on /pool") {
		t.Errorf("import Pool/lab with a token that may not audit pools:\n%s", r.stderr)
	}
	e.mustRun(3, "import", "Nope/1")
	r = e.mustRun(3, "import", "ConfigDriveISO/seed-web01")
	if !strings.Contains(r.stderr, "ConfigDriveISO is not imported: a config drive is built from its spec's user data") {
		t.Errorf("import ConfigDriveISO/…:\n%s", r.stderr)
	}
	e.mustRun(3, "import")
}

// TestE2EImportGuests: a VM without a name is skipped with a warning, two
// VMs of one name get documents of their own, the MAC addresses are kept,
// --with-generated keeps the vmgenid, and a node with staged network
// changes makes the import comment out the resource that would not plan
// clean, naming it, while the others are written (exit 2).
func TestE2EImportGuests(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	admin := func(method, path string, params url.Values) {
		t.Helper()
		var upid string
		if err := e.client.Do(ctx, method, path, params, &upid); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if strings.HasPrefix(upid, "UPID:") {
			u, err := pve.ParseUPID(upid)
			if err == nil {
				_, err = e.client.WaitTask(ctx, u)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	admin(http.MethodPost, "/nodes/pve/qemu", url.Values{"vmid": {"555"}, "memory": {"512"}})
	for _, id := range []string{"556", "557"} {
		admin(http.MethodPost, "/nodes/pve/qemu", url.Values{"vmid": {id}, "name": {"twin"}, "net0": {"virtio,bridge=vmbr0"}})
	}
	r := e.mustRun(0, "import", "--all", "--node", "pve")
	if !strings.Contains(r.stderr, "Warning: VM 555 on node pve has no name: skipped") {
		t.Errorf("no warning for the nameless VM:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout, "vmid: 555") {
		t.Errorf("the nameless VM was imported:\n%s", r.stdout)
	}
	containsAll(t, "import output", r.stdout, "name: twin\nspec:\n  node: pve\n  vmid: 556\n", "name: twin-557\nspec:\n  node: pve\n  vmid: 557\n  name: twin\n")
	if !strings.Contains(r.stdout, "  net0: virtio=BC:24:11:") {
		t.Errorf("the generated MAC addresses of existing guests are not kept:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "vmgenid") {
		t.Errorf("vmgenid without --with-generated:\n%s", r.stdout)
	}
	e.mustRun(0, "plan", "-f", writeFile(t, "guests.yaml", r.stdout), "--detailed-exitcode")
	r = e.mustRun(1, "import", "QemuVM/twin", "QemuVM/9999")
	containsAll(t, "stderr", r.stderr, "QemuVM/twin: matches 2 objects: name one of QemuVM/556, QemuVM/557", "QemuVM/9999: not found (there are: 555, 556, 557, 9000)")
	r = e.mustRun(0, "import", "QemuVM/556", "--with-generated")
	if !generatedMAC.MatchString(r.stdout) || !strings.Contains(r.stdout, "vmgenid:") {
		t.Errorf("--with-generated did not keep the MAC and vmgenid:\n%s", r.stdout)
	}
	e.mustRun(0, "plan", "-f", writeFile(t, "gen.yaml", r.stdout), "--detailed-exitcode")

	// A bridge staged by hand: the node's commit would not be clean.
	admin(http.MethodPost, "/nodes/pve/network", url.Values{"iface": {"vmbr7"}, "type": {"bridge"}})
	r = e.mustRun(2, "import", "--all", "--node", "pve")
	if !strings.Contains(r.stderr, "Not imported: NetworkApply/pve: commented out: it would not plan clean: plan would apply") ||
		!strings.Contains(r.stdout, "# kind: NetworkApply\n# name: pve\n") || !strings.Contains(r.stdout, "kind: LinuxBridge\nname: vmbr7\n") {
		t.Errorf("import over staged network changes:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	e.mustRun(0, "plan", "-f", writeFile(t, "staged.yaml", r.stdout), "--detailed-exitcode")
}

// oddStateFile is a simulator state file with a guest PVE would not
// write through its API: VM 777's drive has no size= (a config edited by
// hand, or an old tool's), which an imported document cannot reproduce.
func oddStateFile(t *testing.T) string {
	t.Helper()
	return simtest.EditedState(t, pvesim.Options{TokenID: e2eTokenID, TokenSecret: e2eTokenSecret, Seed: 1}, func(st map[string]any) {
		st["vms"].(map[string]any)["777"] = map[string]any{"vmid": 777, "node": "pve",
			"conf": map[string]any{"name": "odd", "memory": "1024", "scsi0": "local-lvm:vm-777-disk-0"}}
		st["volumes"].(map[string]any)["local-lvm:vm-777-disk-0"] = map[string]any{"storage": "local-lvm", "name": "vm-777-disk-0",
			"content": "images", "format": "raw", "size": 1 << 30, "vmid": 777}
	})
}

// TestE2EImportNeverBlocks is issue 18's acceptance: one guest has a
// drive PVE would not produce through its API; import --all writes every
// other document, which plan clean, names the odd one on stderr and
// exits 2; the odd document is there, commented out, with why.
func TestE2EImportNeverBlocks(t *testing.T) {
	e := startSimOpts(t, pvesim.Options{StateFile: oddStateFile(t)}, nil)
	e.mustRun(0, "apply", "-f", example(t, "01-bridge-and-vm.yaml", nil), "--auto-approve")
	dir := t.TempDir()
	r := e.mustRun(2, "import", "--all", "--out-dir", dir)
	if !strings.Contains(r.stderr, "Not imported: QemuVM/odd: commented out: it would not plan clean: plan would update") ||
		!strings.Contains(r.stderr, "scsi0") || strings.Count(r.stderr, "Not imported:") != 1 {
		t.Errorf("stderr does not name the odd guest (alone):\n%s", r.stderr)
	}
	for _, f := range []string{"qemuvm-app-vm-1.yaml", "linuxbridge-vmbr1.yaml", "networkapply-pve.yaml", "qemuvm-ubuntu-24.04-cloud.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
	odd, err := os.ReadFile(filepath.Join(dir, "qemuvm-odd.yaml"))
	if err != nil || !strings.HasPrefix(string(odd), "# pvectl import: QemuVM/odd is commented out") || !strings.Contains(string(odd), "# kind: QemuVM\n# name: odd\n") {
		t.Errorf("the odd guest's file:\n%s (%v)", odd, err)
	}
	r = e.mustRun(0, "plan", "-f", dir, "--detailed-exitcode")
	if strings.Contains(r.stdout, "odd") {
		t.Errorf("the plan of the imported files sees the commented-out guest:\n%s", r.stdout)
	}
	// Named, the odd guest alone: nothing but it, commented out, exit 2.
	r = e.mustRun(2, "import", "QemuVM/777")
	if !strings.HasPrefix(r.stdout, "# pvectl import: QemuVM/odd") {
		t.Errorf("import QemuVM/777:\n%s", r.stdout)
	}
}

// TestE2EImportKeepsInfrastructure is issue 18's acceptance: after
// import --all on a fresh simulator, destroy -f of the imported files
// offers neither vmbr0 nor local/local-lvm (nor the seeded template),
// and the node keeps them.
func TestE2EImportKeepsInfrastructure(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	dir := t.TempDir()
	e.mustRun(0, "import", "--all", "--out-dir", dir)
	r := e.mustRun(0, "destroy", "-f", dir, "--auto-approve")
	for _, addr := range []string{"LinuxBridge/vmbr0", "Storage/local", "Storage/local-lvm", "QemuVM/ubuntu-24.04-cloud"} {
		if regexp.MustCompile(`(?m)^\s*- ` + regexp.QuoteMeta(addr) + `\b`).MatchString(r.stdout) {
			t.Errorf("destroy offers %s:\n%s", addr, r.stdout)
		}
	}
	if ifaceConfig(t, e, "vmbr0") == nil {
		t.Error("vmbr0 is gone")
	}
	var storages []map[string]any
	if err := e.client.Do(ctx, http.MethodGet, "/storage", nil, &storages); err != nil || len(storages) != 2 {
		t.Errorf("storages after destroy: %v %v", storages, err)
	}
	if _, err := e.client.GuestConfig(ctx, pve.QEMU, "pve", 9000); err != nil {
		t.Errorf("template 9000 after destroy: %v", err)
	}
	// Opted in, they are ordinary documents that destroy would remove.
	r = e.mustRun(0, "import", "--all", "--manage-infrastructure")
	if strings.Contains(r.stdout, "managed: false\nspec:\n  node: pve\n  autostart") || !strings.Contains(r.stdout, "kind: Storage\nname: local\nspec:") {
		t.Errorf("--manage-infrastructure:\n%s", r.stdout)
	}
}

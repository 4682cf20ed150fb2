package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
)

// TestPruneOwnedOrphans is issue 23's ownership acceptance: two VMs are
// applied, one document is deleted; the plan names the orphan and exits
// 0 (nothing changes without --prune); plan --prune shows it destroyed;
// apply --prune removes it and nothing else — not a VM of another stack,
// not a hand-made clone that copied the mark, not a protected orphan.
func TestPruneOwnedOrphans(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Tags of their own: the owner tag is merged in, never drift.
	tagged := func(names ...string) string {
		return strings.ReplaceAll(vmsSpec(names, nil), "cores: 1\n", "cores: 1\n  tags: web\n")
	}
	all := write("all.yaml", tagged("worker-1", "worker-2", "worker-3"))
	e.mustRun(0, "apply", "-f", all, "--auto-approve")
	e.mustRun(0, "plan", "-f", all, "--detailed-exitcode") // the marks made no drift

	other := write("other.yaml", vmsSpec([]string{"other-1"}, nil))
	e.mustRun(0, "apply", "-f", other, "--auto-approve", "--stack", "team-b")

	vm := map[string]int{}
	// The node's list reads the guests (/cluster/resources' names lag).
	for _, r := range e.qemuGuests() {
		vm[r.Name] = r.VMID
	}
	cfg, err := e.client.GuestConfig(ctx, pve.QEMU, "pve", vm["worker-1"])
	if err != nil {
		t.Fatal(err)
	}
	wantMark := fmt.Sprintf("[pvectl-owner: stack=default,vmid=%d]", vm["worker-1"])
	if !strings.Contains(cfg.Get("description"), wantMark) || !strings.Contains(cfg.Get("tags"), "pvectl") {
		t.Fatalf("worker-1: description %q, tags %q; want the mark %s and the pvectl tag", cfg.Get("description"), cfg.Get("tags"), wantMark)
	}
	// A clone made by hand copies description and tags: it names
	// worker-1's vmid, not its own, so it is nobody's.
	hand := url.Values{"vmid": {"150"}, "name": {"by-hand"}, "memory": {"512"}, "tags": {cfg.Get("tags")}, "description": {cfg.Get("description")}}
	if err := e.client.CreateGuest(ctx, pve.QEMU, "pve", hand); err != nil {
		t.Fatal(err)
	}
	// worker-3 is protected in PVE: --prune keeps it.
	if err := e.client.UpdateGuest(ctx, pve.QEMU, "pve", vm["worker-3"], url.Values{"protection": {"1"}}); err != nil {
		t.Fatal(err)
	}

	// worker-1's and worker-3's documents are deleted.
	two := write("two.yaml", tagged("worker-2"))
	r := e.mustRun(0, "plan", "-f", two, "--detailed-exitcode")
	orphan := fmt.Sprintf("# QemuVM/worker-1 (vmid %d): made by this stack, in no spec — --prune to remove", vm["worker-1"])
	if !strings.Contains(r.stdout, orphan) {
		t.Errorf("plan does not name the orphan %q:\n%s", orphan, r.stdout)
	}
	if !strings.Contains(r.stdout, "QemuVM/worker-3") || !strings.Contains(r.stdout, "--prune keeps it") {
		t.Errorf("plan does not name the protected orphan worker-3:\n%s", r.stdout)
	}
	for _, not := range []string{"other-1", "by-hand"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("plan names %s, which this stack did not make:\n%s", not, r.stdout)
		}
	}

	r = e.mustRun(0, "plan", "-f", two, "--json")
	if !strings.Contains(r.stdout, fmt.Sprintf(`"orphans":[{"address":"QemuVM/worker-1","node":"pve","what":"vmid %d","stack":"default"}`, vm["worker-1"])) {
		t.Errorf("plan --json does not list the orphan:\n%s", r.stdout)
	}

	r = e.mustRun(2, "plan", "-f", two, "--prune", "--detailed-exitcode")
	if !strings.Contains(r.stdout, "# QemuVM/worker-1 will be destroyed") || !strings.Contains(r.stdout, "1 to destroy") {
		t.Errorf("plan --prune does not destroy worker-1:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "QemuVM/worker-3 is protected and will be kept") {
		t.Errorf("plan --prune does not keep the protected worker-3:\n%s", r.stdout)
	}

	r = e.mustRun(0, "apply", "-f", two, "--prune", "--auto-approve")
	if !strings.Contains(r.stdout, "--prune destroys 1 object this stack made") || !strings.Contains(r.stdout, "--prune keeps 1 of them") {
		t.Errorf("apply --prune does not list what it prunes apart:\n%s", r.stdout)
	}
	left := map[string]bool{}
	for _, r := range e.qemuGuests() {
		left[r.Name+"/"+strconv.Itoa(r.VMID)] = true
	}
	for name, want := range map[string]bool{"worker-1": false, "worker-2": true, "worker-3": true, "other-1": true, "by-hand": true} {
		id := vm[name]
		if name == "by-hand" {
			id = 150
		}
		if got := left[name+"/"+strconv.Itoa(id)]; got != want {
			t.Errorf("after apply --prune, %s exists: %v, want %v", name, got, want)
		}
	}
	r = e.mustRun(0, "plan", "-f", two, "--prune", "--detailed-exitcode")
	if strings.Contains(r.stdout, "worker-1") {
		t.Errorf("worker-1 is still planned after the prune:\n%s", r.stdout)
	}
	// import --stack adopts the hand-made VM: its mark names its own vmid
	// now, and with no document naming it, it is this stack's orphan.
	r = e.mustRun(0, "import", "QemuVM/150", "--stack", "default")
	if !strings.Contains(r.stderr, "Adopted 1 object into stack default: QemuVM/by-hand") || strings.Contains(r.stdout, "pvectl-owner") || strings.Contains(r.stdout, "pvectl;") {
		t.Errorf("import --stack: stdout\n%s\nstderr\n%s", r.stdout, r.stderr)
	}
	r = e.mustRun(0, "plan", "-f", two, "--detailed-exitcode")
	if !strings.Contains(r.stdout, "# QemuVM/by-hand (vmid 150): made by this stack, in no spec — --prune to remove") {
		t.Errorf("the adopted VM is not listed as this stack's:\n%s", r.stdout)
	}
	// The other stack sees its own VM in its spec, and ours as nobody's.
	r = e.mustRun(0, "plan", "-f", other, "--stack", "team-b", "--prune", "--detailed-exitcode")
	if strings.Contains(r.stdout, "worker-") {
		t.Errorf("stack team-b lists the default stack's VMs:\n%s", r.stdout)
	}
}

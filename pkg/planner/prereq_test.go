package planner

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// addBridge makes a bridge live on one node only, as by hand.
func addBridge(t *testing.T, sim *simClients, node, name string) {
	t.Helper()
	ctx := context.Background()
	if err := sim.cl.CreateIface(ctx, node, url.Values{"iface": {name}, "type": {"bridge"}, "autostart": {"1"}}); err != nil {
		t.Fatal(err)
	}
	if err := sim.cl.ApplyNetwork(ctx, node); err != nil {
		t.Fatal(err)
	}
}

// Issue 10 part 6: what a change needs — pool, storage and its content,
// bridge on the target node, template or image — is found at plan time,
// from the specs or the live cluster, and a plan that lacks it fails
// naming the resource and the key.
func TestSimPrereqsAtPlanTime(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	addBridge(t, sim, "pve", "vmbr7")
	vm := func(spec string) string { return "kind: QemuVM\nname: a\nspec:\n  memory: 512\n" + spec }
	ct := func(spec string) string {
		return "kind: LxcContainer\nname: c\nspec:\n  memory: 512\n" + spec
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string // errors; none: the plan builds
	}{
		{"pool missing", vm("  pool: nopool\n"), []string{"QemuVM/a: pool: pool nopool does not exist (in PVE or in these specs)"}},
		{"pool of the specs", vm("  pool: team\n") + "---\nkind: Pool\nname: team\n", nil},
		{"pool removed by the specs", vm("  pool: gone\n") + "---\nkind: Pool\nname: gone\nstate: absent\n",
			[]string{"QemuVM/a: pool: pool gone is removed by Pool/gone (state: absent)"}},
		{"bridge on the node", vm("  net0: virtio,bridge=vmbr7\n"), nil},
		{"bridge missing on the node", vm("  node: pve2\n  net0: virtio,bridge=vmbr7\n"),
			[]string{"QemuVM/a: net0: bridge vmbr7 does not exist on node pve2"}},
		{"bridge of the specs on the node", vm("  node: pve2\n  net0: virtio,bridge=vmbr8\n") +
			"---\nkind: LinuxBridge\nname: vmbr8\nspec:\n  node: pve2\n---\nkind: NetworkApply\nname: pve2\n", nil},
		{"bridge of the specs on another node", vm("  node: pve2\n  net0: virtio,bridge=vmbr8\n") +
			"---\nkind: LinuxBridge\nname: vmbr8\nspec:\n  node: pve\n---\nkind: NetworkApply\nname: pve\n",
			[]string{"QemuVM/a: net0: bridge vmbr8 does not exist on node pve2"}},
		{"storage missing", vm("  scsi0: nostore:4\n"), []string{"QemuVM/a: scsi0: storage nostore does not exist"}},
		{"storage without the content", vm("  scsi0: local:4\n"),
			[]string{"QemuVM/a: scsi0: storage local does not take content images (it takes"}},
		{"iso on a storage without iso", vm("  ide2: local-lvm:iso/x.iso,media=cdrom\n"),
			[]string{"QemuVM/a: ide2: storage local-lvm does not take content iso"}},
		{"iso missing", vm("  ide2: local:iso/nope.iso,media=cdrom\n"),
			[]string{"QemuVM/a: ide2: local:iso/nope.iso does not exist on node pve"}},
		{"import source missing", vm("  scsi0: local-lvm:0,import-from=local:import/nope.qcow2\n"),
			[]string{"QemuVM/a: scsi0.import-from: local:import/nope.qcow2 does not exist on node pve"}},
		{"storage of the specs", vm("  scsi0: fast:4\n") + "---\nkind: Storage\nname: fast\nspec:\n  type: dir\n  path: /srv/fast\n  content: images\n", nil},
		{"storage of the specs without the content", vm("  scsi0: isos:4\n") + "---\nkind: Storage\nname: isos\nspec:\n  type: dir\n  path: /srv/isos\n  content: iso\n",
			[]string{"QemuVM/a: scsi0: storage isos does not take content images (Storage/isos content: iso)"}},
		{"storage of the specs on other nodes", vm("  node: pve2\n  scsi0: fast:4\n") + "---\nkind: Storage\nname: fast\nspec:\n  type: dir\n  path: /srv/fast\n  content: images\n  nodes: pve\n",
			[]string{"QemuVM/a: scsi0: storage fast is not available on node pve2"}},
		{"container template", ct("  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  rootfs: local-lvm:8\n"), nil},
		{"container on the default storage", ct("  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n"),
			[]string{"LxcContainer/c: storage: storage local does not take content rootdir"}},
		{"container template missing", ct("  ostemplate: local:vztmpl/nope.tar.zst\n  rootfs: local-lvm:8\n"),
			[]string{"LxcContainer/c: ostemplate: local:vztmpl/nope.tar.zst does not exist on node pve"}},
		{"container template downloaded by the specs", ct("  ostemplate: local:vztmpl/new.tar.zst\n  rootfs: local-lvm:8\n") +
			"---\nkind: DownloadedImage\nname: new.tar.zst\nspec:\n  storage: local\n  content: vztmpl\n  url: https://images.example.invalid/new.tar.zst\n", nil},
		{"container rootfs storage", ct("  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n  rootfs: local:8\n"),
			[]string{"LxcContainer/c: rootfs: storage local does not take content rootdir"}},
		{"every problem", vm("  pool: nopool\n  node: pve2\n  net0: virtio,bridge=vmbr7\n  scsi0: nostore:4\n"), []string{
			"QemuVM/a: pool: pool nopool does not exist", "QemuVM/a: net0: bridge vmbr7 does not exist on node pve2",
			"QemuVM/a: scsi0: storage nostore does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := loadSpec(t, tc.yaml)
			_, err := tryPlan(t, sim, set, engine.Options{})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Build: %v, want a plan", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Build: got a plan, want errors %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Build error:\n%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// A guest that exists on its node needs only what its spec changes: an
// unchanged bridge is not looked for again, a new NIC's is.
func TestSimPrereqsOfAnUpdate(t *testing.T) {
	sim, rc := newCountingSim(t, "pve")
	const doc = "kind: QemuVM\nname: u\nspec:\n  vmid: 130\n  memory: 512\n  net0: virtio,bridge=vmbr0\n  pool: p1\n---\nkind: Pool\nname: p1\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	rc.reset()
	if p := planFor(t, sim, loadSpec(t, doc), engine.Options{}); p.HasChanges() {
		t.Fatalf("plan after apply: %q, want none", summary(p))
	}
	if n := rc.reset()["GET /nodes/pve/network"]; n != 0 {
		t.Errorf("an unchanged guest's bridges were listed %d times, want 0", n)
	}
	err := planErr(t, sim, loadSpec(t, strings.Replace(doc, "bridge=vmbr0\n", "bridge=vmbr0\n  net1: virtio,bridge=vmbr5\n", 1)))
	if !strings.Contains(err.Error(), "QemuVM/u: net1: bridge vmbr5 does not exist on node pve") {
		t.Errorf("a new NIC on a missing bridge: got %v", err)
	}
	err = planErr(t, sim, loadSpec(t, strings.Replace(doc, "  pool: p1\n", "  pool: p2\n", 1)))
	if !strings.Contains(err.Error(), "QemuVM/u: pool: pool p2 does not exist") {
		t.Errorf("a move to a missing pool: got %v", err)
	}
}

// Issue 10 acceptance: a node move onto a node that lacks the VM's
// bridge fails the plan naming the key, and so nothing is deleted.
func TestSimNodeMoveOntoNodeWithoutBridge(t *testing.T) {
	sim := newSim(t, "pve", "pve2")
	addBridge(t, sim, "pve", "vmbr7")
	const doc = "kind: QemuVM\nname: mover\nspec:\n  node: pve\n  vmid: 150\n  memory: 512\n  net0: virtio,bridge=vmbr7\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, doc), engine.Options{}))
	err := planErr(t, sim, loadSpec(t, strings.Replace(doc, "node: pve", "node: pve2", 1)))
	if !strings.Contains(err.Error(), "QemuVM/mover: net0: bridge vmbr7 does not exist on node pve2") {
		t.Errorf("plan error: got %v", err)
	}
	if _, err := sim.cl.QemuConfig(context.Background(), "pve", 150); err != nil {
		t.Errorf("vm 150 after the refused plan: %v", err)
	}
}

// ctReplaceSpec is a container with a pinned vmid on vmbr7: flipping its
// unprivileged replaces it, and the old one must go first (the new one
// needs its vmid). A node change would migrate instead.
const ctReplaceSpec = "kind: LxcContainer\nname: mover\nspec:\n  node: pve\n  vmid: 150\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
	"  rootfs: local-lvm:2\n  net0: name=eth0,bridge=vmbr7,ip=dhcp\n  unprivileged: true\n"

func flipUnprivileged(doc string) string {
	return strings.Replace(doc, "unprivileged: true", "unprivileged: false", 1)
}

// Issue 10 part 7: a replace that must destroy first checks, right before
// it does, that the new one can be made — here the bridge went away after
// the plan — and keeps the old one if not.
func TestSimReplaceVerifiesBeforeDestroying(t *testing.T) {
	sim := newSim(t)
	addBridge(t, sim, "pve", "vmbr7")
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, ctReplaceSpec), engine.Options{}))
	p := planFor(t, sim, loadSpec(t, flipUnprivileged(ctReplaceSpec)), engine.Options{})
	c := p.Changes[0]
	if c.Action != engine.Replace || c.CreateFirst || !strings.Contains(strings.Join(c.Reasons, "; "), "the old one is destroyed first: the new one needs its vmid 150") {
		t.Fatalf("plan: got %s (create first %v, reasons %q), want a replace that says the old one goes first", c.Action, c.CreateFirst, c.Reasons)
	}
	ctx := context.Background()
	if err := sim.cl.DeleteIface(ctx, "pve", "vmbr7"); err != nil {
		t.Fatal(err)
	}
	if err := sim.cl.ApplyNetwork(ctx, "pve"); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{})
	if err == nil || !strings.Contains(res.Failed["LxcContainer/mover"].Error(), "not replaced, the old one is kept") ||
		!strings.Contains(res.Failed["LxcContainer/mover"].Error(), "net0: bridge vmbr7 does not exist on node pve") {
		t.Fatalf("Apply: got %v, want the replace refused before the destroy", err)
	}
	if _, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", 150); err != nil {
		t.Errorf("ct 150 after the refused replace: %v", err)
	}
}

// A replace that destroyed the old guest and then could not make the new
// one says so: the object is gone (here another client took the vmid in
// between, which no check can foresee).
func TestSimReplaceFailsAfterDestroying(t *testing.T) {
	sim := newSim(t)
	addBridge(t, sim, "pve", "vmbr7")
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, ctReplaceSpec), engine.Options{}))
	p := planFor(t, sim, loadSpec(t, flipUnprivileged(ctReplaceSpec)), engine.Options{})
	h := &thiefHooks{cl: sim.cl}
	res, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: h})
	if err == nil {
		t.Fatal("Apply: no error, want the create to fail")
	}
	var re *engine.ReplaceError
	if got := res.Failed["LxcContainer/mover"]; !errors.As(got, &re) || !strings.HasPrefix(got.Error(), "destroyed container 150; creating it on pve failed: ") {
		t.Errorf("failure: got %v, want a ReplaceError that says container 150 was destroyed", got)
	}
}

// thiefHooks creates a VM 150 of its own when the replace is about to
// create it, as another client could.
type thiefHooks struct {
	recHooks
	cl *pve.Client
}

func (h *thiefHooks) Message(c *engine.Change, msg string) {
	if strings.HasPrefix(msg, "creating container 150") || strings.HasPrefix(msg, "creating vm 150") {
		_ = h.cl.CreateGuest(context.Background(), pve.QEMU, "pve", url.Values{"vmid": {"150"}, "name": {"thief"}})
	}
}

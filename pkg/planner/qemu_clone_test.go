package planner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

func TestPickImage(t *testing.T) {
	rows := []pve.ClusterResource{
		{Type: "qemu", VMID: 9000, Name: "ubuntu-24.04-cloud", Node: "pve", Template: true},
		{Type: "qemu", VMID: 9001, Name: "ubuntu-22.04-cloud", Node: "pve2", Template: true},
		{Type: "qemu", VMID: 9002, Name: "debian", Node: "pve", Template: true},
		{Type: "qemu", VMID: 9003, Name: "debian-12", Node: "pve", Template: true},
		{Type: "qemu", VMID: 100, Name: "ubuntu-24.04-cloud-copy", Node: "pve"},
		{Type: "lxc", VMID: 200, Name: "ct", Node: "pve", Template: true},
	}
	tests := []struct {
		image  string
		want   int
		errHas string
	}{
		{image: "9000", want: 9000},
		{image: "24.04", want: 9000}, // the VM 100 is no template
		{image: "22.04", want: 9001},
		{image: "debian", want: 9002}, // an exact name wins
		{image: "ubuntu", errHas: `image "ubuntu" matches 2 templates: 9000 (ubuntu-24.04-cloud), 9001 (ubuntu-22.04-cloud); write more of the name, or the vmid`},
		{image: "rocky", errHas: `image "rocky": no template's name contains it (templates: 9000 (ubuntu-24.04-cloud), 9001 (ubuntu-22.04-cloud), 9002 (debian), 9003 (debian-12))`},
		{image: "100", errHas: `image "100": VM 100 is not a QEMU template`},
		{image: "200", errHas: `image "200": container 200 is not a QEMU template`},
		{image: "9999", errHas: `image "9999": no template has vmid 9999`},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, err := pickImage(newGuestIndex(pve.QEMU, rows), tt.image)
			if !succeeded(t, err, tt.errHas) {
				return
			}
			if err != nil || got.VMID != tt.want {
				t.Fatalf("got %v, %v want %d", got, err, tt.want)
			}
		})
	}
}

func TestFindOld(t *testing.T) {
	rows := []pve.ClusterResource{
		{Type: "qemu", VMID: 100, Name: "old", Node: "pve", Status: "running"},
		{Type: "qemu", VMID: 101, Name: "twin", Node: "pve"},
		{Type: "qemu", VMID: 102, Name: "twin", Node: "pve"},
		{Type: "qemu", VMID: 9000, Name: "tmpl", Node: "pve", Template: true},
		{Type: "lxc", VMID: 200, Name: "ct", Node: "pve"},
	}
	tests := []struct {
		old    string
		self   int
		want   int
		errHas string
	}{
		{old: "old", want: 100},
		{old: "100", want: 100},
		{old: "gone"},
		{old: "105"},
		{old: "tmpl"}, // found by name among VMs only
		{old: "twin", errHas: "replace: name twin matches VMs 101, 102: write the vmid"},
		{old: "9000", errHas: "replace: VM 9000 is a template"},
		{old: "200", errHas: "replace: 200 is a container, not a VM"},
		{old: "old", self: 100, errHas: "replace: old is this VM itself (vmid 100)"},
	}
	for _, tt := range tests {
		t.Run(tt.old, func(t *testing.T) {
			got, err := findOld(newGuestIndex(pve.QEMU, rows), tt.old, tt.self)
			if !succeeded(t, err, tt.errHas) {
				return
			}
			gotID := 0
			if got != nil {
				gotID = got.VMID
			}
			if err != nil || gotID != tt.want {
				t.Fatalf("got %v, %v want %d", got, err, tt.want)
			}
		})
	}
}

func TestVMIDTaken(t *testing.T) {
	tests := []struct {
		err  error
		vmid int
		want bool
	}{
		{errors.New("POST /nodes/pve/qemu: 500 VM 107 already exists on node 'pve'"), 107, true},
		{errors.New("POST /nodes/pve/qemu/9000/clone: 500 unable to create VM 108: config file already exists"), 108, true},
		{errors.New("task failed: unable to create VM 108: config file already exists"), 108, true},
		{errors.New("CT 109 already exists on node 'pve2'"), 109, true},
		{errors.New("VM 107 already exists on node 'pve'"), 108, false},
		{errors.New("unable to create VM 107 - can't lock file '/var/lock/qemu-server/lock-107.conf' - got timeout"), 107, false},
		{errors.New("volume 'local-lvm:vm-107-disk-0' already exists"), 107, false},
		{nil, 107, false},
	}
	for _, tt := range tests {
		if got := engine.VMIDTaken(tt.err, tt.vmid); got != tt.want {
			t.Errorf("vmidTaken(%v, %d) = %v want %v", tt.err, tt.vmid, got, tt.want)
		}
	}
}

// One allocator hands every worker of an apply its own vmid, past the
// pinned ones and the ones PVE holds.
func TestVMIDsDistinct(t *testing.T) {
	sim := newSim(t)
	alloc := engine.NewVMIDs(map[int]bool{101: true, 103: true})
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := alloc.Next(context.Background(), sim.cl)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[id]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	want := map[int]int{}
	for _, id := range []int{100, 102, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113} {
		want[id] = 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vmids (-want +got):\n%s", diff)
	}
}

// A clone picks its template by a part of its name, is a full clone by
// default, lands on the template's node when the spec names none (not the
// connection's first node), gets the spec's keys and is started; the next
// plan is clean. A cloud-init change is an in-place update followed by a
// regenerated drive.
func TestSimCloneLifecycle(t *testing.T) {
	sim, counter := newCountingSim(t, "pve", "pve2")
	sim.conn.Nodes = []string{"pve2"}
	ctx := context.Background()
	yaml := `kind: QemuVM
name: web
spec:
  image: 24.04-cloud
  memory: 1024
  ip: 10.0.5.20
  vlan: 30
  bridge: vmbr0
  scsi0: local-lvm:8
  sshKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMu2dTvNNTWYm9t4yw0mvQSzLvd9EcVBNi3AZdCpq7Bu ops@example.com"]
`
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	c := p.Change("QemuVM/web")
	if c.Action != engine.Create || c.Node != "pve" {
		t.Fatalf("plan: %s on %s, want a create on pve (the template's node)", c.Action, c.Node)
	}
	if !strings.Contains(strings.Join(c.Reasons, "; "), "full clone of template 9000 (ubuntu-24.04-cloud) on node pve") {
		t.Errorf("reasons %v do not name the template", c.Reasons)
	}
	_, h := applyHooked(t, sim, p)
	st := stateOf(c)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", st.Created)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"name": "web", "memory": "1024", "ipconfig0": "ip=10.0.5.20/24,gw=10.0.5.1", "machine": "q35",
		"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=8G", st.Created),
	} {
		if cfg.Get(key) != want {
			t.Errorf("%s: got %q want %q", key, cfg.Get(key), want)
		}
	}
	if !strings.Contains(cfg.Get("net0"), "bridge=vmbr0,tag=30") || !strings.HasPrefix(cfg.Get("net0"), "virtio=") {
		t.Errorf("net0 %q: want the template's virtio NIC on vmbr0 tag 30", cfg.Get("net0"))
	}
	if s, err := sim.cl.QemuStatus(ctx, "pve", st.Created); err != nil || s.Status != "running" {
		t.Errorf("status %v, %v: a clone is started", s, err)
	}
	if !strings.Contains(strings.Join(h.messages, "\n"), "applying the spec to vm") {
		t.Errorf("messages %v: the spec is applied after the clone", h.messages)
	}
	p = planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	if c := p.Change("QemuVM/web"); c.Action != engine.NoOp {
		t.Fatalf("second plan: %s %v, want noop", c.Action, c.Diff)
	}

	counter.reset()
	p = planFor(t, sim, loadSpec(t, strings.Replace(yaml, "10.0.5.20", "10.0.5.21", 1)), engine.Options{})
	c = p.Change("QemuVM/web")
	if c.Action != engine.Update || len(c.Diff) != 1 || c.Diff[0].Path != "ipconfig0.ip" || c.Diff[0].Label != "ip" || !stateOf(c).Regenerate {
		t.Fatalf("ip change: %s %+v regenerate=%v, want an update of ipconfig0.ip (shown as ip) that regenerates", c.Action, c.Diff, stateOf(c).Regenerate)
	}
	applyPlan(t, sim, p)
	path := fmt.Sprintf("PUT /nodes/pve/qemu/%d/cloudinit", st.Created)
	if n := counter.reset()[path]; n != 1 {
		t.Errorf("%s sent %d times, want 1", path, n)
	}
}

// template: true makes the clone a template (never started); it is found
// again among the templates, and a plain create converts too. A linked
// clone of it works, and running: false keeps a clone stopped.
func TestSimCloneTemplateAndLinked(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	yaml := `kind: QemuVM
name: golden
spec:
  image: "9000"
  template: true
  memory: 3072
---
kind: QemuVM
name: blank
spec:
  template: true
  scsi0: local-lvm:2
`
	set := loadSpec(t, yaml)
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	rows, err := sim.cl.NodeGuests(ctx, pve.QEMU, "pve")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := map[string]int{}
	for _, r := range rows {
		if r.Template {
			tmpl[r.Name] = r.VMID
		}
		if r.Status == "running" {
			t.Errorf("%s runs, want stopped", r.Name)
		}
	}
	if tmpl["golden"] == 0 || tmpl["blank"] == 0 {
		t.Fatalf("templates %v, want golden and blank", tmpl)
	}
	for _, c := range planFor(t, sim, set, engine.Options{}).Changes {
		if c.Action != engine.NoOp {
			t.Errorf("second plan: %s %s %v, want noop", c.Action, c.Address, c.Diff)
		}
	}
	linked := `kind: QemuVM
name: child
spec:
  image: golden
  full: false
  running: false
`
	_, h := applyHooked(t, sim, planFor(t, sim, loadSpec(t, linked), engine.Options{}))
	if !strings.Contains(strings.Join(h.messages, "\n"), fmt.Sprintf("cloning template %d (golden) on node pve as vm", tmpl["golden"])) ||
		!strings.Contains(strings.Join(h.messages, "\n"), "(linked clone)") {
		t.Errorf("messages %v: want a linked clone of golden", h.messages)
	}
	p := planFor(t, sim, loadSpec(t, linked), engine.Options{})
	c := p.Change("QemuVM/child")
	if c.Action != engine.NoOp {
		t.Fatalf("second plan: %s %v", c.Action, c.Diff)
	}
	if s, _ := sim.cl.QemuStatus(ctx, "pve", stateOf(c).VMID); s.Status != "stopped" {
		t.Errorf("status %s: running: false keeps the clone stopped", s.Status)
	}
	// PVE cannot turn a template back into a VM.
	back := loadSpec(t, "kind: QemuVM\nname: t\nspec:\n  vmid: 9000\n  name: ubuntu-24.04-cloud\n  template: false\n")
	_, err = engine.Build(ctx, back, mustObserve(t, sim, back), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "PVE cannot turn a template back into a VM") {
		t.Errorf("template 1 → 0: got %v", err)
	}
}

func mustObserve(t *testing.T, cl engine.Clients, set *spec.Set) *engine.Observed {
	t.Helper()
	obs, err := engine.Observe(context.Background(), cl, set)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// An image that names no template, or several, fails the plan listing the
// candidates; a destroy of the same spec does not need the template.
func TestSimImageNotFound(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: QemuVM\nname: x\nspec:\n  image: rocky\n")
	_, err := engine.Build(ctx, set, mustObserve(t, sim, set), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), `QemuVM/x: image "rocky": no template's name contains it (templates: 9000 (ubuntu-24.04-cloud))`) {
		t.Errorf("plan: got %v", err)
	}
	if _, err := engine.Build(ctx, set, mustObserve(t, sim, set), engine.Options{Destroy: true}); err != nil {
		t.Errorf("destroy plan: %v", err)
	}
}

// A spec vmid held by a VM of another name is a conflict, never a takeover;
// a VM a clone is still making is in progress, not drift.
func TestSimVMIDHeldByAnother(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  vmid: 9000\n  memory: 512\n")
	_, err := engine.Build(ctx, set, mustObserve(t, sim, set), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), `vmid 9000 is held by VM "ubuntu-24.04-cloud" on node pve, not by "web": refusing to take it over`) {
		t.Errorf("plan: got %v", err)
	}

	// A clone whose task is still running: its vmid holds a temporary
	// config locked "clone".
	slow := newSlowSim(t, 2*time.Second)
	upid, err := slow.cl.StartTask(ctx, "POST", "/nodes/pve/qemu/9000/clone", url.Values{"newid": {"150"}, "name": {"web"}})
	if err != nil {
		t.Fatal(err)
	}
	set = loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  vmid: 150\n  memory: 512\n")
	found := false
	for range 200 {
		// In progress, not drift: the plan refuses to touch the VM while
		// the clone's task works on it (PlanLive waits for it).
		p, err := engine.Build(ctx, set, mustObserve(t, slow, set), engine.Options{})
		if err != nil {
			if !strings.Contains(err.Error(), "vm 150 is locked (clone): a PVE task is working on it") {
				t.Fatalf("plan during the clone: %v", err)
			}
			found = true
			break
		}
		if c := p.Change("QemuVM/web"); c.Action != engine.Create {
			t.Fatalf("plan during the clone: %s %v %v", c.Action, c.Reasons, c.Diff)
		}
	}
	if !found {
		t.Fatal("never saw the clone in progress")
	}
	if _, err := slow.cl.WaitTask(ctx, upid); err != nil {
		t.Fatal(err)
	}
}

// replace: OLD is destroyed once the new VM is up; the next plan is clean.
// A VM the specs manage cannot be named.
func TestSimReplaceOld(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, "kind: QemuVM\nname: app-v1\nspec:\n  memory: 512\n  running: true\n"), engine.Options{}))
	yaml := "kind: QemuVM\nname: app-v2\nspec:\n  memory: 512\n  running: true\n  replace: app-v1\n"
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	c := p.Change("QemuVM/app-v2")
	if c.Action != engine.Create || !strings.Contains(strings.Join(c.Reasons, ";"), "then destroys VM 100 (app-v1) on node pve, which it replaces") {
		t.Fatalf("plan: %s %v", c.Action, c.Reasons)
	}
	_, h := applyHooked(t, sim, p)
	if _, err := sim.cl.QemuConfig(ctx, "pve", 100); !pve.IsNotFound(err) {
		t.Errorf("vm 100 after the replace: %v, want gone", err)
	}
	msgs := strings.Join(h.messages, "\n")
	if i, j := strings.Index(msgs, "starting vm"), strings.Index(msgs, "destroying vm 100 (app-v1)"); i < 0 || j < i {
		t.Errorf("messages: the old VM goes after the new one is up:\n%s", msgs)
	}
	if c := planFor(t, sim, loadSpec(t, yaml), engine.Options{}).Change("QemuVM/app-v2"); c.Action != engine.NoOp {
		t.Errorf("second plan: %s %v", c.Action, c.Diff)
	}

	set := loadSpec(t, yaml+"---\nkind: QemuVM\nname: app-v1\nspec:\n  memory: 512\n")
	if _, err := engine.Build(ctx, set, mustObserve(t, sim, set), engine.Options{}); err == nil || !strings.Contains(err.Error(), "replace: app-v1 names QemuVM/app-v1 of these specs") {
		t.Errorf("replace of a managed VM: got %v", err)
	}
}

// Without ip, a clone takes the address DNS holds for NAME.dnsDomain, else
// DHCP; DNS that does not answer fails a create, never a destroy.
func TestSimAddressFromDNS(t *testing.T) {
	sim := newSim(t)
	dns := startTestDNS(t, map[string]string{"web.lab.test": "10.9.8.7"})
	sim.conn.DNSDomain, sim.conn.DNSServers = "lab.test", []string{dns}
	ctx := context.Background()
	yaml := "kind: QemuVM\nname: web\nspec:\n  image: \"9000\"\n---\nkind: QemuVM\nname: db\nspec:\n  image: \"9000\"\n  gateway: 10.9.8.254\n"
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	want := map[string]string{"QemuVM/web": "ip=10.9.8.7/24,gw=10.9.8.1", "QemuVM/db": "ip=dhcp"}
	for addr, v := range want {
		if got := stateOf(p.Change(addr)).Derived["ipconfig0"]; got != v {
			t.Errorf("%s: ipconfig0 %q want %q", addr, got, v)
		}
	}
	applyPlan(t, sim, p)
	for _, c := range planFor(t, sim, loadSpec(t, yaml), engine.Options{}).Changes {
		if c.Action != engine.NoOp {
			t.Errorf("second plan: %s %s %v", c.Action, c.Address, c.Diff)
		}
	}

	sim.conn.DNSServers = []string{silentUDP(t)}
	set := loadSpec(t, "kind: QemuVM\nname: new\nspec:\n  image: \"9000\"\n")
	if _, err := engine.Build(ctx, set, mustObserve(t, sim, set), engine.Options{}); err == nil || !strings.Contains(err.Error(), "the address of new.lab.test (no ip given): DNS did not answer") {
		t.Errorf("silent DNS: got %v", err)
	}
	if _, err := engine.Build(ctx, set, mustObserve(t, sim, set), engine.Options{Destroy: true}); err != nil {
		t.Errorf("destroy with silent DNS: %v", err)
	}
}

// Another client takes the vmid a create or a clone was given: the change
// takes the next free one, as often as it happens, and says so.
func TestSimVMIDCollisions(t *testing.T) {
	sim, racer := newRacingSim(t, 3)
	yaml := "kind: QemuVM\nname: a\nspec:\n  memory: 512\n---\nkind: QemuVM\nname: b\nspec:\n  image: \"9000\"\n  running: false\n"
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	_, h := applyHooked(t, sim, p)
	if n := strings.Count(strings.Join(h.messages, "\n"), "was taken by another client meanwhile"); n != racer.raced() {
		t.Errorf("%d collisions reported, %d made:\n%s", n, racer.raced(), strings.Join(h.messages, "\n"))
	}
	if racer.raced() == 0 {
		t.Fatal("no collision was made")
	}
	for _, c := range planFor(t, sim, loadSpec(t, yaml), engine.Options{}).Changes {
		if c.Action != engine.NoOp {
			t.Errorf("second plan: %s %s", c.Action, c.Address)
		}
	}
}

// An existing VM becomes a template in place (after it is shut down); a
// running one without running: false is refused at plan time.
func TestSimTemplateInPlace(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, "kind: QemuVM\nname: base\nspec:\n  memory: 512\n  scsi0: local-lvm:2\n  running: true\n"), engine.Options{}))
	running := loadSpec(t, "kind: QemuVM\nname: base\nspec:\n  memory: 512\n  template: true\n")
	if _, err := engine.Build(ctx, running, mustObserve(t, sim, running), engine.Options{}); err == nil || !strings.Contains(err.Error(), "VM 100 is running, and PVE converts only a stopped VM: add running: false") {
		t.Errorf("running VM: got %v", err)
	}
	yaml := "kind: QemuVM\nname: base\nspec:\n  memory: 512\n  template: true\n  running: false\n"
	p := planFor(t, sim, loadSpec(t, yaml), engine.Options{})
	if c := p.Change("QemuVM/base"); c.Action != engine.Update || c.Params != nil || !slices.ContainsFunc(c.Diff, func(d engine.FieldDiff) bool { return d.Path == "template" }) {
		t.Fatalf("plan: %s %v %v, want an update by POST …/template alone", c.Action, c.Params, c.Diff)
	}
	applyPlan(t, sim, p)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 100)
	if err != nil || cfg.Get("template") != "1" || !strings.Contains(cfg.Get("scsi0"), "base-100-disk-0") {
		t.Errorf("vm 100: %v %v, want a template with base volumes", cfg, err)
	}
	if c := planFor(t, sim, loadSpec(t, yaml), engine.Options{}).Change("QemuVM/base"); c.Action != engine.NoOp {
		t.Errorf("second plan: %s %v", c.Action, c.Diff)
	}
}

// The privileges a clone needs are checked before the plan, from the
// template's config (its disks' storage, its NIC's bridge); with them the
// token clones for real.
func TestSimClonePermissions(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ci@pve", "clone")
	yaml := "kind: QemuVM\nname: web\nspec:\n  image: \"9000\"\n  memory: 1024\n"
	ctx := context.Background()
	grantBoth(t, admin, "ci@pve", id, "/vms", "PVEVMAdmin")
	grantBoth(t, admin, "ci@pve", id, "/storage", "PVEDatastoreUser")
	set := loadSpec(t, yaml)
	_, err := engine.Build(ctx, set, mustObserve(t, tok, set), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "/sdn/zones/localnetwork/vmbr0") || !strings.Contains(err.Error(), "SDN.Use") {
		t.Fatalf("plan without SDN.Use: got %v", err)
	}
	grantBoth(t, admin, "ci@pve", id, "/sdn/zones/localnetwork", "PVESDNUser")
	p := planFor(t, tok, set, engine.Options{})
	applyPlan(t, tok, p)
	if c := planFor(t, tok, set, engine.Options{}).Change("QemuVM/web"); c.Action != engine.NoOp {
		t.Errorf("second plan: %s %v", c.Action, c.Diff)
	}
}

// A cloud-init drive that moves to another storage is an in-place update
// (PVE makes it anew there and frees the old one), never a replace.
func TestSimCloudinitDriveMovesInPlace(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	if err := sim.cl.Do(ctx, "POST", "/storage", url.Values{"storage": {"ci"}, "type": {"dir"}, "path": {"/srv/ci"}, "content": {"images"}}, nil); err != nil {
		t.Fatal(err)
	}
	yaml := "kind: QemuVM\nname: vm\nspec:\n  vmid: 120\n  memory: 512\n  ide2: local-lvm:cloudinit\n  ciuser: ops\n"
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, yaml), engine.Options{}))
	moved := strings.Replace(yaml, "local-lvm:cloudinit", "ci:cloudinit", 1)
	p := planFor(t, sim, loadSpec(t, moved), engine.Options{})
	if c := p.Change("QemuVM/vm"); c.Action != engine.Update {
		t.Fatalf("plan: %s %v %v, want an update", c.Action, c.Reasons, c.Diff)
	}
	applyPlan(t, sim, p)
	cfg, err := sim.cl.QemuConfig(ctx, "pve", 120)
	if err != nil || !strings.HasPrefix(cfg.Get("ide2"), "ci:120/vm-120-cloudinit") {
		t.Fatalf("ide2 %q (%v): want the drive on ci", cfg.Get("ide2"), err)
	}
	for key := range cfg.All() {
		if strings.HasPrefix(key, "unused") {
			t.Errorf("%s: %s, want the old cloud-init volume freed", key, cfg.Get(key))
		}
	}
	if c := planFor(t, sim, loadSpec(t, moved), engine.Options{}).Change("QemuVM/vm"); c.Action != engine.NoOp {
		t.Errorf("second plan: %s %v", c.Action, c.Diff)
	}
}

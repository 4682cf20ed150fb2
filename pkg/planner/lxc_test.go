package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve"
)

const lxcSpec = `kind: LxcContainer
name: dns01
spec:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  rootfs: local-lvm:8
  memory: 512
  net0: name=eth0,bridge=vmbr0,ip=dhcp
  unprivileged: true
  password: ${CT_PASSWORD}
  running: true
`

// TestSimLxcLifecycle: a container is created from the seeded template and
// started, found by hostname afterwards, updated in place (memory, a grown
// rootfs), stopped, replaced when unprivileged flips, and destroyed.
func TestSimLxcLifecycle(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	set := loadSpec(t, lxcSpec)
	p := planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"create LxcContainer/dns01"})
	applyPlan(t, sim, p)
	vmid := stateOf(p.Changes[0]).Created
	st, err := sim.cl.GuestStatus(ctx, pve.LXC, "pve", vmid)
	if err != nil || st.Status != "running" {
		t.Fatalf("container %d after create: %+v, %v want running", vmid, st, err)
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after create (found by hostname; password and ostemplate are create-only)")

	grown := loadSpec(t, strings.NewReplacer("memory: 512", "memory: 1024", "local-lvm:8", "local-lvm:10", "running: true", "running: false").Replace(lxcSpec))
	p = planFor(t, sim, grown, engine.Options{})
	c := p.Changes[0]
	if c.Action != engine.Update {
		t.Fatalf("plan: got %s want update", c.Action)
	}
	var paths []string
	for _, d := range c.Diff {
		paths = append(paths, d.Path)
	}
	if diff := cmp.Diff([]string{"memory", "rootfs.size", "running"}, paths); diff != "" {
		t.Errorf("update diff paths (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	cfg, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", vmid)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("memory") != "1024" || !strings.Contains(cfg.Get("rootfs"), "size=10G") {
		t.Errorf("after update: memory %q rootfs %q want 1024 and size=10G", cfg.Get("memory"), cfg.Get("rootfs"))
	}
	if st, _ := sim.cl.GuestStatus(ctx, pve.LXC, "pve", vmid); st == nil || st.Status != "stopped" {
		t.Errorf("running: false did not stop the container: %+v", st)
	}
	wantConverged(t, t.Errorf, sim, grown, "plan after update")

	shrunk := loadSpec(t, strings.Replace(lxcSpec, "local-lvm:8", "local-lvm:4", 1))
	if _, err := tryPlan(t, sim, shrunk, engine.Options{}); err == nil || !strings.Contains(err.Error(), "cannot shrink") {
		t.Errorf("shrinking the rootfs: got %v want a plan error", err)
	}

	privileged := loadSpec(t, strings.Replace(strings.Replace(lxcSpec, "unprivileged: true", "unprivileged: false", 1), "local-lvm:8", "local-lvm:10", 1))
	p = planFor(t, sim, privileged, engine.Options{})
	if c := p.Changes[0]; c.Action != engine.Replace || !c.CreateFirst {
		t.Fatalf("unprivileged flip: got %s (create first %v) want a create-first replace", c.Action, c.CreateFirst)
	}
	applyPlan(t, sim, p)
	if _, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", vmid); !pve.IsNotFound(err) {
		t.Errorf("the old container %d: got %v want it gone", vmid, err)
	}
	wantConverged(t, t.Errorf, sim, privileged, "plan after replace")

	d := planFor(t, sim, privileged, engine.Options{Destroy: true})
	applyPlan(t, sim, d)
	rows, err := sim.cl.ClusterResources(ctx, "vm")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Type == "lxc" {
			t.Errorf("after destroy: container %d (%s) is left", r.VMID, r.Name)
		}
	}
}

// TestSimLxcKeys: the container keys of issue 7 — ssh-public-keys and
// password at create only, features (nesting, as a token may), a pool,
// mount points added and grown, hostname and NICs changed in place — and
// a destroy that shuts the running container down before it deletes it.
func TestSimLxcKeys(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	const doc = `kind: Pool
name: lab
---
kind: LxcContainer
name: web01
spec:
  vmid: 210
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  rootfs: local-lvm:2
  net0: name=eth0,bridge=vmbr0,ip=dhcp
  ssh-public-keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0 admin@example.com
  password: ${CT_PASSWORD}
  features: nesting=1
  unprivileged: true
  pool: lab
  running: true
`
	set := loadSpec(t, doc)
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	wantConverged(t, t.Fatalf, sim, set, "second plan")
	cfg, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", 210)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("features") != "nesting=1" || cfg.Get("hostname") != "web01" || cfg.Get("unprivileged") != "1" {
		t.Errorf("created: features %q hostname %q unprivileged %q", cfg.Get("features"), cfg.Get("hostname"), cfg.Get("unprivileged"))
	}
	for _, k := range []string{"password", "ssh-public-keys", "ostemplate"} {
		if _, ok := cfg.Lookup(k); ok {
			t.Errorf("%s is in the config", k)
		}
	}

	changed := loadSpec(t, strings.NewReplacer(
		"  rootfs: local-lvm:2\n", "  rootfs: local-lvm:2\n  mp0: local-lvm:1,mp=/srv/data\n",
		"ip=dhcp", "ip=dhcp,tag=20",
	).Replace(doc))
	// A pinned vmid is the container's identity: another hostname for it
	// is a conflict, not a rename (never a silent takeover).
	renamed := loadSpec(t, strings.Replace(doc, "  rootfs: local-lvm:2\n", "  rootfs: local-lvm:2\n  hostname: web01.lab\n", 1))
	if _, err := engine.Build(ctx, renamed, mustObserve(t, sim, renamed), engine.Options{}); err == nil || !strings.Contains(err.Error(), "refusing to take it over") {
		t.Errorf("another hostname for vmid 210: got %v, want the conflict", err)
	}
	p := planFor(t, sim, changed, engine.Options{})
	if c := p.Change("LxcContainer/web01"); c.Action != engine.Update {
		t.Fatalf("plan: %s %+v", c.Action, c.Diff)
	}
	applyPlan(t, sim, p)
	cfg, _ = sim.cl.GuestConfig(ctx, pve.LXC, "pve", 210)
	if !strings.HasPrefix(cfg.Get("mp0"), "local-lvm:vm-210-disk-1,mp=/srv/data") || cfg.Get("hostname") != "web01" || !strings.Contains(cfg.Get("net0"), "tag=20") {
		t.Errorf("after the update: mp0 %q hostname %q net0 %q", cfg.Get("mp0"), cfg.Get("hostname"), cfg.Get("net0"))
	}
	wantConverged(t, t.Fatalf, sim, changed, "plan after the update")

	grown := loadSpec(t, strings.NewReplacer(
		"  rootfs: local-lvm:2\n", "  rootfs: local-lvm:3\n  mp0: local-lvm:2,mp=/srv/data\n",
		"ip=dhcp", "ip=dhcp,tag=20").Replace(doc))
	p = planFor(t, sim, grown, engine.Options{})
	var paths []string
	for _, d := range p.Change("LxcContainer/web01").Diff {
		paths = append(paths, d.Path)
	}
	if diff := cmp.Diff([]string{"mp0.size", "rootfs.size"}, paths); diff != "" {
		t.Errorf("growth diff (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	cfg, _ = sim.cl.GuestConfig(ctx, pve.LXC, "pve", 210)
	if !strings.Contains(cfg.Get("mp0"), "size=2G") || !strings.Contains(cfg.Get("rootfs"), "size=3G") {
		t.Errorf("after growth: mp0 %q rootfs %q", cfg.Get("mp0"), cfg.Get("rootfs"))
	}

	d := planFor(t, sim, grown, engine.Options{Destroy: true})
	_, h := applyHooked(t, sim, d)
	if msgs := strings.Join(h.messages, "\n"); !strings.Contains(msgs, "shutting down container 210") {
		t.Errorf("destroy messages %q: no shutdown", h.messages)
	}
	if _, err := sim.cl.GuestConfig(ctx, pve.LXC, "pve", 210); !pve.IsNotFound(err) {
		t.Errorf("container 210 after destroy: %v", err)
	}
}

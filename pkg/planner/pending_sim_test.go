package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// A change a running guest cannot take at once stays pending in PVE
// (qemu-server vmconfig_hotplug_pending, pve-container's): apply says
// so, and a plan made meanwhile sees the pending values (GET config
// applies them) and plans nothing again.
func TestSimPendingChangesAreNotPlannedTwice(t *testing.T) {
	tests := []struct {
		name, before, after string
		pending             string // the apply message
	}{
		{
			name:   "vm",
			before: "kind: QemuVM\nname: hot\nspec:\n  vmid: 140\n  memory: 1024\n  cores: 1\n  scsi0: local-lvm:8\n  running: true\n",
			after: "kind: QemuVM\nname: hot\nspec:\n  vmid: 140\n  memory: 2048\n  cores: 2\n  cpulimit: 2\n" +
				"  scsi0: local-lvm:8,cache=writeback\n  ide1: local-lvm:1\n  description: \"two lines  \\n\\n\"\n  running: true\n",
			pending: "vm 140: pending until reboot: cores, ide1, memory, scsi0",
		},
		{
			name: "container",
			before: "kind: LxcContainer\nname: ct\nspec:\n  vmid: 240\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  mp0: local-lvm:1,mp=/srv\n  running: true\n",
			after: "kind: LxcContainer\nname: ct\nspec:\n  vmid: 240\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  mp0: local-lvm:1,mp=/srv,backup=1\n  memory: 1024\n  nameserver: 192.0.2.53\n  running: true\n",
			pending: "container 240: pending until reboot: mp0, nameserver",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSim(t)
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, tc.before), engine.Options{}))
			set := loadSpec(t, tc.after)
			p := planFor(t, sim, set, engine.Options{})
			if !p.HasChanges() {
				t.Fatalf("plan of the change: got %q, want an update", summary(p))
			}
			// The plan predicts what the apply then reports.
			_, keys, _ := strings.Cut(tc.pending, "pending until reboot: ")
			if reasons := strings.Join(p.Changes[0].Reasons, "\n"); !strings.Contains(reasons, "pending until reboot: "+keys+" (") {
				t.Errorf("plan reasons %q lack pending until reboot: %s", p.Changes[0].Reasons, keys)
			}
			h := &recHooks{}
			if _, err := engine.Apply(context.Background(), sim, p, engine.ApplyOptions{Hooks: h}); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if msgs := strings.Join(h.messages, "\n"); !strings.Contains(msgs, tc.pending) {
				t.Errorf("apply messages %q lack %q", h.messages, tc.pending)
			}
			for range 2 {
				if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
					t.Errorf("plan while the change is pending: got %q %+v, want clean", summary(p), p.Changes[0].Diff)
				}
			}
		})
	}
}

// rebootOnPending reboots a running guest for what PVE keeps pending and
// waits until it runs with nothing pending: for the plan's own changes,
// and for those an earlier run left pending (a change of its own then).
func TestSimRebootOnPending(t *testing.T) {
	tests := []struct {
		name, typ, before, change string
		key, want                 string // a key PVE keeps pending, its value after the reboot
	}{
		{
			name: "vm", typ: "qemu", key: "cores", want: "2",
			before: "kind: QemuVM\nname: rb\nspec:\n  vmid: 150\n  memory: 1024\n  cores: 1\n  running: true\n",
			change: "cores: 1", // → cores: 2
		},
		{
			name: "container", typ: "lxc", key: "nameserver", want: "192.0.2.53",
			before: "kind: LxcContainer\nname: rb\nspec:\n  vmid: 250\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  nameserver: 192.0.2.1\n  running: true\n",
			change: "nameserver: 192.0.2.1", // → 192.0.2.53
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSim(t)
			ctx := context.Background()
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, tc.before), engine.Options{}))
			vmid := 150
			if tc.typ == "lxc" {
				vmid = 250
			}
			changed := strings.Replace(tc.before, tc.change, tc.key+": "+tc.want, 1)

			// Without rebootOnPending the change waits: the plan says so
			// and nothing reboots.
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, changed), engine.Options{}))
			if keys, _ := sim.cl.GuestPendingKeys(ctx, pve.GuestType(tc.typ), "pve", vmid); !slices.Contains(keys, tc.key) {
				t.Fatalf("pending after the update: %v, want %s", keys, tc.key)
			}
			// With it, the pending change left by that run is the plan's.
			set := loadSpec(t, strings.Replace(changed, "running: true", "running: true\n  rebootOnPending: true", 1))
			p := planFor(t, sim, set, engine.Options{})
			c := p.Changes[0]
			if c.Action != engine.Update || !strings.Contains(strings.Join(c.Reasons, "\n"), "pending until reboot since an earlier change: "+tc.key) {
				t.Fatalf("plan with rebootOnPending: %s %q", c.Action, c.Reasons)
			}
			_, h := applyHooked(t, sim, p)
			if msgs := strings.Join(h.messages, "\n"); !strings.Contains(msgs, "rebooting") {
				t.Errorf("apply messages %q: no reboot", h.messages)
			}
			st, err := sim.cl.GuestStatus(ctx, pve.GuestType(tc.typ), "pve", vmid)
			if err != nil || st.Status != "running" {
				t.Fatalf("after the reboot: %+v %v, want running", st, err)
			}
			if keys, _ := sim.cl.GuestPendingKeys(ctx, pve.GuestType(tc.typ), "pve", vmid); len(keys) > 0 {
				t.Errorf("pending after the reboot: %v", keys)
			}
			if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
				t.Errorf("plan after the reboot: %q %q", summary(p), p.Changes[0].Reasons)
			}

			// A new change that will pend: predicted, rebooted for at once.
			set = loadSpec(t, strings.Replace(strings.Replace(changed, tc.key+": "+tc.want, tc.change, 1), "running: true", "running: true\n  rebootOnPending: true", 1))
			p = planFor(t, sim, set, engine.Options{})
			if r := strings.Join(p.Changes[0].Reasons, "\n"); !strings.Contains(r, "rebootOnPending: "+map[string]string{"qemu": "vm", "lxc": "container"}[tc.typ]) {
				t.Errorf("plan reasons %q: no reboot announced", p.Changes[0].Reasons)
			}
			applyPlan(t, sim, p)
			if keys, _ := sim.cl.GuestPendingKeys(ctx, pve.GuestType(tc.typ), "pve", vmid); len(keys) > 0 {
				t.Errorf("pending after apply with rebootOnPending: %v", keys)
			}
			if p := planFor(t, sim, set, engine.Options{}); p.HasChanges() {
				t.Errorf("second plan: %q %q", summary(p), p.Changes[0].Reasons)
			}
		})
	}
}

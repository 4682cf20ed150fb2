package planner

import (
	"context"
	"strings"
	"testing"
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
			pending: "pending until vm 140 restarts: cores, ide1, memory, scsi0",
		},
		{
			name: "container",
			before: "kind: LxcContainer\nname: ct\nspec:\n  vmid: 240\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  mp0: local-lvm:1,mp=/srv\n  running: true\n",
			after: "kind: LxcContainer\nname: ct\nspec:\n  vmid: 240\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n" +
				"  rootfs: local-lvm:2\n  mp0: local-lvm:1,mp=/srv,backup=1\n  memory: 1024\n  nameserver: 192.0.2.53\n  running: true\n",
			pending: "pending until container 240 restarts: mp0, nameserver",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSim(t)
			applyPlan(t, sim, planFor(t, sim, loadSpec(t, tc.before), Options{}))
			set := loadSpec(t, tc.after)
			p := planFor(t, sim, set, Options{})
			if !p.HasChanges() {
				t.Fatalf("plan of the change: got %q, want an update", summary(p))
			}
			h := &recHooks{}
			if _, err := Apply(context.Background(), sim, p, ApplyOptions{Hooks: h}); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if msgs := strings.Join(h.messages, "\n"); !strings.Contains(msgs, tc.pending) {
				t.Errorf("apply messages %q lack %q", h.messages, tc.pending)
			}
			for range 2 {
				if p := planFor(t, sim, set, Options{}); p.HasChanges() {
					t.Errorf("plan while the change is pending: got %q %+v, want clean", summary(p), p.Changes[0].Diff)
				}
			}
		})
	}
}

package planner

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// TestSimRebootAndWait: qemu-server's reboot task ends with the VM
// stopped and a qmstart task of its own starts it again; rebootAndWait
// returns only once the VM runs with its pending changes applied, and
// names the restart's failure when there is one.
func TestSimRebootAndWait(t *testing.T) {
	tests := []struct {
		name    string
		change  url.Values // made on the running VM; stays pending
		errHas  string
		applied func(*pve.Config) bool
	}{
		{
			name:    "pending applied",
			change:  url.Values{"cores": {"2"}},
			applied: func(c *pve.Config) bool { return c.Get("cores") == "2" },
		},
		{
			// hotplug=0 keeps the NIC change pending; the restart then
			// fails on the bridge that does not exist.
			name:   "restart fails",
			change: url.Values{"net0": {"virtio,bridge=vmbr9"}},
			errHas: "vm 100 did not start again after its reboot: task UPID:pve:",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSim(t)
			ctx := context.Background()
			cl := sim.cl
			if err := cl.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "memory": {"512"}, "hotplug": {"0"},
				"net0": {"virtio,bridge=vmbr0"}, "start": {"1"}}); err != nil {
				t.Fatal(err)
			}
			if err := cl.UpdateQemu(ctx, "pve", 100, tc.change); err != nil {
				t.Fatal(err)
			}
			if keys, err := cl.QemuPendingKeys(ctx, "pve", 100); err != nil || len(keys) != 1 {
				t.Fatalf("got pending %v, %v before the reboot, want one key", keys, err)
			}
			h := &recHooks{}
			x := &engine.Execution{Client: cl, Hooks: h, Change: &engine.Change{Address: "QemuVM/r"}}
			err := qemu.rebootAndWait(ctx, x, "pve", 100)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "failed: start failed: QEMU exited with code 1") {
					t.Fatalf("got %v, want an error containing %q and the start failure", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := cl.QemuStatus(ctx, "pve", 100)
			if err != nil || st.Status != "running" {
				t.Fatalf("got %+v, %v after rebootAndWait, want running", st, err)
			}
			keys, err := cl.QemuPendingKeys(ctx, "pve", 100)
			if err != nil || len(keys) != 0 {
				t.Errorf("got pending %v, %v after rebootAndWait, want none", keys, err)
			}
			cfg, err := cl.QemuConfig(ctx, "pve", 100)
			if err != nil || !tc.applied(cfg) {
				t.Errorf("got config %v, %v, want the change applied", cfg, err)
			}
			if len(h.messages) == 0 || h.messages[0] != "QemuVM/r: rebooting vm 100" {
				t.Errorf("got messages %q, want the reboot reported", h.messages)
			}
		})
	}
}

package pve_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// The typed calls against the simulator, where they depend on PVE's
// behaviour over time.
func TestSimGuestCalls(t *testing.T) {
	// A status interval longer than the test: /cluster/resources never
	// learns the new guests' names.
	s := simtest.Start(t, simtest.Options{Conformance: true, Sim: pvesim.Options{StatusInterval: time.Hour}})
	ctx := context.Background()
	cl := s.Client
	if err := cl.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"web"}, "memory": {"512"}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.CreateGuest(ctx, pve.LXC, "pve", url.Values{"vmid": {"200"}, "hostname": {"ct"},
		"ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"}, "rootfs": {"local-lvm:4"}}); err != nil {
		t.Fatal(err)
	}
	t.Run("node lists are current", func(t *testing.T) {
		for typ, want := range map[pve.GuestType]pve.ClusterResource{
			pve.QEMU: {ID: "qemu/100", Type: "qemu", Node: "pve", VMID: 100, Name: "web", Status: "stopped"},
			pve.LXC:  {ID: "lxc/200", Type: "lxc", Node: "pve", VMID: 200, Name: "ct", Status: "stopped"},
		} {
			rows, err := cl.NodeGuests(ctx, typ, "pve")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range rows {
				found = found || r == want
			}
			if !found {
				t.Errorf("%s: got rows %+v, want %+v among them", typ, rows, want)
			}
		}
		rows, err := cl.ClusterResources(ctx, "vm")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.VMID == 100 && (r.Name != "" || r.Status != "unknown") {
				t.Errorf("got /cluster/resources row %+v before pvestatd ran, want status unknown and no name", r)
			}
		}
	})
	t.Run("container template waits for its worker", func(t *testing.T) {
		if err := cl.TemplateGuest(ctx, pve.LXC, "pve", 200); err != nil {
			t.Fatal(err)
		}
		cfg, err := cl.GuestConfig(ctx, pve.LXC, "pve", 200)
		if err != nil || cfg.Get("template") != "1" {
			t.Errorf("got config %v, %v after TemplateGuest, want template 1", cfg, err)
		}
	})
	t.Run("missing guest", func(t *testing.T) {
		if err := cl.QemuPower(ctx, "pve", 150, "reboot", nil); !pve.IsNotFound(err) {
			t.Errorf("reboot of a missing VM: got %v, want IsNotFound", err)
		}
	})
	t.Run("task status names the token apart", func(t *testing.T) {
		upid, err := cl.StartTask(ctx, "POST", "/nodes/pve/qemu/100/status/start", nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cl.WaitTask(ctx, upid)
		if err != nil || st.User != "root@pam" || st.TokenID != "pvectl" {
			t.Errorf("got %+v, %v, want user root@pam and token pvectl", st, err)
		}
	})
}

// WaitTask never polls a task more often than twice per fine step on
// average, first task of a type (half steps while young) or learned:
// status polls ≤ 2 × time waited / step + 1. (A bound on the count for
// the time the wait took: it holds however slow the machine is.)
func TestWaitTaskPollRate(t *testing.T) {
	const step = 20 * time.Millisecond
	s := simtest.Start(t, simtest.Options{
		Sim:           pvesim.Options{TaskDuration: 300 * time.Millisecond},
		ClientOptions: []pve.Option{pve.WithTaskPolling(step, 10*step)},
	})
	ctx := context.Background()
	if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"rate"}, "memory": {"512"}}); err != nil {
		t.Fatal(err)
	}
	for i, action := range []string{"start", "stop", "start", "stop"} {
		upid, err := s.Client.StartTask(ctx, http.MethodPost, "/nodes/pve/qemu/100/status/"+action, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Requests.Reset()
		began := time.Now()
		if _, err := s.Client.WaitTask(ctx, upid); err != nil {
			t.Fatal(err)
		}
		waited := time.Since(began)
		polls := 0
		for k, n := range s.Requests.Reset() {
			if strings.HasPrefix(k, "GET /nodes/pve/tasks/") && strings.HasSuffix(k, "/status") {
				polls += n
			}
		}
		if limit := int(2*waited/step) + 1; polls > limit {
			t.Errorf("task %d (%s): %d polls in %s, more than two per %s (%d)", i, action, polls, waited, step, limit)
		}
	}
}

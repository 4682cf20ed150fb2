package pve_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// createFaults answers the first creates itself, by the fault each test
// case names; later ones reach the simulator.
type createFaults struct {
	mu     sync.Mutex
	faults []string // one per create, in order: "", "reset", "596 after", "596 before", "500"
	posts  int
	path   string // the POST faulted, if not the QEMU create
}

func (f *createFaults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := "/api2/json/nodes/pve/qemu"
		if f.path != "" {
			path = f.path
		}
		if r.Method != http.MethodPost || r.URL.Path != path {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		fault := ""
		if f.posts < len(f.faults) {
			fault = f.faults[f.posts]
		}
		f.posts++
		f.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		fail := func(status int, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write([]byte(`{"data":null,"message":"` + msg + `"}`))
		}
		switch fault {
		case "":
			next.ServeHTTP(w, r)
		case "reset": // never reaches PVE
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		case "596 before":
			fail(596, "Connection timed out")
		case "500":
			fail(http.StatusInternalServerError, "cfs-lock 'file-user_cfg' error: got lock request timeout")
		case "596 after": // PVE carried it out; its answer was lost
			next.ServeHTTP(discard{w.Header()}, r)
			fail(596, "Connection timed out")
		}
	})
}

// discard is a ResponseWriter that drops what it is told.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h.Clone() }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// A guest create that failed in passing is looked for among the node's
// tasks and sent again only when PVE never started it: exactly one guest,
// whatever the fault.
func TestCreateRecoversFromFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []string
		want   []pve.TaskPhase // the recovery events, in order
		posts  int
	}{
		{"answer lost after PVE started it", []string{"596 after"}, []pve.TaskPhase{pve.TaskFound}, 1},
		{"connection dropped before PVE", []string{"reset"}, []pve.TaskPhase{pve.TaskFaultRetry}, 2},
		{"596 before PVE", []string{"596 before"}, []pve.TaskPhase{pve.TaskFaultRetry}, 2},
		{"plain 500", []string{"500"}, []pve.TaskPhase{pve.TaskFaultRetry}, 2},
		{"two faults", []string{"500", "reset"}, []pve.TaskPhase{pve.TaskFaultRetry, pve.TaskFaultRetry}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &createFaults{faults: tc.faults}
			s := simtest.Start(t, simtest.Options{Conformance: true, Wrap: f.wrap})
			var mu sync.Mutex
			var got []pve.TaskPhase
			ctx := pve.WithTaskObserver(context.Background(), func(ev pve.TaskEvent) {
				if ev.Phase == pve.TaskFound || ev.Phase == pve.TaskFaultRetry {
					mu.Lock()
					got = append(got, ev.Phase)
					mu.Unlock()
				}
			})
			if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"one"}}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || f.posts != tc.posts {
				t.Errorf("got events %v after %d POSTs, want %v after %d", got, f.posts, tc.want, tc.posts)
			}
			if _, err := s.Client.QemuConfig(ctx, "pve", 100); err != nil {
				t.Errorf("the VM is not there: %v", err)
			}
		})
	}
}

// PVE's refusal is not sent again, and a fault that never ends gives up
// after three sends.
func TestCreateGivesUp(t *testing.T) {
	f := &createFaults{faults: []string{"", "", "500", "500", "500"}}
	s := simtest.Start(t, simtest.Options{Conformance: true, Wrap: f.wrap})
	ctx := context.Background()
	if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}}); err != nil {
		t.Fatal(err)
	}
	err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}})
	if err == nil || !strings.Contains(err.Error(), "already exists") || f.posts != 2 {
		t.Errorf("got %v after %d POSTs, want PVE's refusal after 2", err, f.posts)
	}
	err = s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"101"}})
	if err == nil || !strings.Contains(err.Error(), "(sent 3 times)") || f.posts != 5 {
		t.Errorf("got %v after %d POSTs, want a failure after 3 more", err, f.posts)
	}
}

// A finished create task of the same vmid whose guest is gone (created and
// destroyed a moment ago) is not taken for this create's.
func TestCreateIgnoresANamesakesTask(t *testing.T) {
	f := &createFaults{faults: []string{"", "596 before"}}
	s := simtest.Start(t, simtest.Options{Conformance: true, Wrap: f.wrap})
	ctx := context.Background()
	if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"old"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.DeleteGuest(ctx, pve.QEMU, "pve", 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"new"}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Client.QemuConfig(ctx, "pve", 100)
	if err != nil || cfg.Get("name") != "new" || f.posts != 3 {
		t.Errorf("got config %v (%v) after %d POSTs, want the new VM after 3", cfg, err, f.posts)
	}
}

// A power action that failed in passing is looked for the same way: found,
// it is waited for; not found, it is sent again.
func TestPowerActionRecoversFromFaults(t *testing.T) {
	for _, tc := range []struct {
		fault string
		want  pve.TaskPhase
		posts int
	}{
		{"596 after", pve.TaskFound, 1},
		{"reset", pve.TaskFaultRetry, 2},
		{"500", pve.TaskFaultRetry, 2},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			f := &createFaults{faults: []string{tc.fault}, path: "/api2/json/nodes/pve/qemu/100/status/start"}
			s := simtest.Start(t, simtest.Options{Conformance: true, Wrap: f.wrap})
			var got []pve.TaskPhase
			ctx := pve.WithTaskObserver(context.Background(), func(ev pve.TaskEvent) {
				if ev.Phase == pve.TaskFound || ev.Phase == pve.TaskFaultRetry {
					got = append(got, ev.Phase)
				}
			})
			if err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Client.GuestPower(ctx, pve.QEMU, "pve", 100, "start", nil); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != tc.want || f.posts != tc.posts {
				t.Errorf("got events %v after %d POSTs, want [%v] after %d", got, f.posts, tc.want, tc.posts)
			}
			st, err := s.Client.QemuStatus(ctx, "pve", 100)
			if err != nil || st.Status != "running" {
				t.Errorf("got status %+v (%v), want running", st, err)
			}
		})
	}
}

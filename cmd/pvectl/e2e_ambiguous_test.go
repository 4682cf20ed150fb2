package main

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// ambiguousSpec makes a guest without vmid, one with, a container, a
// clone, a pool, a storage, a user and a bridge.
const ambiguousSpec = `kind: QemuVM
name: amb-auto
spec:
  memory: 512
---
kind: QemuVM
name: amb-pinned
spec:
  vmid: 130
  memory: 512
---
kind: LxcContainer
name: amb-ct
spec:
  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  rootfs: local-lvm:4
---
kind: QemuVM
name: amb-clone
spec:
  image: 24.04-cloud
---
kind: Pool
name: amb-pool
spec:
  comment: made once
---
kind: Storage
name: amb-store
spec:
  type: dir
  path: /srv/amb
  content: iso
---
kind: User
name: amb@pve
spec:
  comment: made once
---
kind: LinuxBridge
name: vmbr7
spec:
  node: pve
  iface: vmbr7
`

// ambiguousCreates names each create of ambiguousSpec by its request and
// the form field that names its object.
var ambiguousCreates = []struct{ method, path, field, value string }{
	{"POST", "/nodes/pve/qemu", "name", "amb-auto"},
	{"POST", "/nodes/pve/qemu", "name", "amb-pinned"},
	{"POST", "/nodes/pve/lxc", "hostname", "amb-ct"},
	{"POST", "/nodes/pve/qemu/9000/clone", "name", "amb-clone"},
	{"POST", "/pools", "poolid", "amb-pool"},
	{"POST", "/storage", "storage", "amb-store"},
	{"POST", "/access/users", "userid", "amb@pve"},
	{"POST", "/nodes/pve/network", "iface", "vmbr7"},
}

// Issue 17 acceptance: through a proxy that lets the simulator carry out
// every create and answers it with a plain 500 (or, in the second case, a
// mix of 502, 503, 504, 595, 596, 599 and a reset), one apply makes each
// object exactly once and exits 0, and the next plan is clean.
func TestE2EFaultAmbiguousCreatesMakeOneEach(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []string // one per ambiguousCreates entry
	}{
		{"plain 500", slices.Repeat([]string{"500"}, len(ambiguousCreates))},
		{"gateways and resets", []string{"502", "503", "504", "595", "596", "599", "reset", "502"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var injectors []*simtest.CarriedOut
			for i, c := range ambiguousCreates {
				injectors = append(injectors, &simtest.CarriedOut{Fault: tc.faults[i], Match: func(r *http.Request, body []byte) bool {
					form, _ := url.ParseQuery(string(body))
					return r.Method == c.method && r.URL.Path == "/api2/json"+c.path && form.Get(c.field) == c.value
				}})
			}
			wrap := func(h http.Handler) http.Handler {
				for _, f := range injectors {
					h = f.Wrap(h)
				}
				return h
			}
			env := startSimOpts(t, pvesim.Options{TaskDuration: 20 * time.Millisecond}, wrap)
			f := writeSpec(t, "ambiguous.yaml", ambiguousSpec)
			r := env.mustRun(0, "apply", "-f", f, "--auto-approve")
			for i, inj := range injectors {
				if inj.Fired() != 1 || inj.Seen() != 1 {
					t.Errorf("%v: sent %d times (%d faulted), want once, faulted", ambiguousCreates[i], inj.Seen(), inj.Fired())
				}
			}
			if !strings.Contains(r.stdout, "got no usable answer") {
				t.Errorf("the apply does not say an answer was lost:\n%s", r.stdout)
			}
			env.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
			if got, want := env.guestNames(), []string{"amb-auto", "amb-clone", "amb-pinned"}; !slices.Equal(got, want) {
				t.Errorf("VMs: got %v, want each of %v once", got, want)
			}
			cts, err := env.client.NodeGuests(context.Background(), pve.LXC, "pve")
			if err != nil || len(cts) != 1 {
				t.Errorf("containers: got %v (%v), want amb-ct once", cts, err)
			}
		})
	}
}

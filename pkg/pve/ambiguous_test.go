package pve_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// Issue 17: a guest create or clone that PVE carried out, answered with
// something that does not prove a refusal (a bare 500, a gateway or
// pveproxy status, a reset, no answer), is found by its vmid and task and
// adopted: one guest, no error, never a second send that PVE refuses as
// "already exists" and the caller takes for another client's.
func TestAmbiguousGuestCreateAdopted(t *testing.T) {
	ct := url.Values{"vmid": {"200"}, "hostname": {"ct"},
		"ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"}, "rootfs": {"local-lvm:4"}}
	for _, call := range []struct {
		name string
		path string
		typ  pve.GuestType
		vmid int
		do   func(ctx context.Context, cl *pve.Client) error
	}{
		{"qemu create", "/api2/json/nodes/pve/qemu", pve.QEMU, 100, func(ctx context.Context, cl *pve.Client) error {
			return cl.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "name": {"one"}})
		}},
		{"lxc create", "/api2/json/nodes/pve/lxc", pve.LXC, 200, func(ctx context.Context, cl *pve.Client) error {
			return cl.CreateGuest(ctx, pve.LXC, "pve", ct)
		}},
		{"qemu clone", "/api2/json/nodes/pve/qemu/9000/clone", pve.QEMU, 150, func(ctx context.Context, cl *pve.Client) error {
			return cl.CloneGuest(ctx, pve.QEMU, "pve", 9000, url.Values{"newid": {"150"}, "name": {"golden"}, "full": {"1"}})
		}},
	} {
		for _, fault := range simtest.AmbiguousFaults {
			t.Run(call.name+"/"+fault, func(t *testing.T) {
				f := &simtest.CarriedOut{Fault: fault, Match: func(r *http.Request, _ []byte) bool {
					return r.Method == http.MethodPost && r.URL.Path == call.path
				}}
				s := simtest.Start(t, simtest.Options{Conformance: true, Wrap: f.Wrap,
					ClientOptions: []pve.Option{pve.WithRequestTimeout(time.Second)}})
				ctx := context.Background()
				if err := call.do(ctx, s.Client); err != nil {
					t.Fatalf("got %v, want the guest PVE made adopted", err)
				}
				if f.Fired() != 1 || f.Seen() != 1 {
					t.Errorf("the call was sent %d times (%d faulted), want once", f.Seen(), f.Fired())
				}
				if _, err := s.Client.GuestConfig(ctx, call.typ, "pve", call.vmid); err != nil {
					t.Errorf("the guest is not there: %v", err)
				}
			})
		}
	}
}

// A bare 500 is not PVE's refusal; PVE's own message with a 500 is.
func TestOutcomeUnknownRule(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   bool
	}{
		{500, `{"data":null}`, true},
		{500, ``, true},
		{500, `<html>oops</html>`, true},
		{500, `{"data":null,"message":"Internal Server Error"}`, true},
		{500, `{"data":null,"message":"storage 'nope' does not exist"}`, false},
		{500, `{"data":null,"message":"can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"}`, false},
		{502, `{"data":null}`, true},
		{503, ``, true},
		{504, ``, true},
		{595, `{"data":null,"message":"Connection refused"}`, true},
		{596, `{"data":null,"message":"Connection timed out"}`, true},
		{599, ``, true},
		{400, `{"data":null,"message":"Parameter verification failed."}`, false},
		{403, `{"data":null,"message":"Permission check failed"}`, false},
	} {
		wrap := func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
		}
		s := simtest.Start(t, simtest.Options{Wrap: wrap})
		err := s.Client.CreatePool(context.Background(), url.Values{"poolid": {"p"}})
		if err == nil || pve.OutcomeUnknown(err) != tc.want {
			t.Errorf("%d %q: got %v, OutcomeUnknown %v, want %v", tc.status, tc.body, err, pve.OutcomeUnknown(err), tc.want)
		}
	}
}

package pve_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// noHijack hides the connection from the simulator, so its answers go out
// with net/http's standard reason phrase: what a reverse proxy in front of
// PVE that rewrites the status line leaves of PVE's message.
type noHijack struct{ http.ResponseWriter }

// TestAPIErrorMessage reads PVE's message from the simulator's answers,
// with PVE's reason phrase and behind a proxy that rewrote it.
func TestAPIErrorMessage(t *testing.T) {
	rewrite := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(noHijack{w}, r) })
	}
	for name, wrap := range map[string]func(http.Handler) http.Handler{"direct": nil, "behind a rewriting proxy": rewrite} {
		t.Run(name, func(t *testing.T) {
			s := simtest.Start(t, simtest.Options{Wrap: wrap})
			ctx := context.Background()
			err := s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "scsi0": {"nope:4"}})
			var ae *pve.APIError
			if !errors.As(err, &ae) || ae.Status != 500 || ae.Message != "storage 'nope' does not exist" {
				t.Errorf("got %#v, want a 500 with PVE's message", err)
			}
			err = s.Client.CreateQemu(ctx, "pve", url.Values{"vmid": {"100"}, "cores": {"0"}})
			if !errors.As(err, &ae) || ae.Status != 400 || ae.Message != "Parameter verification failed." ||
				ae.Errors["cores"] != "value must have a minimum value of 1" {
				t.Errorf("got %#v, want a 400 naming cores", err)
			}
			if _, err := s.Client.QemuConfig(ctx, "pve", 999); !pve.IsNotFound(err) {
				t.Errorf("got %v, want IsNotFound", err)
			}
		})
	}
}

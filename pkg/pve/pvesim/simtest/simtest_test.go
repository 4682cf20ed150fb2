package simtest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

func TestStart(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		scheme string
	}{
		{"plain http", Options{}, "http://127.0.0.1:"},
		{"tls pinned", Options{TLS: true}, "https://127.0.0.1:"},
		{"checked", Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"a", "b"}}}, "http://127.0.0.1:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, tc.opts)
			if !strings.HasPrefix(s.URL, tc.scheme) {
				t.Errorf("URL: got %q want prefix %q", s.URL, tc.scheme)
			}
			if (s.Fingerprint != "") != tc.opts.TLS {
				t.Errorf("fingerprint %q with TLS %v", s.Fingerprint, tc.opts.TLS)
			}
			if s.TokenID != DefaultTokenID || s.Secret != DefaultTokenSecret {
				t.Errorf("token: got %s / %s want the defaults", s.TokenID, s.Secret)
			}
			v, err := s.Client.Version(context.Background())
			if err != nil {
				t.Fatalf("Version: %v", err)
			}
			if v.Release != "9.1" {
				t.Errorf("release: got %q want 9.1", v.Release)
			}
			if err := s.Client.Do(context.Background(), "GET", "/nodes", nil, nil); err != nil {
				t.Fatalf("GET /nodes: %v", err)
			}
			if n := s.Requests.Total(); n != 2 {
				t.Errorf("Total: got %d want 2", n)
			}
			if diff := cmp.Diff(map[string]int{"GET /version": 1, "GET /nodes": 1}, s.Requests.Reset()); diff != "" {
				t.Errorf("Reset (-want +got):\n%s", diff)
			}
			if n := s.Requests.Total(); n != 0 {
				t.Errorf("Total after Reset: got %d want 0", n)
			}
		})
	}
}

// fakeTB records what Start reports; cleanups run when the caller says.
type fakeTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.TB.Fatalf("unexpected Fatalf: "+format, args...)
}

func (f *fakeTB) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestConformanceViolationsFailTheTest(t *testing.T) {
	tests := []struct {
		name        string
		conformance bool
		want        int
	}{
		{"checked", true, 1},
		{"unchecked", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			s := Start(f, Options{Conformance: tc.conformance})
			// A parameter PVE 9.1 does not have: a request violation.
			err := s.Client.Do(context.Background(), "GET", "/version", url.Values{"bogus": {"1"}}, nil)
			if err == nil {
				t.Errorf("GET /version?bogus=1: got nil error, want PVE's 400")
			}
			f.finish()
			if len(f.errs) != tc.want {
				t.Fatalf("reported %q, want %d violation(s)", f.errs, tc.want)
			}
			if tc.want > 0 && !strings.Contains(f.errs[0], "schema violation: request GET /version") {
				t.Errorf("got %q, want a request violation of GET /version", f.errs[0])
			}
		})
	}
}

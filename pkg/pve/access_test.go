package pve

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPermissionsRead(t *testing.T) {
	f := newFakePVE(t, false)
	f.handle("GET /access/permissions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":{"/vms":{"VM.Audit":1,"VM.Allocate":0},"/storage":{"Datastore.Audit":"1"}}}`))
	})
	c := f.client(t)
	got, err := c.Permissions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Permissions{"/vms": {"VM.Audit": true, "VM.Allocate": false}, "/storage": {"Datastore.Audit": true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if c.TokenID() != testTokenID {
		t.Errorf("got token %q", c.TokenID())
	}
}

// TestPermissionsHas: a path PVE does not list gets what its nearest
// listed parent passes down (its propagated privileges), as ACLs reach
// below the path they name.
func TestPermissionsHas(t *testing.T) {
	p := Permissions{
		"/":                       {"Sys.Audit": true},
		"/vms":                    {"VM.Audit": true, "VM.Allocate": false},
		"/vms/100":                {"VM.PowerMgmt": false},
		"/storage":                {"Datastore.Audit": false},
		"/sdn/zones/localnetwork": {"SDN.Use": true},
	}
	tests := []struct {
		path, priv string
		want       bool
	}{
		{"/vms", "VM.Allocate", true},      // listed, not propagated: held there
		{"/vms/101", "VM.Audit", true},     // from /vms, propagated
		{"/vms/101", "VM.Allocate", false}, // not propagated from /vms
		{"/vms/100", "VM.PowerMgmt", true}, // listed itself
		{"/vms/100", "VM.Audit", false},    // a listed path holds only what it lists
		{"/storage/local", "Datastore.Audit", false},
		{"/storage/local", "Sys.Audit", true}, // /storage passes nothing down: / does
		{"/sdn/zones/localnetwork/vmbr0/20", "SDN.Use", true},
		{"/pool/x", "Pool.Audit", false},
		{"/nodes/pve", "Sys.Audit", true},
	}
	for _, tc := range tests {
		if got := p.Has(tc.path, tc.priv); got != tc.want {
			t.Errorf("Has(%s, %s): got %v, want %v", tc.path, tc.priv, got, tc.want)
		}
	}
}

package pve

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Where PVE's answers contradict its schema (internal/conformance
// Deviations), the client takes both forms.
func TestAnswersAsPVEAndAsTheSchema(t *testing.T) {
	ctx := context.Background()
	for _, form := range []struct {
		name        string
		next        any
		mtu, vlanID any
	}{
		{"as PVE sends them", "104", "9000", "10"},
		{"as the schema says", 104, 9000, 10},
	} {
		t.Run(form.name, func(t *testing.T) {
			f := newFakePVE(t, false)
			f.handle("GET /cluster/nextid", data(form.next))
			f.handle("GET /nodes/pve/network", data([]any{map[string]any{"iface": "eno1.10", "type": "vlan",
				"mtu": form.mtu, "vlan-id": form.vlanID, "netmask": "24"}}))
			c := f.client(t)
			if id, err := c.NextID(ctx); err != nil || id != 104 {
				t.Errorf("NextID: got %d, %v; want 104", id, err)
			}
			ifaces, _, err := c.NetworkList(ctx, "pve")
			if err != nil {
				t.Fatal(err)
			}
			want := []*Config{ConfigOf(map[string]string{"iface": "eno1.10", "type": "vlan", "mtu": "9000", "vlan-id": "10", "netmask": "24"})}
			if diff := cmp.Diff(want, ifaces); diff != "" {
				t.Errorf("NetworkList (-want +got)\n%s", diff)
			}
		})
	}
}

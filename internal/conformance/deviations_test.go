package conformance

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDeviationsNameTheAPI(t *testing.T) {
	c := loadReal(t)
	if len(c.stale) > 0 {
		t.Errorf("deviations naming no integer in the apidoc: %q", c.stale)
	}
	for _, d := range Deviations {
		if d.Source == "" {
			t.Errorf("deviation %s %s %s cites no PVE source", d.Method, d.Path, d.Where)
		}
	}
}

func TestDeviationsAcceptOnlyWhatPVESends(t *testing.T) {
	c := loadReal(t)
	tests := []struct {
		name, path, body string
		want             []string
	}{
		{"read_pool with its poolid", "/pools/lab", `{"data":{"members":[],"poolid":"lab"}}`, nil},
		{"read_pool with another key", "/pools/lab", `{"data":{"members":[],"pool":"lab"}}`, []string{
			"GET /pools/lab: response data.pool: property is not defined in the return schema"}},
		{"nextid as PVE sends it", "/cluster/nextid", `{"data":"100"}`, nil},
		{"nextid as the schema says", "/cluster/nextid", `{"data":100}`, nil},
		{"nextid not a number", "/cluster/nextid", `{"data":"next"}`, []string{
			"GET /cluster/nextid: response data: got string (4 bytes), want integer"}},
		{"network mtu and vlan-id as text", "/nodes/pve/network",
			`{"data":[{"iface":"eno1.10","type":"vlan","mtu":"9000","vlan-id":"10","priority":4}]}`, nil},
		{"only the named keys", "/nodes/pve/network",
			`{"data":[{"iface":"vmbr0","type":"bridge","mtu":"9k","priority":"4"}]}`, []string{
				"GET /nodes/pve/network: response data[0].mtu: got string (2 bytes), want integer",
				"GET /nodes/pve/network: response data[0].priority: got string (1 bytes), want integer",
			}},
		{"sdn pending deleted", "/cluster/sdn/vnets",
			`{"data":[{"vnet":"web","type":"vnet","tag":10,"state":"changed","pending":{"tag":"deleted","vlanaware":"deleted"}}]}`, nil},
		{"sdn pending other text", "/cluster/sdn/vnets",
			`{"data":[{"vnet":"web","type":"vnet","tag":10,"state":"changed","pending":{"tag":"ten"}}]}`, []string{
				"GET /cluster/sdn/vnets: response data[0].pending.tag: got string (3 bytes), want integer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errStrings(c.Response("GET", tc.path, 200, []byte(tc.body)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Response (-want +got)\n%s", diff)
			}
		})
	}
}

func TestSplitWhere(t *testing.T) {
	for in, want := range map[string][]string{"": nil, "[].mtu": {"[]", "mtu"}, "a.b": {"a", "b"}, "a[].b": {"a", "[]", "b"}} {
		if diff := cmp.Diff(want, splitWhere(in)); diff != "" {
			t.Errorf("splitWhere(%q) (-want +got)\n%s", in, diff)
		}
	}
}

func TestRepeatedListValuesAreOneList(t *testing.T) {
	c := loadReal(t)
	got := errStrings(c.Request("PUT", "/nodes/pve/qemu/100/config", url.Values{"delete": {"net2", "net3"}}))
	if len(got) > 0 {
		t.Errorf("repeated delete: got %q, want it joined as PVE does", got)
	}
	got = errStrings(c.Request("PUT", "/nodes/pve/qemu/100/config", url.Values{"name": {"a", "b"}}))
	if want := []string{"PUT /nodes/{node}/qemu/{vmid}/config: parameter name: duplicate parameter (not defined as array)"}; !cmp.Equal(want, got) {
		t.Errorf("repeated name: got %q, want %q", got, want)
	}
}

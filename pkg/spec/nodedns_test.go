package spec

import (
	"strings"
	"testing"
)

// NodeDns bad input: an address PVE's format refuses and a server slot
// PVE does not have are named at their lines.
func TestNodeDnsBadInput(t *testing.T) {
	_, diags := loadFiles(t, map[string]string{"dns.yaml": "kind: NodeDns\nname: pve\nspec:\n  search: example.com\n  dns1: 999.1.1.1\n  dns4: 1.1.1.1\n"}, nil)
	got := strings.Join(diags, "\n")
	for _, want := range []string{
		"dns.yaml:5: spec.dns1: invalid format - value does not look like a valid IP address",
		`dns.yaml:6: unknown field "dns4" in NodeDns spec`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics %q lack %q", got, want)
		}
	}
}

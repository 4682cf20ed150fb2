package pvesim

import (
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/acl"
)

// TestPermissionRulesAreTheAPIDocs: every route the simulator serves has
// PVE's rule (a method without one is root@pam's only, which no token
// is). The rules are pkg/pve/acl's, kept equal to the apidoc's by
// TestRulesAreTheAPIDocs there.
func TestPermissionRulesAreTheAPIDocs(t *testing.T) {
	rules, err := acl.Rules()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{TokenSecret: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rt := range s.routes {
		if rules[rt.key] == nil {
			t.Errorf("route %s has no permission rule in the apidoc", rt.key)
		}
	}
}

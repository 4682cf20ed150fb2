package pvesim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestPermissionListingLeavesOutNoAccess: GET /access/permissions lists
// the paths ACLs name but leaves out every path where nothing is held
// (pve-access-control RPCEnvironment.pm get_effective_permissions:
// "filter paths where user has NO permissions"), so a NoAccess on
// /vms/101 does not show, for a privilege-separated token (whose own
// ACLs are intersected with its user's, compile_acl_path) as for one
// without separation (its user's); asked with path=, PVE answers the
// path with an empty set (API2/AccessControl.pm permissions). A narrower
// role there is listed, without VM.Audit.
func TestPermissionListingLeavesOutNoAccess(t *testing.T) {
	e := checkedEnv(t, pvesim.Options{})
	sep := e.newToken("ci@pve", "sep", true)
	sepID, _, _ := strings.Cut(sep, "=")
	plain := e.newToken("ops@pve", "plain", false)
	for _, who := range [][2]string{{"users", "ci@pve"}, {"tokens", sepID}, {"users", "ops@pve"}} {
		e.grant("/vms", "PVEVMAdmin", who[0], who[1])
	}
	e.grant("/vms/101", "NoAccess", "tokens", sepID)
	e.grant("/vms/101", "NoAccess", "users", "ops@pve")
	e.ok(nil, "POST", "/access/roles", "roleid", "PowerOnly", "privs", "VM.PowerMgmt")
	e.grant("/vms/102", "PowerOnly", "tokens", sepID)

	for _, tc := range []struct{ name, auth string }{{"privilege-separated", sep}, {"not separated", plain}} {
		t.Run(tc.name, func(t *testing.T) {
			var perms map[string]map[string]int
			r := e.as(tc.auth, "GET", "/access/permissions")
			if err := json.Unmarshal(r.Data, &perms); err != nil || r.Status != 200 {
				t.Fatalf("permissions: %d %v", r.Status, err)
			}
			if _, listed := perms["/vms/101"]; listed {
				t.Errorf("/vms/101 listed: %v, want it left out (nothing held there)", perms["/vms/101"])
			}
			if perms["/vms"]["VM.Audit"] != 1 {
				t.Errorf("/vms: %v, want VM.Audit propagated", perms["/vms"])
			}
			r = e.as(tc.auth, "GET", "/access/permissions", "path", "/vms/101")
			if r.Status != 200 || string(r.Data) != `{"/vms/101":{}}` {
				t.Errorf("path=/vms/101: %d %s, want an empty set", r.Status, r.Data)
			}
		})
	}
	var perms map[string]map[string]int
	if err := json.Unmarshal(e.as(sep, "GET", "/access/permissions").Data, &perms); err != nil {
		t.Fatal(err)
	}
	if p := perms["/vms/102"]; p["VM.PowerMgmt"] != 1 || len(p) != 1 {
		t.Errorf("/vms/102 with a narrower role: %v, want VM.PowerMgmt only (no VM.Audit)", p)
	}
}

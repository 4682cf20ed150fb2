package planner

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// needText is a need as "path privs" with its alternatives.
func needText(n engine.PermNeed) string {
	if n.RootOnly {
		return "root-only: " + n.Why
	}
	s := n.Path + " " + engine.PrivList(n)
	if n.Or != "" {
		s += " (or " + n.Or + ")"
	}
	for _, a := range n.Alt {
		s += " | " + needText(a)
	}
	return s
}

// TestCallNeedsFromRules: the needs derived from PVE's rules for calls of
// each shape of rule.
func TestCallNeedsFromRules(t *testing.T) {
	tests := []struct {
		name string
		call engine.APICall
		want []string
	}{
		{"perm", engine.Call("PUT", "/nodes/{node}/dns", "to change DNS", "node", "pve"), []string{"/nodes/pve Sys.Modify"}},
		{"and with or", engine.Call("POST", "/nodes/{node}/storage/{storage}/download-url", "to download", "node", "pve", "storage", "local"),
			[]string{"/storage/local Datastore.AllocateTemplate", "/ Sys.Audit and Sys.Modify | /nodes/pve Sys.AccessNetwork"}},
		{"any", engine.Call("GET", "/nodes/{node}/storage/{storage}/content", "to list", "node", "pve", "storage", "local"),
			[]string{"/storage/local Datastore.Audit or Datastore.AllocateSpace"}},
		{"perm-modify", engine.Call("PUT", "/access/acl", "to grant", "path", "/pool/lab"), []string{"/pool/lab Permissions.Modify or Pool.Allocate"}},
		{"userid-param and userid-group", engine.Call("POST", "/access/users", "to create the user", "userid", "ci@pve"),
			[]string{"/access/realm/pve Realm.AllocateUser", "/access/groups User.Modify"}},
		{"self never holds for a token", engine.Call("DELETE", "/access/users/{userid}/token/{tokenid}", "to delete", "userid", "ci@pve", "tokenid", "x"),
			[]string{"/access/groups User.Modify"}},
		{"require_param absent", engine.Call("POST", "/nodes/{node}/qemu/{vmid}/clone", "to clone", "node", "pve", "vmid", "9000", "newid", "100"),
			[]string{"/vms/9000 VM.Clone", "/vms/100 VM.Allocate"}},
		{"require_param present", engine.Call("POST", "/nodes/{node}/qemu/{vmid}/clone", "to clone", "node", "pve", "vmid", "9000", "newid", "100", "pool", "lab"),
			[]string{"/vms/9000 VM.Clone", "/vms/100 VM.Allocate | /pool/lab VM.Allocate"}},
		{"vmid known after apply", engine.Call("DELETE", "/nodes/{node}/qemu/{vmid}", "to delete", "node", "pve", "vmid", "${QemuVM/app.vmid}"),
			[]string{"/vms VM.Allocate"}},
		{"open to all: the handler's", engine.Call("GET", "/pools", "to list").With(engine.NeedPriv("/pool/x", "to see", "Pool.Audit")), []string{"/pool/x Pool.Audit"}},
		{"no rule: root only", engine.Call("POST", "/nodes/{node}/execute", "to run commands", "node", "pve"), []string{"root-only: run commands"}},
		{"unknown method: root only", engine.Call("POST", "/no/such/path", "to do it"), []string{"root-only: do it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, n := range engine.CallNeeds([]engine.APICall{tc.call}) {
				got = append(got, needText(n))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestCallNeedsOnePerGrant: two calls asking the same privilege on the
// same path make one need, with the first call's why.
func TestCallNeedsOnePerGrant(t *testing.T) {
	needs := engine.CallNeeds([]engine.APICall{
		engine.Call("POST", "/nodes/{node}/network", "to create the interface", "node", "pve"),
		engine.Call("PUT", "/nodes/{node}/network", "to commit", "node", "pve"),
	})
	if len(needs) != 1 || needs[0].Why != "to create the interface" {
		t.Errorf("got %+v, want one need for both calls", needs)
	}
}

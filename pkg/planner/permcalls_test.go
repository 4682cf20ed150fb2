package planner

import (
	"strings"
	"testing"
)

// needText is a need as "path privs" with its alternatives.
func needText(n permNeed) string {
	if n.rootOnly {
		return "root-only: " + n.why
	}
	s := n.path + " " + privList(n)
	if n.or != "" {
		s += " (or " + n.or + ")"
	}
	for _, a := range n.alt {
		s += " | " + needText(a)
	}
	return s
}

// TestCallNeedsFromRules: the needs derived from PVE's rules for calls of
// each shape of rule.
func TestCallNeedsFromRules(t *testing.T) {
	tests := []struct {
		name string
		call apiCall
		want []string
	}{
		{"perm", call("PUT", "/nodes/{node}/dns", "to change DNS", "node", "pve"), []string{"/nodes/pve Sys.Modify"}},
		{"and with or", call("POST", "/nodes/{node}/storage/{storage}/download-url", "to download", "node", "pve", "storage", "local"),
			[]string{"/storage/local Datastore.AllocateTemplate", "/ Sys.Audit and Sys.Modify | /nodes/pve Sys.AccessNetwork"}},
		{"any", call("GET", "/nodes/{node}/storage/{storage}/content", "to list", "node", "pve", "storage", "local"),
			[]string{"/storage/local Datastore.Audit or Datastore.AllocateSpace"}},
		{"perm-modify", call("PUT", "/access/acl", "to grant", "path", "/pool/lab"), []string{"/pool/lab Permissions.Modify or Pool.Allocate"}},
		{"userid-param and userid-group", call("POST", "/access/users", "to create the user", "userid", "ci@pve"),
			[]string{"/access/realm/pve Realm.AllocateUser", "/access/groups User.Modify"}},
		{"self never holds for a token", call("DELETE", "/access/users/{userid}/token/{tokenid}", "to delete", "userid", "ci@pve", "tokenid", "x"),
			[]string{"/access/groups User.Modify"}},
		{"require_param absent", call("POST", "/nodes/{node}/qemu/{vmid}/clone", "to clone", "node", "pve", "vmid", "9000", "newid", "100"),
			[]string{"/vms/9000 VM.Clone", "/vms/100 VM.Allocate"}},
		{"require_param present", call("POST", "/nodes/{node}/qemu/{vmid}/clone", "to clone", "node", "pve", "vmid", "9000", "newid", "100", "pool", "lab"),
			[]string{"/vms/9000 VM.Clone", "/vms/100 VM.Allocate | /pool/lab VM.Allocate"}},
		{"vmid known after apply", call("DELETE", "/nodes/{node}/qemu/{vmid}", "to delete", "node", "pve", "vmid", "${QemuVM/app.vmid}"),
			[]string{"/vms VM.Allocate"}},
		{"open to all: the handler's", call("GET", "/pools", "to list").with(need("/pool/x", "to see", "Pool.Audit")), []string{"/pool/x Pool.Audit"}},
		{"no rule: root only", call("POST", "/nodes/{node}/execute", "to run commands", "node", "pve"), []string{"root-only: run commands"}},
		{"unknown method: root only", call("POST", "/no/such/path", "to do it"), []string{"root-only: do it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, n := range callNeeds([]apiCall{tc.call}) {
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
	needs := callNeeds([]apiCall{
		call("POST", "/nodes/{node}/network", "to create the interface", "node", "pve"),
		call("PUT", "/nodes/{node}/network", "to commit", "node", "pve"),
	})
	if len(needs) != 1 || needs[0].why != "to create the interface" {
		t.Errorf("got %+v, want one need for both calls", needs)
	}
}

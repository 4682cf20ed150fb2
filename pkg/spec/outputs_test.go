package spec

import (
	"slices"
	"strings"
	"testing"
)

const outputsVM = `kind: QemuVM
name: app
spec: {memory: 512}
---
kind: Pool
name: dev
`

func TestOutputRefsLoad(t *testing.T) {
	set, diags := loadFiles(t, map[string]string{"a.yaml": outputsVM + `---
kind: ACL
name: app-ops
spec:
  path: /vms/${QemuVM/app.vmid}
  users: ops@pve
  roles: PVEVMUser
---
kind: ACL
name: dev-ops
spec: {path: "/pool/${Pool/dev.poolid}", users: ops@pve, roles: PVEAuditor}
`}, nil)
	if len(diags) > 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	byAddr := map[string]*Resource{}
	for _, r := range set.Resources {
		byAddr[r.Address()] = r
	}
	acl := byAddr["ACL/app-ops"]
	if got := acl.Params.Get("path"); got != "/vms/${QemuVM/app.vmid}" {
		t.Errorf("path = %q, want the reference kept for the planner", got)
	}
	if !slices.Contains(acl.DependsOn, Ref{Kind: KindQemuVM, Name: "app"}) {
		t.Errorf("ACL/app-ops depends on %v, want QemuVM/app (implicit)", acl.DependsOn)
	}
	if got := byAddr["ACL/dev-ops"].Params.Get("path"); got != "/pool/dev" {
		t.Errorf("identity output: path = %q, want /pool/dev put in at load", got)
	}
}

func TestOutputRefsBad(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown resource", "kind: ACL\nname: a\nspec:\n  path: /vms/${QemuVM/nope.vmid}\n  users: ops@pve\n  roles: PVEAuditor\n",
			`a.yaml:11: ACL/a.path: ${QemuVM/nope.vmid} names QemuVM/nope, which is not defined in the given files`},
		{"unknown output", "kind: ACL\nname: a\nspec:\n  path: /vms/${QemuVM/app.vmidd}\n  users: ops@pve\n  roles: PVEAuditor\n",
			`a.yaml:11: ACL/a.path: QemuVM/app has no output "vmidd" (it has: vmid, node, name)`},
		{"unknown kind", "kind: ACL\nname: a\nspec:\n  path: /vms/${QemuVMs/app.vmid}\n  users: ops@pve\n  roles: PVEAuditor\n",
			`a.yaml:11: ACL/a.path: ${QemuVMs/app.vmid} names kind "QemuVMs", which is not a resource kind`},
		{"form checked with a sample", "kind: ACL\nname: a\nspec:\n  path: /vms/${QemuVM/app.node}\n  users: ops@pve\n  roles: PVEAuditor\n",
			`a.yaml:11: ACL/a: spec.path "/vms/${QemuVM/app.node}" is not a path PVE accepts`},
		{"own key", "kind: QemuVM\nname: b\nspec:\n  memory: 512\n  ip: ${QemuVM/app.node}\n",
			`a.yaml:12: spec.ip: an output reference ${Kind/name.output} is taken in PVE parameters, not in pvectl's own keys`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadFiles(t, map[string]string{"a.yaml": outputsVM + "---\n" + tc.doc}, nil)
			found := false
			for _, d := range diags {
				found = found || strings.HasPrefix(d, tc.want)
			}
			if !found {
				t.Errorf("diagnostics %q\nwant one starting %q", diags, tc.want)
			}
		})
	}
}

func TestResolveOutputs(t *testing.T) {
	get := func(ref OutputRef) (string, bool) {
		if ref.Address() == "QemuVM/a" {
			return "105", true
		}
		return "", false
	}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"/vms/${QemuVM/a.vmid}", "/vms/105", true},
		{"${QemuVM/a.vmid},${QemuVM/b.vmid}", "105,${QemuVM/b.vmid}", false},
		{"plain ${HOME} $x", "plain ${HOME} $x", true},
		{"${QemuVM/a.vmid}", "105", true},
	} {
		got, ok := ResolveOutputs(tc.in, get)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ResolveOutputs(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

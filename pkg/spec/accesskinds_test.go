package spec

import (
	"strings"
	"testing"
)

// TestAccessKindsDiagnostics: what PVE would refuse of a role, group,
// realm, sync job, the cluster's options or a metric server is found
// offline, each at its file:line.
func TestAccessKindsDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown privilege", "kind: Role\nname: ops\nspec:\n  privs: [VM.Audit, VM.Powermgmt, Sys.Nothing]\n", []string{
			`a.yaml:4: Role/ops: privs: "VM.Powermgmt" is not a PVE privilege (PVE refuses it: "invalid privilege 'VM.Powermgmt'") — did you mean "VM.PowerMgmt"?`,
			`a.yaml:4: Role/ops: privs: "Sys.Nothing" is not a PVE privilege`,
		}},
		{"role in PVE's namespace", "kind: Role\nname: pveops\nspec: {privs: VM.Audit}\n", []string{
			`a.yaml:2: Role/pveops: role "pveops": PVE reserves role ids starting with PVE`,
		}},
		{"role privilege typo in a string", "kind: Role\nname: ops\nspec: {privs: \"VM.Audit,Datastore.Allocatespace\"}\n", []string{
			`did you mean "Datastore.AllocateSpace"?`,
		}},
		{"group id pattern", "kind: Group\nname: \"bad group\"\n", []string{`a.yaml:2:`}},
		{"group takes no users", "kind: Group\nname: ops\nspec: {users: [a@pve]}\n", []string{`a.yaml:3: unknown field "users" in Group spec`}},
		{"realm needs its type", "kind: Realm\nname: corp\nspec: {server1: 127.0.0.5}\n", []string{"a.yaml:1: Realm/corp: spec.type is required: ldap, ad or openid"}},
		{"built-in realm", "kind: Realm\nname: pam\nspec: {type: ldap, server1: 127.0.0.5, base_dn: dc=x, user_attr: uid}\n", []string{`a.yaml:2: Realm/pam: realm "pam" is built in`}},
		{"realm secret of another type", "kind: Realm\nname: sso\nspec: {type: openid, issuer-url: \"https://127.0.0.9\", client-id: pve, password: \"${PW}\"}\n", []string{
			"a.yaml:3: Realm/sso: password: a realm of type openid has no password",
		}},
		{"realm secretUpdate", "kind: Realm\nname: corp\nspec: {type: ldap, server1: 127.0.0.5, base_dn: dc=x, user_attr: uid, secretUpdate: allways}\n", []string{
			`a.yaml:3: Realm/corp: spec.secretUpdate "allways": want onCreate or always — did you mean "always"?`,
		}},
		{"realm check-connection is an action", "kind: Realm\nname: corp\nspec: {type: ldap, server1: 127.0.0.5, base_dn: dc=x, user_attr: uid, check-connection: 1}\n", []string{
			`a.yaml:3: unknown field "check-connection" in Realm spec`,
		}},
		{"sync job needs realm and scope", "kind: RealmSyncJob\nname: nightly\nspec: {schedule: daily}\n", []string{
			"a.yaml:1: RealmSyncJob/nightly: spec.realm is required",
			"a.yaml:1: RealmSyncJob/nightly: spec.scope is required",
		}},
		{"sync job scope enum", "kind: RealmSyncJob\nname: nightly\nspec: {schedule: daily, realm: corp, scope: everything}\n", []string{"a.yaml:3: spec.scope:"}},
		{"two cluster options", "kind: ClusterOptions\nname: a\nspec: {keyboard: de}\n---\nkind: ClusterOptions\nname: b\nspec: {keyboard: fr}\n", []string{
			"a.yaml:5: ClusterOptions/b has the same the cluster's options as ClusterOptions/a",
		}},
		{"cluster option out of its enum", "kind: ClusterOptions\nname: c\nspec: {keyboard: klingon}\n", []string{"a.yaml:3: spec.keyboard:"}},
		{"cluster option sub-key", "kind: ClusterOptions\nname: c\nspec:\n  migration: {type: fast}\n", []string{"a.yaml:4: spec.migration"}},
		{"cluster options take no delete", "kind: ClusterOptions\nname: c\nspec: {delete: keyboard}\n", []string{"a.yaml:3: spec.delete is not accepted: pvectl sends delete itself"}},
		{"metric server type", "kind: MetricServer\nname: influx\nspec: {type: prometheus, server: 127.0.0.7, port: 1}\n", []string{"a.yaml:3: spec.type:"}},
		{"metric server needs server and port", "kind: MetricServer\nname: influx\nspec: {type: influxdb}\n", []string{
			"a.yaml:1: MetricServer/influx: spec.port is required",
			"a.yaml:1: MetricServer/influx: spec.server is required",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(name string) (string, bool) { return "s3cret-value", name == "PW" }
			_, diags := loadFiles(t, map[string]string{"a.yaml": tt.yaml}, getenv, "a.yaml")
			if len(diags) != len(tt.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(tt.want), strings.Join(diags, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(diags[i], w) {
					t.Errorf("diagnostic %d: got %q, want it to contain %q", i, diags[i], w)
				}
			}
		})
	}
}

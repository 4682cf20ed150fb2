package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Issue 22 item 5: every new kind stays cheap. A no-op plan of n objects
// of a cluster-wide kind reads the kind's list once, whatever n; only a
// kind whose objects are scopes of their own (a security group's rules, a
// realm's full config, a guest's firewall) reads per object, and exactly
// the count given here (docs/performance.md, "Plan cost per kind").
var clusterKindCalls = []struct {
	kind      string
	doc       func(i int) string // object i, with what it needs
	shared    string             // documents every object needs once
	perObject int                // calls a no-op plan makes per object
}{
	{"Role", func(i int) string { return fmt.Sprintf("kind: Role\nname: role%d\nspec:\n  privs: VM.Audit\n", i) }, "", 0},
	{"Group", func(i int) string { return fmt.Sprintf("kind: Group\nname: grp%d\nspec:\n  comment: g\n", i) }, "", 0},
	{"Realm", func(i int) string {
		return fmt.Sprintf("kind: Realm\nname: ldap%d\nspec:\n  type: ldap\n  server1: 127.0.0.5\n  base_dn: dc=x\n  user_attr: uid\n", i)
	}, "", 1},
	{"RealmSyncJob", func(i int) string {
		return fmt.Sprintf("kind: RealmSyncJob\nname: sync%d\nspec:\n  realm: corp\n  schedule: daily\n  scope: both\n", i)
	}, "kind: Realm\nname: corp\nspec:\n  type: ldap\n  server1: 127.0.0.5\n  base_dn: dc=x\n  user_attr: uid\n", 0},
	{"MetricServer", func(i int) string {
		return fmt.Sprintf("kind: MetricServer\nname: metrics%d\nspec:\n  type: graphite\n  server: 127.0.0.7\n  port: %d\n", i, 2003+i)
	}, "", 1}, // its config: the list gives only id, type, server, port and disable (pve-manager API2/Cluster/MetricServer.pm)
	{"HAResource", func(i int) string {
		return fmt.Sprintf("kind: QemuVM\nname: ha%d\nspec:\n  vmid: %d\n  memory: 512\n---\nkind: HAResource\nname: ha%d\nspec:\n  guest: QemuVM/ha%d\n  state: stopped\n", i, 300+i, i, i)
	}, "", 1}, // the guest's own config read
	{"BackupJob", func(i int) string {
		return fmt.Sprintf("kind: BackupJob\nname: backup%d\nspec:\n  schedule: daily\n  all: true\n  storage: local\n", i)
	}, "", 0},
	{"SecurityGroup", func(i int) string {
		return fmt.Sprintf("kind: SecurityGroup\nname: sg%d\nspec:\n  rules:\n    - {type: in, action: ACCEPT, macro: SSH}\n", i)
	}, "", 1}, // the group's rules
	{"Firewall (guest)", func(i int) string {
		return fmt.Sprintf("kind: QemuVM\nname: fw%d\nspec:\n  vmid: %d\n  memory: 512\n---\nkind: Firewall\nname: fw%d\nspec:\n  scope: QemuVM/fw%d\n  options: {enable: 1}\n  rules:\n    - {type: in, action: ACCEPT, macro: SSH}\n",
			i, 400+i, i, i)
	}, "", 1 + 4}, // the guest's config; the firewall's options, rules, aliases and IP sets
	{"HardwareMapping", func(i int) string {
		return fmt.Sprintf("kind: HardwareMapping\nname: share%d\nspec:\n  type: dir\n  map: [\"node=pve,path=/srv/s%d\"]\n", i, i)
	}, "", 0}, // the type's list carries every setting
}

func TestNoOpPlanCallsPerClusterKind(t *testing.T) {
	for _, k := range clusterKindCalls {
		t.Run(k.kind, func(t *testing.T) {
			calls := map[int]int{}
			for _, n := range []int{2, 6} {
				s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
				cl := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
				docs := []string{}
				if k.shared != "" {
					docs = append(docs, k.shared)
				}
				for i := range n {
					docs = append(docs, k.doc(i))
				}
				set := loadSpec(t, strings.Join(docs, "---\n"))
				applyPlan(t, cl, planFor(t, cl, set, engine.Options{}))
				s.Requests.Reset()
				p := livePlan(t, cl, set, engine.Options{})
				if p.HasChanges() {
					t.Fatalf("n=%d: the second plan is not clean: %v", n, summary(p))
				}
				cc := countCalls(s.Requests.Reset())
				calls[n] = cc.other
				t.Logf("n=%d: %s", n, cc)
			}
			if per := (calls[6] - calls[2]) / 4; per != k.perObject || (calls[6]-calls[2])%4 != 0 {
				t.Errorf("a no-op plan makes %d calls for 2 objects and %d for 6: %.2f per object, want %d", calls[2], calls[6], float64(calls[6]-calls[2])/4, k.perObject)
			}
		})
	}
}

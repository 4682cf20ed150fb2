package planner

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// degradedSim is a two-node simulator with web (100) on pve and db (101)
// on pve2, then pve2 taken offline. expiry is how long pve2's guests keep
// their names in /cluster/resources.
func degradedSim(t *testing.T, expiry time.Duration) (*simClients, *simtest.Sim) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{
		Nodes: []string{"pve", "pve2"}, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1,
		StatusInterval: 5 * time.Millisecond, StatusExpiry: expiry,
	}})
	cl := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL}}
	ctx := context.Background()
	for _, g := range []struct{ node, id, name string }{{"pve", "100", "web"}, {"pve2", "101", "db"}} {
		if err := s.Client.CreateQemu(ctx, g.node, url.Values{"vmid": {g.id}, "name": {g.name}, "memory": {"512"}}); err != nil {
			t.Fatal(err)
		}
	}
	// pvestatd has seen both (their names are in the status data) …
	for range 1000 {
		rows, err := s.Client.ClusterResources(ctx, "vm")
		if err != nil {
			t.Fatal(err)
		}
		named := 0
		for _, r := range rows {
			if r.Name == "web" || r.Name == "db" {
				named++
			}
		}
		if named == 2 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	// … when pve2 goes down.
	if err := s.Server.SetNodeOffline("pve2", true); err != nil {
		t.Fatal(err)
	}
	return cl, s
}

const degradedSpec = `kind: QemuVM
name: web
spec:
  node: pve
  memory: 1024
---
kind: QemuVM
name: db
spec:
  memory: 1024
---
kind: QemuVM
name: cache
spec:
  node: pve2
  memory: 512
---
kind: QemuVM
name: new
spec:
  node: pve
  memory: 512
`

// TestSimDegradedOfflineNode: with pve2 offline, the plan updates web and
// creates new on pve, and lists db (on pve2) and cache (to be made on
// pve2) as not planned instead of refusing everything (before: the plan
// failed on the 595s) or creating db again. Apply applies the healthy part
// and makes nothing for pve2.
func TestSimDegradedOfflineNode(t *testing.T) {
	cl, s := degradedSim(t, time.Hour)
	set := loadSpec(t, degradedSpec)
	s.Requests.Reset()
	p, err := engine.PlanLive(context.Background(), cl, set, engine.Options{})
	// Nothing is asked of pve2: /cluster/resources says it is offline.
	if calls := s.Requests.Reset(); calls["GET /nodes/pve2/qemu"] != 0 {
		t.Errorf("the plan asked offline pve2 for its guests: %v", calls)
	}
	if err != nil {
		t.Fatalf("plan with pve2 offline: %v", err)
	}
	got := map[string]engine.Action{}
	for _, c := range p.Changes {
		got[c.Address] = c.Action
	}
	if got["QemuVM/web"] != engine.Update || got["QemuVM/new"] != engine.Create || len(got) != 2 {
		rows, _ := s.Client.ClusterResources(context.Background(), "")
		t.Errorf("planned %v, want web updated and new created, nothing else; resources %+v", got, rows)
	}
	want := []string{
		"QemuVM/cache: on node pve2, which is offline — not planned",
		"QemuVM/db: on node pve2, which is offline — not planned",
	}
	if len(p.NotPlanned) != len(want) {
		t.Fatalf("not planned: %v, want %v", p.NotPlanned, want)
	}
	for i, w := range want {
		if p.NotPlanned[i].String() != w {
			t.Errorf("not planned[%d]: %q, want %q", i, p.NotPlanned[i], w)
		}
	}
	applyPlan(t, cl, p)
	rows, err := s.Client.NodeGuests(context.Background(), pve.QEMU, "pve")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, r := range rows {
		names[r.Name]++
	}
	if names["new"] != 1 || names["db"] != 0 || names["cache"] != 0 {
		t.Errorf("guests on pve after apply: %v, want new once and neither db nor cache", names)
	}
}

// TestSimDegradedNamesExpired: once PVE has dropped the offline node's
// status data its guests have no names; a guest found by name that is not
// on a healthy node may be one of them, so it is not created.
func TestSimDegradedNamesExpired(t *testing.T) {
	cl, s := degradedSim(t, time.Millisecond)
	for range 1000 { // until /cluster/resources has forgotten db's name
		rows, _ := s.Client.ClusterResources(context.Background(), "vm")
		if !slices.ContainsFunc(rows, func(r pve.ClusterResource) bool { return r.Node == "pve2" && r.Name != "" }) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	set := loadSpec(t, `kind: QemuVM
name: db
spec:
  memory: 1024
---
kind: QemuVM
name: web
spec:
  memory: 512
`)
	p := livePlan(t, cl, set, engine.Options{})
	if len(p.NotPlanned) != 1 || !strings.Contains(p.NotPlanned[0].String(),
		"QemuVM/db: may be on node pve2, which is offline: PVE no longer has the names of the guests there") {
		t.Errorf("not planned: %v, want db named as possibly on pve2", p.NotPlanned)
	}
	if c := p.Change("QemuVM/db"); c != nil {
		t.Errorf("db planned as %v, want not planned", c.Action)
	}
}

// TestNotPlannedDependents: what depends on a resource that is not
// planned is not planned either.
func TestNotPlannedDependents(t *testing.T) {
	sel := map[string]bool{"a": true, "b": true, "c": true, "d": true}
	deps := map[string][]string{"b": {"a"}, "c": {"b"}}
	got := engine.NotPlannedOf(map[string]string{"a": "on node x, which is offline", "z": "not selected"}, sel, deps)
	want := []engine.NotPlanned{{Address: "a", Reason: "on node x, which is offline"}, {Address: "b", Reason: "depends on a, which is not planned"}, {Address: "c", Reason: "depends on b, which is not planned"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got[i], want[i])
		}
	}
	if !sel["d"] || sel["a"] || sel["b"] || sel["c"] {
		t.Errorf("selection left: %v, want only d", sel)
	}
}

// TestSimDegradedUnreachable: a node /cluster/resources still calls
// online but whose calls pveproxy cannot deliver (595, an empty body and
// the connect error as the reason, pve-http-server proxy_request) is down
// as well: its guests are unknown, the rest is planned.
func TestSimDegradedUnreachable(t *testing.T) {
	var cut atomic.Bool
	s := simtest.Start(t, simtest.Options{
		Sim: pvesim.Options{Nodes: []string{"pve", "pve2"}, TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1},
		Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/api2/json/nodes/pve2/") && cut.Load() {
					w.WriteHeader(595)
					return
				}
				next.ServeHTTP(w, r)
			})
		},
	})
	cl := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL}}
	for _, g := range []struct{ node, id, name string }{{"pve", "100", "web"}, {"pve2", "101", "db"}} {
		if err := s.Client.CreateQemu(context.Background(), g.node, url.Values{"vmid": {g.id}, "name": {g.name}, "memory": {"512"}}); err != nil {
			t.Fatal(err)
		}
	}
	cut.Store(true)
	set := loadSpec(t, "kind: QemuVM\nname: web\nspec:\n  memory: 1024\n---\nkind: QemuVM\nname: db\nspec:\n  vmid: 101\n  memory: 1024\n")
	p := livePlan(t, cl, set, engine.Options{})
	if c := p.Change("QemuVM/web"); c == nil || c.Action != engine.Update {
		t.Errorf("web: %+v, want an update", c)
	}
	if len(p.NotPlanned) != 1 || p.NotPlanned[0].Address != "QemuVM/db" || !strings.HasPrefix(p.NotPlanned[0].Reason, "on node pve2, which cannot be reached (595") {
		t.Errorf("not planned: %v, want db on pve2 that cannot be reached", p.NotPlanned)
	}
}

// TestSimDegradedCloneSource: a VM to clone from a template on an offline
// node cannot be made (the clone call goes to the template's node): it is
// not planned, instead of a create that fails with a 595 at apply.
func TestSimDegradedCloneSource(t *testing.T) {
	cl, s := degradedSim(t, time.Hour)
	if err := s.Server.SetNodeOffline("pve2", false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Client.CreateQemu(ctx, "pve2", url.Values{"vmid": {"9100"}, "name": {"tpl-far"}, "memory": {"512"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.RunTask(ctx, http.MethodPost, "/nodes/pve2/qemu/9100/template", nil); err != nil {
		t.Fatal(err)
	}
	for range 1000 { // until pvestatd has seen the template
		rows, _ := s.Client.ClusterResources(ctx, "vm")
		if slices.ContainsFunc(rows, func(r pve.ClusterResource) bool { return r.VMID == 9100 && r.Template }) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := s.Server.SetNodeOffline("pve2", true); err != nil {
		t.Fatal(err)
	}
	set := loadSpec(t, "kind: QemuVM\nname: clone1\nspec:\n  vmid: 150\n  image: \"9100\"\n  memory: 512\n")
	p := livePlan(t, cl, set, engine.Options{})
	if len(p.NotPlanned) != 1 || p.NotPlanned[0].String() != "QemuVM/clone1: would be cloned from VM 9100 on node pve2, which is offline — not planned" {
		t.Errorf("not planned: %v", p.NotPlanned)
	}
}

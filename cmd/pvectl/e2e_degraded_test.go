package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// Trust under a partial view (issue 17, items 3 and 4): what the token
// cannot see, or what sits on a node that is down, is never taken for
// absent.

// startSimNodes is startSim with nodes of the test's own, returning the
// simulator too (to take a node offline).
func startSimNodes(t *testing.T, opts pvesim.Options) (*simEnv, *simtest.Sim) {
	t.Helper()
	opts.TokenID, opts.TokenSecret, opts.TaskDuration, opts.Seed = e2eTokenID, e2eTokenSecret, 30*time.Millisecond, 1
	s := simtest.Start(t, simtest.Options{
		Sim:           opts,
		Conformance:   true,
		ClientOptions: []pve.Option{pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond)},
	})
	return &simEnv{t: t, url: s.URL, requests: s.Requests, client: s.Client}, s
}

func makeVM(t *testing.T, cl *pve.Client, node, vmid, name string) {
	t.Helper()
	if err := cl.CreateQemu(context.Background(), node, url.Values{"vmid": {vmid}, "name": {name}, "memory": {"512"}}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// guestsNamed counts the VMs named name on node, from the node's own list
// (current, unlike /cluster/resources' names).
func guestsNamed(t *testing.T, cl *pve.Client, node, name string) int {
	t.Helper()
	rows, err := cl.NodeGuests(context.Background(), pve.QEMU, node)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if r.Name == name {
			n++
		}
	}
	return n
}

// TestE2EHiddenGuestRefused: a privilege-separated token with PVEVMAdmin
// on /vms and NoAccess on /vms/101 cannot see db (101). A spec that finds
// db by name must not create a second one: plan and apply refuse, naming
// /vms/101 and the grant that fixes it, and nothing is created. (Before,
// the plan said "create" and apply made a second db, exit 0.)
func TestE2EHiddenGuestRefused(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	makeVM(t, e.client, "pve", "100", "web")
	makeVM(t, e.client, "pve", "101", "db")
	tok := e.privsepToken(t, "ci@pve", "plan", grant{"/vms", "PVEVMAdmin"}, grant{"/pool", "PVEPoolAdmin"})
	e.adminDo(http.MethodPut, "/access/acl", url.Values{"path": {"/vms/101"}, "roles": {"NoAccess"}, "tokens": {tok.Full}}, nil)
	e.extraEnv = tok.env()

	// PVE's own listing does not show /vms/101 (a path where nothing is
	// held is left out): the refusal must come from elsewhere.
	var perms map[string]any
	tc, err := pve.NewClient(e.url, pve.WithToken(tok.Full, tok.Value))
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.Do(ctx, http.MethodGet, "/access/permissions", nil, &perms); err != nil {
		t.Fatal(err)
	}
	if _, listed := perms["/vms/101"]; listed {
		t.Fatalf("the token's permission listing shows /vms/101: %v", perms)
	}

	f := writeSpec(t, "db.yaml", "kind: QemuVM\nname: db\nspec:\n  memory: 1024\n")
	for _, args := range [][]string{{"plan", "-f", f}, {"apply", "-f", f, "--auto-approve"}} {
		r := e.mustRun(1, args...)
		containsAll(t, args[0]+" stderr", r.stderr,
			`QemuVM/db: refusing to create the VM "db"`, "cannot see /vms/101",
			"pveum acl delete /vms/101 --roles NoAccess --tokens 'ci@pve!plan'",
		)
		if strings.Contains(r.stdout+r.stderr, tok.Value) {
			t.Errorf("%s printed the token's secret", args[0])
		}
	}
	if n := guestsNamed(t, e.client, "pve", "db"); n != 1 {
		t.Errorf("%d VMs named db, want 1: nothing created", n)
	}
}

const degradedE2ESpec = `kind: QemuVM
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
name: app
spec:
  node: pve
  memory: 512
`

// TestE2EOfflineNode: a two-node cluster whose pve2 is offline. plan
// covers pve (web updated, app created), names db (on pve2) and cache
// (for pve2) as not planned and succeeds (exit 2 with
// --detailed-exitcode); apply applies the pve part, creates nothing on or
// for pve2 and exits 1 naming what it did not plan. (Before, the plan
// failed as a whole on pve2's 595s.)
func TestE2EOfflineNode(t *testing.T) {
	e, s := startSimNodes(t, pvesim.Options{Nodes: []string{"pve", "pve2"}, StatusInterval: 5 * time.Millisecond})
	makeVM(t, e.client, "pve", "100", "web")
	makeVM(t, e.client, "pve2", "101", "db")
	waitNamed(t, e.client, "db")
	if err := s.Server.SetNodeOffline("pve2", true); err != nil {
		t.Fatal(err)
	}
	f := writeSpec(t, "two-nodes.yaml", degradedE2ESpec)
	notPlanned := []string{
		"QemuVM/cache: on node pve2, which is offline — not planned",
		"QemuVM/db: on node pve2, which is offline — not planned",
	}

	r := e.mustRun(0, "plan", "-f", f)
	containsAll(t, "plan stdout", r.stdout, append([]string{"+ QemuVM/app", "~ QemuVM/web"}, notPlanned...)...)
	e.mustRun(2, "plan", "-f", f, "--detailed-exitcode")
	var pj struct {
		Changes []struct {
			Address, Action string
		}
		NotPlanned []struct{ Address, Reason string } `json:"not_planned"`
	}
	if err := json.Unmarshal([]byte(e.mustRun(0, "plan", "-f", f, "--json").stdout), &pj); err != nil {
		t.Fatal(err)
	}
	if len(pj.NotPlanned) != 2 || pj.NotPlanned[1].Address != "QemuVM/db" || pj.NotPlanned[1].Reason != "on node pve2, which is offline" {
		t.Errorf("plan --json not_planned: %+v", pj.NotPlanned)
	}
	for _, c := range pj.Changes {
		if c.Address == "QemuVM/db" || c.Address == "QemuVM/cache" {
			t.Errorf("plan --json has a change for %s (%s)", c.Address, c.Action)
		}
	}

	// A saved plan keeps its list: applying it applies the pve part and
	// fails naming the rest.
	saved := filepath.Join(t.TempDir(), "plan.out")
	e.mustRun(0, "plan", "-f", f, "--out", saved)
	r = e.mustRun(1, "apply", saved)
	containsAll(t, "apply stderr", r.stderr, append([]string{"apply covered only what could be seen; 2 not planned"}, notPlanned...)...)
	if guestsNamed(t, e.client, "pve", "app") != 1 || guestsNamed(t, e.client, "pve", "db") != 0 || guestsNamed(t, e.client, "pve", "cache") != 0 {
		t.Errorf("after apply: want app once on pve and neither db nor cache made there")
	}
	if !strings.Contains(r.stdout, "2 not planned") || !strings.Contains(r.stdout, "not planned (their node is down") {
		t.Errorf("apply's summary does not list what it did not plan:\n%s", r.stdout)
	}
	// The healthy part is done: a run from the specs changes nothing and
	// still says what it cannot see.
	r = e.mustRun(1, "apply", "-f", f, "--auto-approve")
	if !strings.Contains(r.stdout, "No changes to what can be seen now.") {
		t.Errorf("second apply stdout:\n%s", r.stdout)
	}
	// --json: the summary event names them too (apply-events.schema.json).
	r = e.mustRun(1, "apply", "-f", f, "--auto-approve", "--json")
	validateLines(t, eventSchema(t), r.stdout)
	if last := lastJSONLine(t, r.stdout); last["outcome"] != "incomplete" || len(last["not_planned"].([]any)) != 2 {
		t.Errorf("apply --json summary: %v, want outcome incomplete and 2 not planned", last)
	}

	// pve2 back: db is found where it was, cache is made there.
	if err := s.Server.SetNodeOffline("pve2", false); err != nil {
		t.Fatal(err)
	}
	e.mustRun(0, "apply", "-f", f, "--auto-approve")
	if guestsNamed(t, e.client, "pve2", "db") != 1 || guestsNamed(t, e.client, "pve2", "cache") != 1 {
		t.Error("with pve2 back: want db once and cache made on pve2")
	}
	e.mustRun(0, "plan", "-f", f, "--detailed-exitcode")
}

// waitNamed waits until /cluster/resources names the VM name (its status
// data came): an offline node's guests keep the names they had then.
func waitNamed(t *testing.T, cl *pve.Client, name string) {
	t.Helper()
	for range 1000 {
		rows, err := cl.ClusterResources(context.Background(), "vm")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Name == name {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("/cluster/resources never named %s", name)
}

// `pvectl sim --offline-node pve2` serves pve2 as down: /nodes shows it
// offline and a guest to make there is not planned.
func TestE2ESimOfflineNodeFlag(t *testing.T) {
	u, _ := simProcess(t, "--nodes", "pve,pve2", "--offline-node", "pve2")
	env := &simEnv{t: t, url: u}
	cl, err := pve.NewClient(u, pve.WithToken(e2eTokenID, e2eTokenSecret))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []map[string]any
	if err := cl.Do(context.Background(), http.MethodGet, "/nodes", nil, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n["node"] == "pve2" && n["status"] != "offline" {
			t.Errorf("GET /nodes: %v, want pve2 offline", n)
		}
	}
	f := writeSpec(t, "far.yaml", "kind: QemuVM\nname: far\nspec:\n  node: pve2\n  memory: 512\n")
	r := env.mustRun(0, "plan", "-f", f)
	if !strings.Contains(r.stdout, "QemuVM/far: on node pve2, which is offline — not planned") {
		t.Errorf("plan stdout:\n%s", r.stdout)
	}
	r = env.run("sim", "--listen", "127.0.0.1:0", "--nodes", "pve,pve2", "--offline-node", "pve")
	if r.code != 3 || !strings.Contains(r.stderr, "--offline-node") {
		t.Errorf("sim --offline-node of the first node: exit %d, stderr %s; want 3 naming the flag", r.code, r.stderr)
	}
}

package planner

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pvectl/pvectl/pkg/spec"
)

// checkTraits reports, through missing, what in kind name's declared
// traits does not fit together or with the registry: a scope that is not
// one of the three, a vmid claim without its pinned vmid, staging that
// names no committing kind of the registry (or one that commits another
// scope), a commit that nothing stages or that has no planCommit.
func checkTraits(name string, k engine.KindOps, missing func(string)) {
	t := k.Traits()
	switch t.Scope {
	case engine.ScopeCluster, engine.ScopeNode, engine.ScopeGuest:
	default:
		missing("traits: scope " + quote(string(t.Scope)) + " is not cluster, node or guest")
	}
	if t.ClaimsVMID != (t.PinnedVMID != nil) {
		missing("traits: ClaimsVMID and PinnedVMID go together")
	}
	if t.ClaimsVMID && t.Scope != engine.ScopeGuest {
		missing("traits: a kind that claims vmids has scope guest")
	}
	if t.Stages != "" && t.Commits != "" {
		missing("traits: a kind either stages or commits, not both")
	}
	for _, decl := range []string{t.Stages, t.Commits} {
		if decl != "" && decl != string(engine.ScopeNode) && !strings.HasPrefix(decl, "cluster/") {
			missing("traits: staging scope " + quote(decl) + " is neither node nor cluster/<name>")
		}
	}
	checkStager(t, missing)
	checkCommitter(name, k, missing)
	for _, m := range oldMarkers {
		if m.has(k) && !m.declared(t) {
			missing("has the old marker method " + m.method + ": declare it in traits() as " + m.trait + " (the engine reads only the traits)")
		}
	}
}

// oldMarkers are the marker methods the kind contract had before traits,
// each with the trait that replaced it. A kind written against the old
// contract that still has one must declare the trait, or the engine would
// silently stop seeing what the method said (a singleton created, a
// template updated in place).
var oldMarkers = []struct {
	method, trait string
	has           func(engine.KindOps) bool
	declared      func(engine.KindTraits) bool
}{
	{"singleton()", "Singleton",
		func(k engine.KindOps) bool { _, ok := k.(interface{ singleton() }); return ok },
		func(t engine.KindTraits) bool { return t.Singleton }},
	{"nodeStaged(lo)", "Stages/CommittedBy/StagedAlready",
		func(k engine.KindOps) bool { _, ok := k.(interface{ nodeStaged(*engine.LiveObj) bool }); return ok },
		func(t engine.KindTraits) bool { return t.Stages != "" }},
	{"pinnedVMID(r)", "ClaimsVMID/PinnedVMID",
		func(k engine.KindOps) bool { _, ok := k.(interface{ pinnedVMID(*spec.Resource) int }); return ok },
		func(t engine.KindTraits) bool { return t.ClaimsVMID }},
	{"createsFirst(r)", "CreatesFirst",
		func(k engine.KindOps) bool { _, ok := k.(interface{ createsFirst(*spec.Resource) bool }); return ok },
		func(t engine.KindTraits) bool { return t.CreatesFirst != nil }},
	{"busy(r, lo)", "Busy",
		func(k engine.KindOps) bool {
			_, ok := k.(interface {
				busy(*spec.Resource, *engine.LiveObj) *engine.BusyError
			})
			return ok
		},
		func(t engine.KindTraits) bool { return t.Busy != nil }},
	{"rebuilt()", "Rebuilt",
		func(k engine.KindOps) bool { _, ok := k.(interface{ rebuilt() string }); return ok },
		func(t engine.KindTraits) bool { return t.Rebuilt != "" }},
	{"objectName(c)", "Noun/Name",
		func(k engine.KindOps) bool { _, ok := k.(interface{ objectName(*engine.Change) string }); return ok },
		func(t engine.KindTraits) bool { return t.Name != nil }},
}

// checkStager: a kind that stages names the kind that commits its scope.
func checkStager(t engine.KindTraits, missing func(string)) {
	if t.Stages == "" {
		if t.CommittedBy != "" || t.StagedWhat != "" || t.StagedAlready != nil {
			missing("traits: CommittedBy, StagedWhat and StagedAlready need Stages")
		}
		return
	}
	if t.StagedWhat == "" || t.StagedAlready == nil {
		missing("traits: a kind that stages says what (StagedWhat) and whether its scope has staged changes already (StagedAlready)")
	}
	committing, ok := engine.Kinds[t.CommittedBy]
	switch {
	case !ok:
		missing("traits: stages in " + quote(t.Stages) + " but its committing kind " + quote(t.CommittedBy) + " is not in the registry")
	case committing.Traits().Commits != t.Stages:
		missing("traits: stages in " + quote(t.Stages) + " but " + t.CommittedBy + " commits " + quote(committing.Traits().Commits))
	}
}

// checkCommitter: a kind that commits plans its commit (committer), and
// some kind stages what it commits.
func checkCommitter(name string, k engine.KindOps, missing func(string)) {
	_, door := k.(engine.Committer)
	commits := k.Traits().Commits != ""
	if door != commits {
		missing("traits: Commits is declared exactly when the kind has planCommit and foreign (committer)")
	}
	if !commits {
		return
	}
	for _, o := range engine.Kinds {
		if o.Traits().CommittedBy == name {
			return
		}
	}
	missing("traits: commits " + quote(k.Traits().Commits) + " but no kind of the registry stages there for it")
}

func quote(s string) string { return "\"" + s + "\"" }

// TestStagingScope: a declaration names a node's own scope or one of the
// cluster; stager and committer meet by scope, connection and committing
// kind, and the reasons read as the node's network did before scopes.
func TestStagingScope(t *testing.T) {
	for _, tc := range []struct{ decl, node, want string }{
		{"node", "pve1", "node/pve1"},
		{"node", "pve2", "node/pve2"},
		{"cluster/sdn", "pve1", "cluster/sdn"},
		{"cluster/sdn", "", "cluster/sdn"},
	} {
		if got := engine.StagingScope(tc.decl, tc.node); got != tc.want {
			t.Errorf("stagingScope(%q, %q) = %q, want %q", tc.decl, tc.node, got, tc.want)
		}
	}
	iface := engine.TraitsOf(spec.KindLinuxBridge)
	for _, tc := range []struct {
		name           string
		t              engine.KindTraits
		scope          string
		changes, stage bool
		want           string
	}{
		{"change on a node", iface, "node/pve1", true, false,
			"the change will stay staged: no NetworkApply in these specs commits node pve1's network (add `kind: NetworkApply` for node pve1)"},
		{"staged on a node", iface, "node/pve1", false, true,
			"node pve1 has staged network changes that no NetworkApply in these specs commits (add `kind: NetworkApply` for node pve1)"},
		{"nothing", iface, "node/pve1", false, false, ""},
		{"cluster scope", engine.KindTraits{Stages: "cluster/sdn", StagedWhat: "SDN", CommittedBy: "SdnApply"}, "cluster/sdn", true, false,
			"the change will stay staged: no SdnApply in these specs commits the cluster's SDN (add `kind: SdnApply`)"},
	} {
		if got := engine.UncommittedReason(tc.t, tc.scope, tc.changes, tc.stage); got != tc.want {
			t.Errorf("%s: got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	stage, k1 := engine.StagingKey(spec.KindBondInterface, "c", "pve1")
	commit, k2 := engine.StagingKey(spec.KindNetworkApply, "c", "pve1")
	_, other := engine.StagingKey(spec.KindNetworkApply, "c", "pve2")
	_, otherConn := engine.StagingKey(spec.KindNetworkApply, "d", "pve1")
	if stage != engine.NetStage || commit != engine.NetCommit || k1 != k2 || k1 == other || k1 == otherConn {
		t.Errorf("stagingKey: bond %v %q, commit %v %q, other node %q, other connection %q", stage, k1, commit, k2, other, otherConn)
	}
	if role, key := engine.StagingKey(spec.KindPool, "c", ""); role != engine.NetNone || key != "" {
		t.Errorf("stagingKey(Pool) = %v %q, want none", role, key)
	}
}

// fakeKind is a kind that has declared traits only, for the graph tests:
// nothing calls its other methods.
type fakeKind struct {
	engine.KindOps
	t engine.KindTraits
}

func (f fakeKind) Traits() engine.KindTraits { return f.t }

// TestClusterStagingScope: a kind that stages in one scope of the whole
// cluster, and the kind that commits it, plug in without an engine change:
// the graph pairs them by scope string whatever the nodes of their
// objects. A zone's user waits for the commit, a targeted zone brings the
// commit along (and not the other zones), and a destroy commits after the
// zones went, which go after their users.
func TestClusterStagingScope(t *testing.T) {
	engine.Kinds["FakeZone"] = fakeKind{t: engine.KindTraits{Scope: engine.ScopeCluster, Stages: "cluster/sdn", StagedWhat: "SDN",
		CommittedBy: "FakeSdnApply", StagedAlready: func(*engine.LiveObj) bool { return false }}}
	engine.Kinds["FakeSdnApply"] = fakeKind{t: engine.KindTraits{Scope: engine.ScopeCluster, Singleton: true, Commits: "cluster/sdn"}}
	t.Cleanup(func() { delete(engine.Kinds, "FakeZone"); delete(engine.Kinds, "FakeSdnApply") })
	b := &engine.Builder{Changes: map[string]*engine.Change{}}
	for _, c := range []struct{ kind, name, node string }{
		{"FakeZone", "z1", "pve1"}, {"FakeZone", "z2", "pve2"}, {"FakeSdnApply", "sdn", ""}, {spec.KindQemuVM, "vm", "pve1"},
	} {
		r := &spec.Resource{Kind: c.kind, Name: c.name, Connection: "c"}
		b.Changes[r.Address()] = &engine.Change{Address: r.Address(), Resource: r, Node: c.node, Action: engine.Create}
	}
	fwd := func() map[string][]string {
		return map[string][]string{"FakeZone/z1": nil, "FakeZone/z2": nil,
			"FakeSdnApply/sdn": {"FakeZone/z1", "FakeZone/z2"}, "QemuVM/vm": {"FakeZone/z1"}}
	}

	deps := fwd()
	b.WaitForCommits(deps)
	if want := []string{"FakeSdnApply/sdn", "FakeZone/z1"}; !slices.Equal(deps["QemuVM/vm"], want) {
		t.Errorf("waitForCommits: the zone's user waits for %v, want %v", deps["QemuVM/vm"], want)
	}

	b.Opts.Targets = []string{"FakeZone/z2"}
	sel, err := b.SelectTargets(fwd())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(sel)), []string{"FakeSdnApply/sdn", "FakeZone/z2"}; !slices.Equal(got, want) {
		t.Errorf("selectTargets(FakeZone/z2) = %v, want %v", got, want)
	}

	rev := engine.ReverseDeps(fwd(), b.NetKey)
	want := map[string][]string{"FakeZone/z1": {"QemuVM/vm"}, "FakeZone/z2": {},
		"FakeSdnApply/sdn": {"FakeZone/z1", "FakeZone/z2"}, "QemuVM/vm": {}}
	if diff := cmp.Diff(want, rev, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("reverseDeps: (-want +got):\n%s", diff)
	}
}

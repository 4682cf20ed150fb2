package planner

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/spec"
)

// checkTraits reports, through missing, what in kind name's declared
// traits does not fit together or with the registry: a scope that is not
// one of the three, a vmid claim without its pinned vmid, staging that
// names no committing kind of the registry (or one that commits another
// scope), a commit that nothing stages or that has no planCommit.
func checkTraits(name string, k kindOps, missing func(string)) {
	t := k.traits()
	switch t.Scope {
	case scopeCluster, scopeNode, scopeGuest:
	default:
		missing("traits: scope " + quote(string(t.Scope)) + " is not cluster, node or guest")
	}
	if t.ClaimsVMID != (t.PinnedVMID != nil) {
		missing("traits: ClaimsVMID and PinnedVMID go together")
	}
	if t.ClaimsVMID && t.Scope != scopeGuest {
		missing("traits: a kind that claims vmids has scope guest")
	}
	if t.Stages != "" && t.Commits != "" {
		missing("traits: a kind either stages or commits, not both")
	}
	for _, decl := range []string{t.Stages, t.Commits} {
		if decl != "" && decl != string(scopeNode) && !strings.HasPrefix(decl, "cluster/") {
			missing("traits: staging scope " + quote(decl) + " is neither node nor cluster/<name>")
		}
	}
	checkStager(t, missing)
	checkCommitter(name, k, missing)
}

// checkStager: a kind that stages names the kind that commits its scope.
func checkStager(t kindTraits, missing func(string)) {
	if t.Stages == "" {
		if t.CommittedBy != "" || t.StagedWhat != "" || t.StagedAlready != nil {
			missing("traits: CommittedBy, StagedWhat and StagedAlready need Stages")
		}
		return
	}
	if t.StagedWhat == "" || t.StagedAlready == nil {
		missing("traits: a kind that stages says what (StagedWhat) and whether its scope has staged changes already (StagedAlready)")
	}
	committing, ok := kinds[t.CommittedBy]
	switch {
	case !ok:
		missing("traits: stages in " + quote(t.Stages) + " but its committing kind " + quote(t.CommittedBy) + " is not in the registry")
	case committing.traits().Commits != t.Stages:
		missing("traits: stages in " + quote(t.Stages) + " but " + t.CommittedBy + " commits " + quote(committing.traits().Commits))
	}
}

// checkCommitter: a kind that commits plans its commit (committer), and
// some kind stages what it commits.
func checkCommitter(name string, k kindOps, missing func(string)) {
	_, door := k.(committer)
	commits := k.traits().Commits != ""
	if door != commits {
		missing("traits: Commits is declared exactly when the kind has planCommit and foreign (committer)")
	}
	if !commits {
		return
	}
	for _, o := range kinds {
		if o.traits().CommittedBy == name {
			return
		}
	}
	missing("traits: commits " + quote(k.traits().Commits) + " but no kind of the registry stages there for it")
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
		if got := stagingScope(tc.decl, tc.node); got != tc.want {
			t.Errorf("stagingScope(%q, %q) = %q, want %q", tc.decl, tc.node, got, tc.want)
		}
	}
	iface := traitsOf(spec.KindLinuxBridge)
	for _, tc := range []struct {
		name           string
		t              kindTraits
		scope          string
		changes, stage bool
		want           string
	}{
		{"change on a node", iface, "node/pve1", true, false,
			"the change will stay staged: no NetworkApply in these specs commits node pve1's network (add `kind: NetworkApply` for node pve1)"},
		{"staged on a node", iface, "node/pve1", false, true,
			"node pve1 has staged network changes that no NetworkApply in these specs commits (add `kind: NetworkApply` for node pve1)"},
		{"nothing", iface, "node/pve1", false, false, ""},
		{"cluster scope", kindTraits{Stages: "cluster/sdn", StagedWhat: "SDN", CommittedBy: "SdnApply"}, "cluster/sdn", true, false,
			"the change will stay staged: no SdnApply in these specs commits the cluster's SDN (add `kind: SdnApply`)"},
	} {
		if got := uncommittedReason(tc.t, tc.scope, tc.changes, tc.stage); got != tc.want {
			t.Errorf("%s: got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	stage, k1 := stagingKey(spec.KindBondInterface, "c", "pve1")
	commit, k2 := stagingKey(spec.KindNetworkApply, "c", "pve1")
	_, other := stagingKey(spec.KindNetworkApply, "c", "pve2")
	_, otherConn := stagingKey(spec.KindNetworkApply, "d", "pve1")
	if stage != netStage || commit != netCommit || k1 != k2 || k1 == other || k1 == otherConn {
		t.Errorf("stagingKey: bond %v %q, commit %v %q, other node %q, other connection %q", stage, k1, commit, k2, other, otherConn)
	}
	if role, key := stagingKey(spec.KindPool, "c", ""); role != netNone || key != "" {
		t.Errorf("stagingKey(Pool) = %v %q, want none", role, key)
	}
}

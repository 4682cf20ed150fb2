package engine

import (
	"fmt"
	"strings"
)

// Staging: some changes do not go live when their call returns. PVE
// writes a node's interface changes to interfaces.new, and only a commit
// (a reload) makes them live; SDN stages the cluster's zones and vnets the
// same way. A kind declares the staging scope its changes wait in
// (KindTraits.Stages, with the kind that commits it) or the one it commits
// (KindTraits.Commits); the engine pairs the two by scope string and never
// by node, so a cluster-wide scope needs no engine change.

// scopeNodePrefix starts the staging scope of one node ("node/pve").
const scopeNodePrefix = "node/"

// StagingScope is the staging scope a declaration names for an object on
// node: "node" is the node's own ("node/pve"), any other value is one
// scope of the cluster ("cluster/sdn") whatever the node.
func StagingScope(decl, node string) string {
	if decl == string(ScopeNode) {
		return scopeNodePrefix + node
	}
	return decl
}

// StagingKey says whether a resource of kind on conn, whose object is on
// node, stages changes or commits them, and the key of its staging scope
// on that connection: a stager and a committer with the same key belong
// together (the committing kind is part of the key).
func StagingKey(kind, conn, node string) (NetRole, string) {
	t := TraitsOf(kind)
	switch {
	case t.Stages != "":
		return NetStage, conn + "\x00" + t.CommittedBy + "\x00" + StagingScope(t.Stages, node)
	case t.Commits != "":
		return NetCommit, conn + "\x00" + kind + "\x00" + StagingScope(t.Commits, node)
	}
	return NetNone, ""
}

// scopeOwner names what a staging scope belongs to in messages: "node
// pve", "the cluster".
func scopeOwner(scope string) string {
	if node, ok := strings.CutPrefix(scope, scopeNodePrefix); ok {
		return "node " + node
	}
	return "the cluster"
}

// UncommittedReason is the reason a change, or an object whose scope has
// staged changes already, gets when nothing in the specs commits the
// scope ("" when neither): PVE only stages such changes, and without a
// commit they would wait while the plan looks done.
func UncommittedReason(t KindTraits, scope string, changes, staged bool) string {
	owner := scopeOwner(scope)
	where := ""
	if node, ok := strings.CutPrefix(scope, scopeNodePrefix); ok {
		where = " for node " + node
	}
	hint := fmt.Sprintf("(add `kind: %s`%s)", t.CommittedBy, where)
	switch {
	case changes:
		return fmt.Sprintf("the change will stay staged: no %s in these specs commits %s's %s %s", t.CommittedBy, owner, t.StagedWhat, hint)
	case staged:
		return fmt.Sprintf("%s has staged %s changes that no %s in these specs commits %s", owner, t.StagedWhat, t.CommittedBy, hint)
	}
	return ""
}

// stagedAlready says whether lo's staging scope holds uncommitted changes
// already (false for a kind that stages nothing).
func (t KindTraits) stagedAlready(lo *LiveObj) bool {
	return t.StagedAlready != nil && t.StagedAlready(lo)
}

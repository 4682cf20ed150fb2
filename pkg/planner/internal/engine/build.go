package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/pvectl/pvectl/internal/dag"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// builder holds what planning one Set needs.
type Builder struct {
	Set     *spec.Set
	Obs     *Observed
	Opts    Options
	Table   *schema.Table
	Changes map[string]*Change // planned so far, by address
	Failed  map[string]error   // resources that could not be planned (placeholders in changes)
	unseen  map[string]string  // by address: why its live state cannot be known
	// What the later steps of build make: the orphans listed or pruned,
	// the dependency graph, the selection, what is not planned, and the
	// order of the selected changes.
	orphans []Orphan
	deps    map[string][]string
	sel     map[string]bool
	skipped []NotPlanned
	order   []string
	// keyProblems is, per SSH key setting, why it cannot be used here
	// ("" when it can): noteMissingKey looks once per key.
	KeyProblems map[string]string
	// warnings are, per address, the privileges a review plan's token
	// lacks for the change (Options.ReviewPrivileges).
	warnings map[string][]PrivilegeWarning
	// byAddr indexes the set's resources by connection and address
	// (resourceAt), built on first use.
	byAddr map[[2]string]*spec.Resource
}

// Method finds a create method's schema facts; nil when the table lacks it.
func (b *Builder) Method(httpMethod, template string) *schema.Method {
	if b.Table == nil {
		return nil
	}
	m, ok := b.Table.Lookup(httpMethod, template)
	if !ok {
		return nil
	}
	return m
}

// buildPlan compares desired with observed and returns the Plan, in steps
// over one builder: each resource's change (or why it has none), the
// owned objects no document names and the snapshots before risky
// changes, the dependency graph, the selection, and the ordered plan.
func buildPlan(ctx context.Context, set *spec.Set, obs *Observed, opts Options) (*Plan, error) {
	if set == nil || obs == nil {
		return nil, errors.New("build plan: nil set or observed state")
	}
	table := opts.Schema
	if table == nil {
		table = schema.Default()
	}
	b := &Builder{Set: set, Obs: obs, Opts: opts, Table: table, Changes: map[string]*Change{},
		Failed: map[string]error{}, unseen: map[string]string{}}
	steps := []func(context.Context) error{
		b.planResources,
		b.planExtras,
		b.linkGraph,
		b.selectChanges,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return b.assemble(), nil
}

// planResources plans every resource of the set, in address order. A
// resource that cannot be planned gets a placeholder change, so that the
// graph still knows it; its error counts only if it is selected (a
// --target elsewhere is not blocked by it). Network commits are decided
// last: they look at the interface changes.
func (b *Builder) planResources(ctx context.Context) error {
	resources := append([]*spec.Resource(nil), b.Set.Resources...)
	sort.Slice(resources, func(i, j int) bool { return resources[i].Address() < resources[j].Address() })
	for _, late := range []bool{false, true} {
		for _, r := range resources {
			if err := ctx.Err(); err != nil {
				return err
			}
			k, kerr := KindOf(r.Kind)
			if (kerr == nil && k.Traits().Commits != "") != late {
				continue
			}
			b.planResource(r, k, kerr)
		}
	}
	return nil
}

// planResource plans r's change into b.changes, or its placeholder.
func (b *Builder) planResource(r *spec.Resource, k KindOps, kerr error) {
	obs := b.Obs
	if err := obs.Errs[r.Address()]; err != nil {
		b.fail(r, nil, err)
		return
	}
	if why, ok := obs.unknown[r.Address()]; ok {
		// A placeholder keeps the graph whole; notPlanned takes it and
		// its dependents out of the selection.
		b.fail(r, nil, nil)
		delete(b.Failed, r.Address())
		b.unseen[r.Address()] = why
		return
	}
	if kerr != nil {
		b.fail(r, nil, fmt.Errorf("%s: %w", r.Address(), kerr))
		return
	}
	lo := obs.Objs[r.Address()]
	if lo == nil {
		b.fail(r, nil, fmt.Errorf("%s: live state was not observed", r.Address()))
		return
	}
	c, err := b.planChange(k, r, lo)
	if err != nil {
		b.fail(r, lo, err)
		return
	}
	c.Address, c.Resource = r.Address(), r
	b.markCreated(k, c)
	MaskDeclared(c) // keys the document declares secret (secretKeys)
	// The token must hold what the change's calls check; a review plan
	// carries what it lacks as warnings.
	if needs, ok := changeNeeds(k, c, lo); ok {
		needs = rewriteNeeds(b.Set, obs.Conns[r.Connection], r.Connection, needs)
		if err := b.notePerms(obs.Conns[r.Connection], r, c, needs); err != nil {
			b.fail(r, lo, err)
			return
		}
	}
	// What the change needs must exist, or be made by the specs.
	if err := b.checkPrereqs(k, r, lo, c); err != nil {
		b.fail(r, lo, err)
		return
	}
	if t := k.Traits(); t.Stages != "" && !r.ReadOnly {
		b.noteUncommitted(r, lo, c, t.stagedAlready(lo))
	}
	if c.Diff == nil {
		c.Diff = []FieldDiff{}
	}
	if c.Reasons == nil {
		c.Reasons = []string{}
	}
	b.Changes[c.Address] = c
}

// fail records r as not planned: a placeholder change, and err (nil: it
// is not planned for another reason, noted by the caller).
func (b *Builder) fail(r *spec.Resource, lo *LiveObj, err error) {
	c := &Change{Address: r.Address(), Action: NoOp, Resource: r, Diff: []FieldDiff{}, Reasons: []string{}}
	if lo != nil {
		c.Node = lo.Node
	}
	b.Changes[c.Address], b.Failed[c.Address] = c, err
}

// planExtras adds what no document asks for directly: the removal of
// owned objects no document names (--prune) and snapshots before risky
// changes.
func (b *Builder) planExtras(ctx context.Context) error {
	b.orphans = b.planOwned()
	for _, step := range PlanSteps {
		if err := step(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// linkGraph draws the dependency graph between the changes: forward for
// a plan, reversed for a destroy.
func (b *Builder) linkGraph(context.Context) error {
	deps := b.forwardDeps()
	if !b.Opts.Destroy {
		// Forward only: in a destroy these edges would make a bridge's
		// deletion wait for every user of its node's network, and a
		// target pull them all in.
		b.WaitForCommits(deps)
		b.deleteUsersFirst(deps)
		b.deps = deps
		return nil
	}
	if err := b.keepProtectedNeeds(deps); err != nil {
		return err
	}
	b.deps = ReverseDeps(deps, b.NetKey)
	return nil
}

// selectChanges picks the changes the plan carries (targets and their
// needs, less what cannot be planned) and orders them.
func (b *Builder) selectChanges(context.Context) error {
	sel, err := b.SelectTargets(b.deps)
	if err != nil {
		return err
	}
	b.skipped = NotPlannedOf(b.unseen, sel, b.deps)
	if err := selectedErrors(b.Failed, sel); err != nil {
		return err
	}
	b.order, err = (&dag.Graph{Deps: b.deps}).OrderOf(sel)
	b.sel = sel
	return err
}

// assemble is the plan: the selected changes in order, each with its
// selected dependencies, the endpoints they go to and the warnings a
// review plan carries.
func (b *Builder) assemble() *Plan {
	p := &Plan{FormatVersion: FormatVersion, Destroy: b.Opts.Destroy, Changes: []*Change{}, NotPlanned: b.skipped,
		Orphans: b.orphans, OwnedUnread: b.Obs.ownedErrs}
	for _, addr := range b.order {
		c := b.Changes[addr]
		if ep := b.Obs.endpoint(c.Resource.Connection); ep != "" {
			if p.Endpoints == nil {
				p.Endpoints = map[string]string{}
			}
			p.Endpoints[c.Resource.Connection] = ep
		}
		p.PrivilegeWarnings = append(p.PrivilegeWarnings, b.warnings[addr]...)
		c.DependsOn = nil
		for _, d := range b.deps[addr] {
			if b.sel[d] {
				c.DependsOn = append(c.DependsOn, d)
			}
		}
		p.Changes = append(p.Changes, c)
	}
	return p
}

// notePerms records the privileges c's calls check (apply checks the
// applying token against them) and checks the plan's token: a need it
// lacks fails the resource, or in a review plan is a warning.
func (b *Builder) notePerms(lc *LiveConn, r *spec.Resource, c *Change, needs []PermNeed) error {
	if c.Action != NoOp {
		c.Needs = nil
		for _, n := range needs {
			c.Needs = append(c.Needs, exportNeed(n))
		}
	}
	if !b.Opts.ReviewPrivileges {
		return lc.checkPerms(r.Address(), needs)
	}
	for _, n := range lc.unheld(needs) {
		if b.warnings == nil {
			b.warnings = map[string][]PrivilegeWarning{}
		}
		b.warnings[r.Address()] = append(b.warnings[r.Address()], PrivilegeWarning{
			Address: r.Address(), Token: lc.Client.TokenID(), Need: exportNeed(n), Message: lc.PermMessage(n)})
	}
	return nil
}

// noteUncommitted says so when nothing in the specs commits the staging
// scope of r's change (a node's network): PVE only stages such changes,
// and without a commit (a NetworkApply) they would wait in
// interfaces.new while the plan looks done.
func (b *Builder) noteUncommitted(r *spec.Resource, lo *LiveObj, c *Change, staged bool) {
	if _, key := StagingKey(r.Kind, r.Connection, lo.Node); b.commits(key) {
		return
	}
	t := TraitsOf(r.Kind)
	if why := UncommittedReason(t, StagingScope(t.Stages, lo.Node), c.Action != NoOp, staged); why != "" {
		c.Reasons = append(c.Reasons, why)
	}
}

// commits reports whether the Set has a commit of the staging scope key.
func (b *Builder) commits(key string) bool {
	for _, r := range b.Set.Resources {
		if TraitsOf(r.Kind).Commits == "" || r.State == spec.Absent || r.ReadOnly {
			continue
		}
		node := ""
		if lo := b.Obs.Objs[r.Address()]; lo != nil {
			node = lo.Node
		} else if node = ParamNode(r); node == "" {
			// Not observed (its own error is reported): judge by the
			// spec, where a commit may be named after its node.
			node = r.Name
		}
		if _, k := StagingKey(r.Kind, r.Connection, node); k == key {
			return true
		}
	}
	return false
}

// selectedErrors reports the planning errors of the selected resources,
// each message once (a connection that cannot be read fails all of its
// resources for one reason).
func selectedErrors(failed map[string]error, sel map[string]bool) error {
	seen := map[string]bool{}
	re := &resourceErrors{byAddress: map[string]error{}}
	for _, a := range slices.Sorted(maps.Keys(failed)) {
		if !sel[a] {
			continue
		}
		re.byAddress[a] = failed[a]
		if msg := failed[a].Error(); !seen[msg] {
			seen[msg] = true
			re.errs = append(re.errs, failed[a])
		}
	}
	if len(re.errs) == 0 {
		return nil
	}
	return re
}

// resourceErrors is Build's refusal of resources it could not plan: each
// one's error by address (import comments out those documents and keeps
// the others), and the distinct errors, joined, as its message.
type resourceErrors struct {
	byAddress map[string]error
	errs      []error
}

func (e *resourceErrors) Error() string   { return errors.Join(e.errs...).Error() }
func (e *resourceErrors) Unwrap() []error { return e.errs }

// forwardDeps is the spec's dependency graph restricted to planned resources.
func (b *Builder) forwardDeps() map[string][]string {
	deps := map[string][]string{}
	for addr := range b.Changes {
		seen := map[string]bool{}
		var ds []string
		add := func(d string) {
			if d != addr && !seen[d] && b.Changes[d] != nil {
				seen[d] = true
				ds = append(ds, d)
			}
		}
		for _, ref := range b.Changes[addr].Resource.DependsOn {
			add(ref.String())
		}
		sort.Strings(ds)
		deps[addr] = ds
	}
	return deps
}

// WaitForCommits makes whatever uses an interface (a VM's NIC on a bridge)
// also wait for the NetworkApply of that interface's node: PVE only stages
// the interface, and starting a VM on a bridge that is not committed yet
// fails ("bridge 'vmbr1' does not exist"). An edge that would close a cycle
// (a NetworkApply told to wait for the user) is left out.
func (b *Builder) WaitForCommits(deps map[string][]string) {
	commits := map[string][]string{} // node key → NetworkApply addresses
	for _, a := range slices.Sorted(maps.Keys(deps)) {
		if role, key := b.NetKey(a); role == NetCommit {
			commits[key] = append(commits[key], a)
		}
	}
	if len(commits) == 0 {
		return
	}
	for _, a := range slices.Sorted(maps.Keys(deps)) {
		if role, _ := b.NetKey(a); role != NetNone {
			continue
		}
		have := map[string]bool{}
		for _, d := range deps[a] {
			have[d] = true
		}
		for _, d := range deps[a] {
			role, key := b.NetKey(d)
			if role != NetStage {
				continue
			}
			for _, n := range commits[key] {
				if !have[n] && !(&spec.Graph{Deps: deps}).Reaches(n, a) {
					have[n] = true
					deps[a] = append(deps[a], n)
				}
			}
		}
		sort.Strings(deps[a])
	}
}

// deleteUsersFirst turns around the edges between two deletions of a
// forward plan (`state: absent` on both): a VM must go before the pool or
// bridge it depends on, as PVE refuses to delete a pool that is not empty.
func (b *Builder) deleteUsersFirst(deps map[string][]string) {
	isDelete := func(a string) bool { c := b.Changes[a]; return c != nil && c.Action == Delete }
	flipped := map[string][]string{}
	for _, a := range slices.Sorted(maps.Keys(deps)) {
		if !isDelete(a) {
			continue
		}
		kept := deps[a][:0]
		for _, d := range deps[a] {
			if isDelete(d) {
				flipped[d] = append(flipped[d], a)
			} else {
				kept = append(kept, d)
			}
		}
		deps[a] = kept
	}
	for d, users := range flipped {
		deps[d] = append(deps[d], users...)
		sort.Strings(deps[d])
	}
}

// keepProtectedNeeds keeps, in a destroy, what a kept (protected) resource
// depends on: deleting the bridge or pool of a protected VM would cut its
// network or fail on a pool that is not empty. The network commits of the
// nodes are planned again, as their interfaces may now stay.
func (b *Builder) keepProtectedNeeds(fwd map[string][]string) error {
	keptFor := map[string]string{}
	var queue []string
	for _, a := range slices.Sorted(maps.Keys(b.Changes)) {
		if c := b.Changes[a]; c.Kept {
			keptFor[a] = a
			queue = append(queue, a)
		}
	}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for _, d := range fwd[a] {
			if _, done := keptFor[d]; done {
				continue
			}
			keptFor[d] = keptFor[a]
			queue = append(queue, d)
			if c := b.Changes[d]; c.Action == Delete {
				c.Action, c.Reasons, c.Kept, c.KeptFor = NoOp, []string{"protected: kept for " + keptFor[a]}, true, keptFor[a]
			}
		}
	}
	if len(keptFor) == 0 {
		return nil
	}
	for _, a := range slices.Sorted(maps.Keys(b.Changes)) {
		c := b.Changes[a]
		k, err := KindOf(c.Resource.Kind)
		if err != nil || k.Traits().Commits == "" || b.Failed[a] != nil {
			continue
		}
		nc, err := b.planChange(k, c.Resource, b.Obs.Objs[a])
		if err != nil {
			return err
		}
		c.Action, c.Reasons, c.State = nc.Action, nc.Reasons, nc.State
		if c.Reasons == nil {
			c.Reasons = []string{}
		}
	}
	return nil
}

// netRole is a kind's part in staged changes (staging.go).
type NetRole int

const (
	NetNone   NetRole = iota
	NetStage          // stages a change (in a node's /etc/network/interfaces.new)
	NetCommit         // commits a staging scope's changes
)

// NetKey says whether addr stages or commits changes, and the key of its
// staging scope (stagingKey).
func (b *Builder) NetKey(addr string) (NetRole, string) {
	c := b.Changes[addr]
	if c == nil {
		return NetNone, ""
	}
	return StagingKey(c.Resource.Kind, c.Resource.Connection, c.Node)
}

// ReverseDeps turns the forward graph around for destroy, then re-routes
// every NetworkApply so it commits after the interface deletions of its
// node, and those wait for everything that used the committed network.
func ReverseDeps(fwd map[string][]string, netKey func(string) (NetRole, string)) map[string][]string {
	rev := map[string]map[string]bool{}
	for a := range fwd {
		rev[a] = map[string]bool{}
	}
	for a, ds := range fwd {
		for _, d := range ds {
			rev[d][a] = true
		}
	}
	ifaces := map[string][]string{}
	var applies []string
	for _, a := range slices.Sorted(maps.Keys(fwd)) {
		switch role, key := netKey(a); role {
		case NetStage:
			ifaces[key] = append(ifaces[key], a)
		case NetCommit:
			applies = append(applies, a)
		}
	}
	// Forward dependents of each commit, read before any re-routing.
	users := map[string][]string{}
	for _, n := range applies {
		users[n] = slices.Sorted(maps.Keys(rev[n]))
	}
	for _, n := range applies {
		_, key := netKey(n)
		isIface := map[string]bool{}
		for _, i := range ifaces[key] {
			isIface[i] = true
		}
		for _, i := range ifaces[key] {
			delete(rev[i], n)
			for _, u := range users[n] {
				if !isIface[u] {
					rev[i][u] = true
				}
			}
			rev[n][i] = true
		}
	}
	out := map[string][]string{}
	for a, ds := range rev {
		out[a] = slices.Sorted(maps.Keys(ds))
	}
	return out
}

// SelectTargets limits the plan to the targets and what they need: their
// dependencies in the graph at hand (for destroy, the reversed graph, so
// their dependents), plus the commit of any selected interface's node.
func (b *Builder) SelectTargets(deps map[string][]string) (map[string]bool, error) {
	sel := map[string]bool{}
	if len(b.Opts.Targets) == 0 {
		for a := range deps {
			sel[a] = true
		}
		return sel, nil
	}
	var visit func(string)
	visit = func(a string) {
		if sel[a] {
			return
		}
		sel[a] = true
		for _, d := range deps[a] {
			visit(d)
		}
	}
	for _, t := range b.Opts.Targets {
		if b.Changes[t] == nil {
			return nil, fmt.Errorf("target %s is not a resource of the specs", t)
		}
		// A commit has nothing of its own to remove; in the reversed
		// graph it would pull in every interface of its node and every
		// guest on them (the management bridge too, when the specs hold
		// it). Refused, naming what to target instead.
		if role, _ := b.NetKey(t); b.Opts.Destroy && role == NetCommit {
			return nil, fmt.Errorf("target %s: a network commit has nothing of its own to destroy; target the interfaces to remove (e.g. --target LinuxBridge/NAME), their node's commit comes with them", t)
		}
		visit(t)
	}
	// A selected interface only stages its change: take its node's commit
	// too, but not what the commit would pull in (every other interface of
	// the node and, for destroy, everything using them).
	staged := map[string]bool{}
	for a := range sel {
		if role, key := b.NetKey(a); role == NetStage {
			staged[key] = true
		}
	}
	for _, a := range slices.Sorted(maps.Keys(deps)) {
		if role, key := b.NetKey(a); role == NetCommit && staged[key] {
			sel[a] = true
		}
	}
	return sel, nil
}

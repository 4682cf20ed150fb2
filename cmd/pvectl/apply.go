package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/planner/render"
	"github.com/pvectl/pvectl/pkg/runlock"
	"github.com/pvectl/pvectl/pkg/spec"
)

type applyOptions struct {
	g *globalOptions
	specOptions
	planFile    string
	autoApprove bool
	json        bool
	destroy     bool
	// allowForeign lets network commits take staged changes pvectl did
	// not make (those the plan shows).
	allowForeign bool
	// allowForeignSDN lets SdnApply commit pending SDN changes pvectl did
	// not make, those the plan showed.
	allowForeignSDN bool
	// allowLockout applies firewall changes that may cut pvectl's access.
	allowLockout bool
	// lock takes the run lock in PVE; lockTimeout is how long to wait
	// for another run's.
	lock        bool
	lockTimeout time.Duration
	runLock     *runlock.Lock // held while the command runs
	// snapshot plans snapshots before risky guest changes; keepSnapshots
	// and rollback tune them (snapshot.go in the planner).
	snapshot      bool
	keepSnapshots int
	rollback      bool
	ownerOptions
}

func newApplyCmd(g *globalOptions) *cobra.Command {
	o := &applyOptions{g: g}
	c := &cobra.Command{
		Use:   "apply (-f PATH... | PLANFILE)",
		Short: "Make the live state match the specs",
		Long: `apply plans (like 'pvectl plan'), asks for confirmation and applies the
changes in dependency order. Given a plan file saved with 'plan --out', it
applies exactly that plan, and refuses it if the live state changed since.

Confirmation: on a terminal apply asks; elsewhere it needs --auto-approve.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.planFile = args[0]
			}
			return o.run(c.Context())
		},
	}
	o.addFlags(c, targetNeeds)
	c.Flags().BoolVar(&o.autoApprove, "auto-approve", false, "apply without asking")
	c.Flags().BoolVar(&o.json, "json", false, "progress as JSON lines")
	c.Flags().BoolVar(&o.snapshot, "snapshot", false, snapshotHelp)
	c.Flags().IntVar(&o.keepSnapshots, "keep-snapshots", planner.DefaultKeepSnapshots, "how many pvectl-… snapshots each guest keeps after a change that took one (older ones are deleted; others' snapshots never)")
	o.addOwnerFlags(c, true)
	c.Flags().BoolVar(&o.rollback, "rollback-on-failure", false, "roll a guest back to the snapshot taken before its change when the change fails (otherwise the error prints the rollback command)")
	o.addForeignFlag(c)
	o.addLockFlags(c)
	return c
}

// addLockFlags adds --lock and --lock-timeout: apply and destroy hold
// pvectl's run lock in PVE (the pool pvectl-lock), so that two runs
// against one cluster do not both create what is missing.
func (o *applyOptions) addLockFlags(c *cobra.Command) {
	c.Flags().BoolVar(&o.lock, "lock", true, "hold pvectl's run lock in PVE (the pool "+runlock.Pool+") while running, so that no other apply or destroy runs at the same time")
	c.Flags().DurationVar(&o.lockTimeout, "lock-timeout", 0, "how long to wait for another run's lock (0: fail at once, naming its holder)")
}

// addForeignFlag adds --allow-foreign-network-changes: without it, a plan
// whose NetworkApply would commit staged changes pvectl did not make is
// refused before anything is changed.
func (o *applyOptions) addForeignFlag(c *cobra.Command) {
	c.Flags().BoolVar(&o.allowForeign, "allow-foreign-network-changes", false,
		"let a NetworkApply commit staged network changes that pvectl did not make (the plan lists them)")
	c.Flags().BoolVar(&o.allowForeignSDN, "allow-foreign-sdn-changes", false,
		"let an SdnApply commit pending SDN changes that pvectl did not make (the plan lists them)")
	c.Flags().BoolVar(&o.allowLockout, "allow-lockout", false,
		"apply a Firewall that the plan warns may cut pvectl's access to PVE's API (8006) and SSH (22)")
}

func newDestroyCmd(g *globalOptions) *cobra.Command {
	o := &applyOptions{g: g, destroy: true, keepSnapshots: planner.DefaultKeepSnapshots}
	c := &cobra.Command{
		Use:   "destroy -f PATH...",
		Short: "Remove every resource of the specs (protected ones are kept)",
		Long: `destroy removes the resources the specs describe, in reverse dependency
order. Resources marked 'protected: true' are skipped with a notice. Network
interface removals are committed by the node's NetworkApply.`,
		Args: specsWithF,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c.Context()) },
	}
	o.addFlags(c, targetDependents)
	c.Flags().BoolVar(&o.autoApprove, "auto-approve", false, "destroy without asking")
	c.Flags().BoolVar(&o.json, "json", false, "progress as JSON lines")
	o.addForeignFlag(c)
	o.addLockFlags(c)
	return c
}

func (o *applyOptions) validate() error {
	if o.keepSnapshots < 1 {
		return invalid(fmt.Errorf("--keep-snapshots %d: keep at least 1 (the one taken before the change)", o.keepSnapshots))
	}
	if o.planFile != "" && o.snapshot {
		return invalid(errors.New("--snapshot is part of the plan: make it with pvectl plan --snapshot --out FILE, then apply FILE"))
	}
	if o.planFile != "" {
		if len(o.targets) > 0 {
			return invalid(errors.New("--target cannot be combined with a plan file: the plan already fixes what is applied"))
		}
		if o.prune || o.stack != "" {
			return invalid(errors.New("--prune and --stack cannot be combined with a plan file: the plan already fixes what is applied (plan --prune --out FILE)"))
		}
		if looksLikeSpecs(o.planFile) {
			return invalid(fmt.Errorf("%s looks like specs, not a plan file: pvectl apply -f %s (a plan file comes from 'pvectl plan --out FILE')", o.planFile, o.planFile))
		}
		return nil
	}
	if slices.Contains(o.files, spec.StdinPath) && !o.autoApprove {
		return invalid(fmt.Errorf("%s -f - reads the specs from stdin, which then cannot answer the confirmation: add --auto-approve", o.verb()))
	}
	return approval(o.verb(), o.destroy, o.autoApprove, o.json, isTerminal(o.g.streams.In))
}

// approval decides whether a run may go on to ask (or not ask) for
// confirmation. As Terraform, pvectl asks when stdin is a terminal — who
// would answer otherwise? — wherever stdout goes (`apply | tee log` asks);
// elsewhere it needs --auto-approve, and so does --json, whose stdout
// carries only JSON.
func approval(verb string, destroy, autoApprove, asJSON, stdinTerminal bool) error {
	switch {
	case autoApprove:
		return nil
	case asJSON:
		return invalid(fmt.Errorf("%s --json needs --auto-approve", verb))
	case !stdinTerminal:
		hint := " (or save a plan with 'pvectl plan --out FILE' and run 'pvectl apply FILE')"
		if destroy {
			hint = ""
		}
		return invalid(fmt.Errorf("%s needs --auto-approve when its input is not a terminal%s", verb, hint))
	}
	return nil
}

// looksLikeSpecs: a directory or a YAML file given where a plan file belongs.
func looksLikeSpecs(path string) bool {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return true
	}
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

func (o *applyOptions) run(ctx context.Context) error {
	if err := o.validate(); err != nil {
		return err
	}
	in := watchInterrupts(ctx, o.g.signals)
	defer in.close()
	// Deferred after in.close, so it runs first: while it runs, a further
	// interrupt is still caught and the lock is still released.
	defer o.releaseLock(ctx)
	p, cl, err := o.prepare(in)
	if in.interrupted() {
		return errInterrupted
	}
	if err != nil || p == nil {
		return err
	}
	w := o.g.streams.Out
	view := newProgressView(w, o.json, o.g.colorEnabled(w))
	if o.json {
		view.secrets, view.notices = o.g.streams.Err, o.g.streams.Err
	}
	in.applying(view)
	res, err := planner.Apply(in.ctx, cl, p, planner.ApplyOptions{Parallelism: o.g.parallelism, Hooks: view, Stop: in.stop,
		AllowForeignNetworkChanges: o.allowForeign, AllowForeignSDNChanges: o.allowForeignSDN, AllowLockout: o.allowLockout, Guard: o.runLock.Check, KeepSnapshots: o.keepSnapshots, RollbackOnFailure: o.rollback})
	view.summary(p, res, o.verb())
	switch {
	case err != nil && res == nil: // refused before anything ran
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %w", o.verb(), err)}
	case res != nil && res.Interrupted:
		return &exitError{code: exitFailure, err: fmt.Errorf("%s interrupted (see the summary above)", o.verb())}
	case err != nil:
		// The summary above lists every failure; say it once more, short.
		return &exitError{code: exitFailure, err: fmt.Errorf("%s did not complete (see the summary above)", o.verb())}
	}
	return notPlannedError(o.verb(), p)
}

// notPlannedError fails a run that left resources out because their live
// state could not be known (a node offline or unreachable): what could be
// seen was applied, the rest waits for the next run (docs/decisions.md).
func notPlannedError(verb string, p *planner.Plan) error {
	if len(p.NotPlanned) == 0 {
		return nil
	}
	lines := make([]string, len(p.NotPlanned))
	for i, n := range p.NotPlanned {
		lines[i] = "  " + n.String()
	}
	return &exitError{code: exitFailure, err: fmt.Errorf("%s covered only what could be seen; %d not planned (run it again once their nodes are back):\n%s",
		verb, len(p.NotPlanned), strings.Join(lines, "\n"))}
}

// prepare reads the saved plan or plans afresh, shows it and asks; a nil
// plan with no error means there is nothing to do (or the answer was no).
func (o *applyOptions) prepare(in *interrupts) (*planner.Plan, *clients, error) {
	if o.planFile != "" {
		return o.prepareSaved(in.ctx)
	}
	return o.prepareFresh(in.ctx)
}

// prepareSaved reads --plan's saved plan and checks it still holds: the
// live state it was made from (Verify), the token's privileges, and the
// changes' safety (refuseUnsafe).
func (o *applyOptions) prepareSaved(ctx context.Context) (*planner.Plan, *clients, error) {
	p, err := planner.ReadFile(o.planFile)
	if err != nil {
		return nil, nil, invalid(err)
	}
	var set *spec.Set
	if len(o.files) > 0 { // named connections are defined in the specs
		if set, err = o.load(o.g); err != nil {
			return nil, nil, err
		}
	}
	cl, err := newClients(o.g, set, p.Connections)
	if err != nil {
		return nil, nil, err
	}
	var used []string
	for _, c := range p.Changes {
		if c.Resource != nil {
			used = append(used, c.Resource.Connection)
		}
	}
	if err := cl.check(used); err != nil {
		return nil, nil, err
	}
	if err := o.takeLock(ctx, cl, used); err != nil {
		return nil, nil, err
	}
	if err := planner.Verify(ctx, cl, p); err != nil {
		return nil, nil, err
	}
	// A saved plan may come from a read-only review token: the token
	// that applies must hold what its changes need, before any write.
	if err := planner.CheckPrivileges(ctx, cl, p); err != nil {
		return nil, nil, &exitError{code: exitFailure, err: err}
	}
	if err := o.refuseUnsafe(p); err != nil {
		return nil, nil, err
	}
	return p, cl, nil
}

// prepareFresh plans the specs against the live clusters, shows the plan
// and asks for approval (unless --auto-approve).
func (o *applyOptions) prepareFresh(ctx context.Context) (*planner.Plan, *clients, error) {
	w := o.g.streams.Out
	stack, err := o.resolveStack()
	if err != nil {
		return nil, nil, err
	}
	set, err := o.load(o.g)
	if err != nil {
		return nil, nil, err
	}
	cl, err := specClients(o.g, set)
	if err != nil {
		return nil, nil, err
	}
	// The lock comes before the plan: a plan made while another run
	// creates what is missing would create it again.
	if err := o.takeLock(ctx, cl, usedConnections(set)); err != nil {
		return nil, nil, err
	}
	p, err := planLive(ctx, o.g, set, cl, planner.Options{Targets: o.targets, Destroy: o.destroy, Snapshot: o.snapshot, Stack: stack, Prune: o.prune, DriveCache: cacheDir()}, o.notices())
	if err != nil {
		return nil, nil, err
	}
	if !o.json {
		if err := render.Human(w, p, render.Options{Color: o.g.colorEnabled(w)}); err != nil {
			return nil, nil, err
		}
	}
	if !p.HasChanges() {
		if o.json { // the rendered plan said it for humans
			newProgressView(w, true, false).summary(p, &planner.Result{}, o.verb())
		}
		return nil, nil, notPlannedError(o.verb(), p)
	}
	if err := o.refuseUnsafe(p); err != nil {
		return nil, nil, err
	}
	if !o.json { // stdout carries only JSON lines then
		sayPruned(w, p)
	}
	if !o.autoApprove {
		ok, err := confirm(ctx, o.g.streams.In, w, o.destroy)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, &exitError{code: exitFailure, err: errors.New("cancelled: nothing was changed")}
		}
	}
	return p, cl, nil
}

// refuseUnsafe refuses a plan whose commits would take along staged
// network or SDN changes pvectl did not make (CheckForeign), or whose
// firewall changes would cut pvectl's own access (CheckLockout), unless
// the flags allow it.
func (o *applyOptions) refuseUnsafe(p *planner.Plan) error {
	if err := planner.CheckForeign(p, planner.ForeignAllowed{Network: o.allowForeign, SDN: o.allowForeignSDN}); err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	if err := planner.CheckLockout(p, o.allowLockout); err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	return nil
}

// notices is where lines beside the run go: stdout for humans, stderr
// beside JSON lines.
func (o *applyOptions) notices() io.Writer {
	if o.json {
		return o.g.streams.Err
	}
	return o.g.streams.Out
}

// takeLock takes the run lock on the clusters of conns (unless --lock=false).
func (o *applyOptions) takeLock(ctx context.Context, cl *clients, conns []string) error {
	if !o.lock {
		return nil
	}
	w := o.notices()
	l, err := runlock.Acquire(ctx, cl, conns, runlock.Options{
		Info:    runlock.NewInfo(o.verb()),
		Timeout: o.lockTimeout,
		Waiting: func(e *runlock.LockedError) {
			fmt.Fprintf(w, "Waiting up to %s for the run lock: %s\n", durfmt.Format(o.lockTimeout), e)
		},
	})
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	o.runLock = l
	return nil
}

// releaseLock gives the run lock back, also after an interrupt (which
// cancelled ctx): a lock left behind would stop the next run.
func (o *applyOptions) releaseLock(ctx context.Context) {
	if o.runLock == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
	defer cancel()
	if err := o.runLock.Release(ctx); err != nil {
		fmt.Fprintf(o.g.streams.Err, "Warning: %v\n", err)
	}
	o.runLock = nil
}

// lockReleaseTimeout bounds the release of the run lock at the end.
const lockReleaseTimeout = 30 * time.Second

func (o *applyOptions) verb() string {
	if o.destroy {
		return "destroy"
	}
	return "apply"
}

// confirm asks the question and reads one line. The read runs apart so
// that an interrupt (ctx) ends the wait at once; a closed input is a no.
func confirm(ctx context.Context, in io.Reader, w io.Writer, destroy bool) (bool, error) {
	q := "Do you want to perform these actions?"
	if destroy {
		q = "Do you really want to destroy these resources?"
	}
	fmt.Fprintf(w, "\n%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", q)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(in).ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(w)
		return false, ctx.Err()
	case a := <-got:
		if a.err != nil && a.line == "" {
			fmt.Fprintln(w)
			return false, &exitError{code: exitFailure, err: errors.New("no answer (the input was closed): nothing was changed")}
		}
		return strings.TrimSpace(a.line) == "yes", nil
	}
}

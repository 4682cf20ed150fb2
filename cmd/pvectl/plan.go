package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/planner/render"
	"github.com/pvectl/pvectl/pkg/spec"
)

// specOptions are the flags of every command that reads specs.
type specOptions struct {
	files   []string
	targets []string
	// deferUnset (validate): an unset ${VAR} is a value not known yet.
	deferUnset bool
}

// addFlags adds -f and, when targetHelp is not empty, --target.
func (o *specOptions) addFlags(c *cobra.Command, targetHelp string) {
	c.Flags().StringArrayVarP(&o.files, "file", "f", nil, "spec file or directory (repeatable; a directory means its *.yaml|*.yml)")
	if targetHelp != "" {
		c.Flags().StringArrayVar(&o.targets, "target", nil, targetHelp)
	}
}

// snapshotHelp is --snapshot's, for plan and apply.
const snapshotHelp = "take a PVE snapshot (pvectl-<time>) of each guest right before a change that touches its disks or reboots it; the plan says which, and names guests whose storage cannot snapshot"

const (
	targetNeeds      = "limit to this resource (Kind/name, repeatable) and what it depends on"
	targetDependents = "limit to this resource (Kind/name, repeatable) and what depends on it"
)

// specsWithF refuses positional arguments to commands that read specs: the
// usual slip is `pvectl plan DIR` for `pvectl plan -f DIR`.
func specsWithF(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return invalid(fmt.Errorf("%s takes specs with -f: pvectl %s -f %s", c.Name(), c.Name(), strings.Join(args, " -f ")))
	}
	return nil
}

// load reads and validates the specs; every problem is an invalid-input
// error. "-f -" reads them from stdin. The secret values the specs hold
// are handed to the output scrubber.
func (o *specOptions) load(g *globalOptions) (*spec.Set, error) {
	if len(o.files) == 0 {
		return nil, invalid(fmt.Errorf("no specs given: pass -f FILE or -f DIR (or -f - for stdin)"))
	}
	set, err := spec.Load(o.files, spec.LoadOptions{Stdin: g.streams.In, DeferUnset: o.deferUnset})
	if err != nil {
		return nil, invalid(err)
	}
	// Secret parameters and own keys, those declared secret (secretKeys)
	// and the connections' secrets.
	g.scrubber.Add(spec.SecretValues(set)...)
	var bad []string
	for _, t := range o.targets {
		if set.Lookup(t) != nil {
			continue
		}
		msg := fmt.Sprintf("--target %s: no such resource in the specs", t)
		if s := set.Suggest(t); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		} else if len(set.Resources) > 0 {
			msg += fmt.Sprintf(" (write Kind/name, e.g. %s)", set.Resources[0].Address())
		}
		bad = append(bad, msg)
	}
	if len(bad) > 0 {
		return nil, invalid(errors.New(strings.Join(bad, "\n")))
	}
	return set, nil
}

type planOptions struct {
	g *globalOptions
	specOptions
	out        string
	json       bool
	detailed   bool
	privileges string
	snapshot   bool
	ownerOptions
}

func newPlanCmd(g *globalOptions) *cobra.Command {
	o := &planOptions{g: g}
	c := &cobra.Command{
		Use:   "plan -f PATH...",
		Short: "Show what apply would change",
		Long: `plan reads the specs, reads the live state and prints what apply would do.

Exit codes: 0 success, 1 API or runtime failure, 3 invalid specs; with
--detailed-exitcode, 0 means no changes and 2 means changes are present.`,
		Args: specsWithF,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c.Context()) },
	}
	o.addFlags(c, targetNeeds)
	c.Flags().StringVar(&o.out, "out", "", "save the plan to FILE for 'pvectl apply FILE'")
	c.Flags().BoolVar(&o.json, "json", false, "print the plan as one JSON object")
	c.Flags().BoolVar(&o.detailed, "detailed-exitcode", false, "exit 2 when there are changes, 0 when none")
	c.Flags().BoolVar(&o.snapshot, "snapshot", false, snapshotHelp)
	o.addOwnerFlags(c, true)
	c.Flags().StringVar(&o.privileges, "privileges", "warn", "privileges the token lacks for the changes: warn (list the grants that fix it; apply refuses) or strict (refuse the plan)")
	return c
}

func (o *planOptions) run(ctx context.Context) error {
	if !slices.Contains(privilegeModes, o.privileges) {
		return invalid(fmt.Errorf("--privileges %q: want warn or strict", o.privileges))
	}
	stack, err := o.resolveStack()
	if err != nil {
		return err
	}
	set, err := o.load(o.g)
	if err != nil {
		return err
	}
	in := watchInterrupts(ctx, o.g.signals)
	defer in.close()
	notices := o.g.streams.Out
	if o.json {
		notices = o.g.streams.Err
	}
	p, cl, err := makePlan(in.ctx, o.g, set, planner.Options{Targets: o.targets, ReviewPrivileges: o.privileges == "warn", Snapshot: o.snapshot, Stack: stack, Prune: o.prune, DriveCache: cacheDir()}, notices)
	if in.interrupted() {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if o.out != "" {
		p.RecordConnections(cl)
		if err := planner.WriteFile(o.out, p); err != nil {
			return err
		}
	}
	w := o.g.streams.Out
	if o.json {
		err = render.JSON(w, p)
	} else {
		err = render.Human(w, p, render.Options{Color: o.g.colorEnabled(w)})
		if err == nil && o.out != "" {
			fmt.Fprintf(w, "\nSaved the plan to %s. Apply exactly this plan with:\n    pvectl apply %s\n", o.out, o.out)
		}
	}
	if err != nil {
		return err
	}
	printGrants(o.g.streams.Err, p)
	// Resources that could not be planned (their node is down) are not
	// known to be in sync: --detailed-exitcode says 2, as for changes.
	if o.detailed && (p.HasChanges() || len(p.NotPlanned) > 0) {
		return &exitError{code: exitChanges}
	}
	return nil
}

// makePlan observes live state and builds the plan.
func makePlan(ctx context.Context, g *globalOptions, set *spec.Set, opts planner.Options, notices io.Writer) (*planner.Plan, *clients, error) {
	cl, err := specClients(g, set)
	if err != nil {
		return nil, nil, err
	}
	p, err := planLive(ctx, g, set, cl, opts, notices)
	if err != nil {
		return nil, nil, err
	}
	return p, cl, nil
}

// specClients makes the clients of the connections the specs use; missing
// or malformed settings are invalid input, found before any API call.
func specClients(g *globalOptions, set *spec.Set) (*clients, error) {
	cl, err := newClients(g, set, nil)
	if err != nil {
		return nil, err
	}
	if err := cl.check(usedConnections(set)); err != nil {
		return nil, err
	}
	return cl, nil
}

// usedConnections are the connection names the specs' resources use.
func usedConnections(set *spec.Set) []string {
	var used []string
	for _, r := range set.Resources {
		if !slices.Contains(used, r.Connection) {
			used = append(used, r.Connection)
		}
	}
	return used
}

// planLive plans against the live state, waiting up to --busy-timeout for
// guests that PVE tasks hold (locked, or still being created); it says
// on notices what it waits for.
func planLive(ctx context.Context, g *globalOptions, set *spec.Set, cl *clients, opts planner.Options, notices io.Writer) (*planner.Plan, error) {
	opts, err := liveOptions(g, opts, notices)
	if err != nil {
		return nil, err
	}
	sayReading(notices, set)
	return planner.PlanLive(ctx, cl, set, opts)
}

// sayReading tells a person at a terminal what the plan reads before it
// prints anything (a slow cluster takes seconds); logs and pipes get
// nothing, so their output stays the plan's.
func sayReading(w io.Writer, set *spec.Set) {
	if !isTerminal(w) || len(set.Resources) == 0 {
		return
	}
	conns := len(usedConnections(set))
	fmt.Fprintf(w, "Reading the live state of %d resource%s through %d connection%s…\n",
		len(set.Resources), plural(len(set.Resources)), conns, plural(conns))
}

// liveOptions adds to opts what the global flags say about reading the
// live state: --busy-timeout (its waits told on notices) and the read
// concurrency.
func liveOptions(g *globalOptions, opts planner.Options, notices io.Writer) (planner.Options, error) {
	conc, err := g.resolveReadConcurrency()
	if err != nil {
		return opts, err
	}
	opts.BusyTimeout = g.busyTimeout
	opts.ReadConcurrency = conc
	opts.Waiting = busyWaiter(notices, g.busyTimeout)
	return opts, nil
}

// busyWaiter reports PlanLive's waits: the busy resources when they
// change, else a line every stillRunningEvery.
func busyWaiter(w io.Writer, limit time.Duration) func([]*planner.BusyError, time.Duration) {
	var last string
	var said time.Duration
	return func(busy []*planner.BusyError, waited time.Duration) {
		var lines []string
		for _, b := range busy {
			lines = append(lines, "  "+b.Address+": "+b.What)
		}
		now := strings.Join(lines, "\n")
		switch {
		case now != last:
			fmt.Fprintf(w, "Waiting up to %s for PVE tasks that hold %d resource%s:\n%s\n", durfmt.Format(limit), len(busy), plural(len(busy)), now)
		case waited-said >= stillRunningEvery:
			fmt.Fprintf(w, "Still waiting for PVE tasks that hold %d resource%s… [%s elapsed]\n", len(busy), plural(len(busy)), durfmt.Format(waited))
		default:
			return
		}
		last, said = now, waited
	}
}

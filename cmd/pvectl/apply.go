package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/planner/render"
	"github.com/pvectl/pvectl/pkg/spec"
)

type applyOptions struct {
	g *globalOptions
	specOptions
	planFile    string
	autoApprove bool
	json        bool
	destroy     bool
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
	return c
}

func newDestroyCmd(g *globalOptions) *cobra.Command {
	o := &applyOptions{g: g, destroy: true}
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
	return c
}

func (o *applyOptions) validate() error {
	if o.planFile != "" {
		if len(o.targets) > 0 {
			return invalid(errors.New("--target cannot be combined with a plan file: the plan already fixes what is applied"))
		}
		if looksLikeSpecs(o.planFile) {
			return invalid(fmt.Errorf("%s looks like specs, not a plan file: pvectl apply -f %s (a plan file comes from 'pvectl plan --out FILE')", o.planFile, o.planFile))
		}
		return nil
	}
	if o.autoApprove {
		return nil
	}
	switch {
	case o.json:
		// The question would land in the JSON stream.
		return invalid(fmt.Errorf("%s --json needs --auto-approve", o.verb()))
	case !isTerminal(o.g.streams.Out):
		hint := " (or save a plan with 'pvectl plan --out FILE' and run 'pvectl apply FILE')"
		if o.destroy {
			hint = ""
		}
		return invalid(fmt.Errorf("%s needs --auto-approve when not run on a terminal%s", o.verb(), hint))
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
	ctx, cancel := signalContext(ctx)
	defer cancel()
	w := o.g.streams.Out
	var (
		p  *planner.Plan
		cl *clients
	)
	if o.planFile != "" {
		var err error
		if p, err = planner.ReadFile(o.planFile); err != nil {
			return invalid(err)
		}
		var set *spec.Set
		if len(o.files) > 0 { // named connections are defined in the specs
			if set, err = o.load(); err != nil {
				return err
			}
		}
		if cl, err = newClients(o.g, set); err != nil {
			return err
		}
		var used []string
		for _, c := range p.Changes {
			if c.Resource != nil {
				used = append(used, c.Resource.Connection)
			}
		}
		if err := cl.check(used); err != nil {
			return err
		}
		if err := planner.Verify(ctx, cl, p); err != nil {
			return err
		}
	} else {
		set, err := o.load()
		if err != nil {
			return err
		}
		if p, cl, err = makePlan(ctx, o.g, set, planner.Options{Targets: o.targets, Destroy: o.destroy}); err != nil {
			return err
		}
		if !o.json {
			if err := render.Human(w, p, render.Options{Color: o.g.colorEnabled(w)}); err != nil {
				return err
			}
		}
		if !p.HasChanges() {
			if o.json { // the rendered plan said it for humans
				newProgressView(w, true, false).summary(p, &planner.Result{}, o.verb())
			}
			return nil
		}
		if !o.autoApprove {
			ok, err := confirm(o.g.streams.In, w, o.destroy)
			if err != nil {
				return err
			}
			if !ok {
				return &exitError{code: exitFailure, err: errors.New("cancelled: nothing was changed")}
			}
		}
	}
	view := newProgressView(w, o.json, o.g.colorEnabled(w))
	if o.json {
		view.secrets = o.g.streams.Err
	}
	res, err := planner.Apply(ctx, cl, p, planner.ApplyOptions{Parallelism: o.g.parallelism, Hooks: view})
	view.summary(p, res, o.verb())
	if err != nil {
		if res == nil { // refused before anything ran
			return &exitError{code: exitFailure, err: fmt.Errorf("%s: %w", o.verb(), err)}
		}
		// The summary above lists every failure; say it once more, short.
		return &exitError{code: exitFailure, err: fmt.Errorf("%s did not complete (see the summary above)", o.verb())}
	}
	return nil
}

func (o *applyOptions) verb() string {
	if o.destroy {
		return "destroy"
	}
	return "apply"
}

func confirm(in io.Reader, w io.Writer, destroy bool) (bool, error) {
	q := "Do you want to perform these actions?"
	if destroy {
		q = "Do you really want to destroy these resources?"
	}
	fmt.Fprintf(w, "\n%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", q)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, fmt.Errorf("read confirmation: %w", err)
	}
	return strings.TrimSpace(line) == "yes", nil
}

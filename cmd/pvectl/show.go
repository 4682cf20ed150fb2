package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/planner/render"
)

type showOptions struct {
	g        *globalOptions
	json     bool
	markdown bool
}

func newShowCmd(g *globalOptions) *cobra.Command {
	o := &showOptions{g: g}
	c := &cobra.Command{
		Use:   "show PLANFILE",
		Short: "Show a saved plan (as text, JSON, or Markdown for a pull request)",
		Long: `show prints a plan saved with 'plan --out FILE' without reading any live state:
no connection, token or network is needed, so a CI job can post the plan a
previous job made. --markdown gives a summary table and each change's diff in
a collapsed block, for a pull-request comment; --json the same JSON as
'plan --json'. Plan files hold no secrets, and the output passes the same
scrubber as every other command.`,
		Example: "  pvectl plan -f specs/ --out plan.out\n  pvectl show plan.out --markdown > plan.md",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if o.json && o.markdown {
				return invalid(errors.New("--json and --markdown: choose one"))
			}
			p, err := planner.ReadFile(args[0])
			if err != nil {
				return invalid(err)
			}
			w := o.g.streams.Out
			switch {
			case o.json:
				return render.JSON(w, p)
			case o.markdown:
				return render.Markdown(w, p)
			}
			return render.Human(w, p, render.Options{Color: o.g.colorEnabled(w)})
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the plan as JSON (the plan --json format)")
	c.Flags().BoolVar(&o.markdown, "markdown", false, "print the plan as Markdown, e.g. for a pull-request comment")
	return c
}

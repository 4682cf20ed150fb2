package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd(g *globalOptions) *cobra.Command {
	o := &specOptions{}
	c := &cobra.Command{
		Use:   "validate -f PATH...",
		Short: "Check specs offline: schema, references, cycles (no API call)",
		Args:  specsWithF,
		RunE: func(c *cobra.Command, _ []string) error {
			set, err := o.load()
			if err != nil {
				return err
			}
			n, nc := len(set.Resources), len(set.Connections)
			fmt.Fprintf(g.streams.Out, "Valid: %d resource%s, %d connection%s.\n", n, plural(n), nc, plural(nc))
			return nil
		},
	}
	o.addFlags(c, "")
	return c
}

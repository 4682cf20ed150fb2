package main

import (
	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/specdoc"
)

func newSchemaCmd(g *globalOptions) *cobra.Command {
	var o apidocOptions
	c := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of spec documents (for editors)",
		Long: `Print the JSON Schema (draft 2020-12) of one spec document: the kind selects
its spec's keys, with PVE's types, enums, ranges and patterns and pvectl's own
keys, from the same facts validate checks with. Point your editor at it, e.g.
with a first line in each spec file:

  # yaml-language-server: $schema=pvectl.schema.json

With PVE's API documentation (--apidoc) the schema carries PVE's
descriptions too; without, the published schema of this version is
printed.`,
		Example: "  pvectl schema > pvectl.schema.json\n  pvectl schema --apidoc /usr/share/pve-docs/api-viewer/apidoc.js > pvectl.schema.json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d, err := o.descriptions(c, g, false)
			if err != nil {
				return err
			}
			opts := specdoc.Options{Descriptions: d}
			if d == nil {
				opts.ID = specdoc.SchemaID // exactly the published file
			}
			b, err := specdoc.JSONSchema(opts)
			if err != nil {
				return err
			}
			_, err = g.streams.Out.Write(b)
			return err
		},
	}
	o.addFlag(c)
	return c
}

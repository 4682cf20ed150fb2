package main

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/spec"
	"github.com/pvectl/pvectl/pkg/specdoc"
)

func newExplainCmd(g *globalOptions) *cobra.Command {
	var o apidocOptions
	c := &cobra.Command{
		Use:   "explain [KIND[.FIELD[.SUBKEY]]]",
		Short: "Describe a kind, a spec field or a sub-key",
		Long: `Without an argument, list the kinds. With one, describe a kind (its PVE
calls, identity and keys), a field of its spec, or a
sub-key of a property string: type, default, enum or range, PVE's description,
and what changing it does to an existing object — updated in place, replaced,
or pending on a running guest until it restarts.

PVE's descriptions come from PVE's API documentation, which pvectl does not
carry (it is AGPL text): pass --apidoc, set PVECTL_APIDOC, run on a PVE node,
save https://NODE:8006/pve-docs/api-viewer/apidoc.js as
~/.config/pvectl/apidoc.js — or configure a connection (PROXMOX_URL and a
token): explain then reads the copy that node serves.`,
		Example:           "  pvectl explain\n  pvectl explain QemuVM\n  pvectl explain QemuVM.net0\n  pvectl explain QemuVM.net0.tag",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeExplainPath,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return specdoc.ListKinds(g.streams.Out)
			}
			d, err := o.descriptions(c, g, true)
			if err != nil {
				return err
			}
			err = specdoc.Explain(g.streams.Out, args[0], specdoc.ExplainOptions{Descriptions: d})
			var nf *specdoc.NotFoundError
			if errors.As(err, &nf) {
				return invalid(err)
			}
			return err
		},
	}
	o.addFlag(c)
	return c
}

// completeExplainPath completes KIND, then KIND.FIELD, then
// KIND.FIELD.SUBKEY from the kinds' specs.
func completeExplainPath(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	parts := strings.Split(toComplete, ".")
	var out []string
	add := func(s string) {
		if strings.HasPrefix(s, toComplete) {
			out = append(out, s)
		}
	}
	if len(parts) == 1 {
		for _, k := range spec.SupportedKinds() {
			add(k + ".")
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	k, ok := spec.SpecOf(parts[0])
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if len(parts) == 2 {
		for _, key := range k.Keys() {
			if !slices.Contains(k.Unsupported, key) {
				add(parts[0] + "." + key)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	if p, ok := k.Param(parts[1]); ok && len(parts) == 3 {
		subs := p.SubKeys()
		for _, sub := range slices.Sorted(maps.Keys(subs)) {
			if subs[sub].Alias == "" {
				add(parts[0] + "." + parts[1] + "." + sub)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/spec"
)

// registerCompletions teaches the shell completion (`pvectl completion
// bash|zsh|fish|powershell`) pvectl's own values: --target addresses from
// the specs given with -f, --profile names from the config file, spec
// files for -f.
func registerCompletions(root *cobra.Command, g *globalOptions) {
	_ = root.RegisterFlagCompletionFunc("profile", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		cfg, err := g.readConfig()
		if err != nil || cfg == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return slices.Sorted(maps.Keys(cfg.profiles)), cobra.ShellCompDirectiveNoFileComp
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("file") != nil {
			_ = c.MarkFlagFilename("file", "yaml", "yml")
		}
		if c.Flags().Lookup("target") != nil {
			_ = c.RegisterFlagCompletionFunc("target", completeTargets)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeTargets offers the addresses of the specs given with -f before
// --target (read leniently: a spec with mistakes still completes).
func completeTargets(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	files, err := c.Flags().GetStringArray("file")
	if err != nil || len(files) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, a := range spec.Addresses(files) {
		if strings.HasPrefix(a, toComplete) {
			out = append(out, a)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/spec"
)

type validateOptions struct {
	g *globalOptions
	specOptions
	json bool
}

func newValidateCmd(g *globalOptions) *cobra.Command {
	o := &validateOptions{g: g}
	c := &cobra.Command{
		Use:   "validate -f PATH...",
		Short: "Check specs offline: schema, references, cycles (no API call, no secret needed)",
		Long: `validate checks the specs without contacting PVE and without any variable
set: a ${VAR} whose variable is unset is checked for its syntax and place,
and its value by plan, which needs it (lint jobs and pull requests from
forks have no secrets).

With --json it prints one object: {"format_version":"1","valid":…,
"resources":N,"connections":N,"diagnostics":[{"file","line","column","message"}]}.`,
		Args: specsWithF,
		RunE: func(c *cobra.Command, _ []string) error { return o.run() },
	}
	o.addFlags(c, "")
	c.Flags().BoolVar(&o.json, "json", false, "print the result as one JSON object")
	return c
}

// diagnosticJSON is one problem of validate --json.
type diagnosticJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func (o *validateOptions) run() error {
	o.deferUnset = true
	set, err := o.load(o.g)
	if !o.json {
		if err != nil {
			return err
		}
		n, nc := len(set.Resources), len(set.Connections)
		fmt.Fprintf(o.g.streams.Out, "Valid: %d resource%s, %d connection%s.\n", n, plural(n), nc, plural(nc))
		if len(set.Unset) > 0 {
			fmt.Fprintf(o.g.streams.Out, "Not set here, so their values are checked by plan: %s.\n", strings.Join(set.Unset, ", "))
		}
		return nil
	}
	out := map[string]any{"format_version": eventsVersion, "valid": err == nil, "diagnostics": []diagnosticJSON{}}
	if err == nil {
		out["resources"], out["connections"] = len(set.Resources), len(set.Connections)
		out["unset"] = append([]string{}, set.Unset...)
	}
	var diags spec.Diagnostics
	switch {
	case errors.As(err, &diags):
		ds := make([]diagnosticJSON, 0, len(diags))
		for _, d := range diags {
			ds = append(ds, diagnosticJSON{File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Message: d.Msg})
		}
		out["diagnostics"] = ds
	case err != nil:
		out["diagnostics"] = []diagnosticJSON{{Message: err.Error()}}
	}
	b, _ := json.Marshal(out)
	fmt.Fprintln(o.g.streams.Out, string(b))
	if err != nil {
		return &exitError{code: exitInvalid} // the JSON said it all
	}
	return nil
}

package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/spec"
)

// stackEnv names the stack when --stack does not.
const stackEnv = "PVECTL_STACK"

// ownerOptions are the ownership flags of plan and apply: the stack whose
// marks a run writes and whose orphans it lists, and --prune.
type ownerOptions struct {
	stack string
	prune bool
}

func (o *ownerOptions) addOwnerFlags(c *cobra.Command, prune bool) {
	c.Flags().StringVar(&o.stack, "stack", "", "the stack this run works for: what it creates is marked with it, and plan lists the objects it made that no document names (default: $"+stackEnv+", else the Connection's stack, else "+planner.DefaultStack+")")
	if prune {
		c.Flags().BoolVar(&o.prune, "prune", false, "also destroy what the stack made that no document names (plan lists them); guests protected in PVE are kept")
	}
}

// resolveStack is --stack, else $PVECTL_STACK ("" when neither is set:
// each connection's own stack, else the default); a name pvectl cannot
// write into a mark is invalid input.
func (o *ownerOptions) resolveStack() (string, error) {
	name, from := o.stack, "--stack"
	if name == "" {
		name, from = strings.TrimSpace(os.Getenv(stackEnv)), stackEnv
	}
	if name == "" {
		return "", nil
	}
	if err := spec.CheckStack(name); err != nil {
		return "", invalid(fmt.Errorf("%s: %w", from, err))
	}
	return name, nil
}

// sayPruned lists, before the confirmation, what --prune removes and what
// it keeps, apart from the specs' own changes: these objects are in no
// document, so the reader has not seen them in a diff.
func sayPruned(w io.Writer, p *planner.Plan) {
	var gone, kept []string
	for _, c := range p.Changes {
		if !c.Pruned {
			continue
		}
		line := "  " + c.Address + " on node " + c.Node
		if c.Kept {
			kept = append(kept, line)
		} else {
			gone = append(gone, line)
		}
	}
	if len(gone) > 0 {
		fmt.Fprintf(w, "\n--prune destroys %d object%s this stack made that no document names:\n%s\n", len(gone), plural(len(gone)), strings.Join(gone, "\n"))
	}
	if len(kept) > 0 {
		fmt.Fprintf(w, "\n--prune keeps %d of them, protected in PVE (protection: 1):\n%s\n", len(kept), strings.Join(kept, "\n"))
	}
}

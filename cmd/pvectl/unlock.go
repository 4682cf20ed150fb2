package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/runlock"
	"github.com/pvectl/pvectl/pkg/spec"
)

type unlockOptions struct {
	g *globalOptions
	specOptions
	id string
}

func newForceUnlockCmd(g *globalOptions) *cobra.Command {
	o := &unlockOptions{g: g}
	c := &cobra.Command{
		Use:   "force-unlock LOCK_ID [-f PATH...]",
		Short: "Remove a run lock that an apply or destroy left behind",
		Long: `force-unlock removes pvectl's run lock (the pool ` + runlock.Pool + ` in PVE) whose ID
is LOCK_ID, as the error of a run that found it prints it. apply and destroy
hold the lock while they run and remove it at their end, also when
interrupted; one is left behind only when pvectl was killed or lost the
connection.

The lock is a lease that its run renews while it runs. A lease that ran
out (its run stopped writing) is removed at once. One that has not is
revoked instead: that run stops before its next write, naming the lost
lease, and removes the lock; a new run waits for that, or for the lease to
run out. So force-unlock never lets two runs write at once.

Without -f it acts on the default connection; with -f, on every
connection the specs use. A lock with another ID is left alone.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return o.run(c.Context())
		},
	}
	o.addFlags(c, "")
	return c
}

func (o *unlockOptions) run(ctx context.Context) error {
	var set *spec.Set
	conns := []string{""}
	if len(o.files) > 0 {
		var err error
		if set, err = o.load(o.g); err != nil {
			return err
		}
		if used := usedConnections(set); len(used) > 0 {
			conns = used
		}
	}
	cl, err := newClients(o.g, set, nil)
	if err != nil {
		return err
	}
	if err := cl.check(conns); err != nil {
		return err
	}
	seen := map[string]bool{}
	var misses []string
	removed := 0
	for _, name := range conns {
		c, _ := cl.Client(name) // checked above
		if seen[c.BaseURL()] {
			continue
		}
		seen[c.BaseURL()] = true
		info, err := runlock.ForceUnlock(ctx, c, o.id)
		if err != nil {
			if errors.Is(err, runlock.ErrNoSuchLock) {
				misses = append(misses, err.Error())
				continue
			}
			return &exitError{code: exitFailure, err: fmt.Errorf("force-unlock: %w", err)}
		}
		removed++
		if info.Revoked {
			fmt.Fprintf(o.g.streams.Out, "Revoked the run lock %s on %s (%s): its lease runs until %s, so that run may still be writing. "+
				"It stops before its next write and removes the lock; a new run waits for that, or for the lease to run out.\n",
				o.id, c.BaseURL(), info, info.Expires.UTC().Format("2006-01-02 15:04:05 UTC"))
			continue
		}
		fmt.Fprintf(o.g.streams.Out, "Removed the run lock %s on %s (%s).\n", o.id, c.BaseURL(), info)
	}
	if removed == 0 {
		return &exitError{code: exitFailure, err: errors.New("force-unlock: " + strings.Join(misses, "; "))}
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Exit codes (design §5).
const (
	exitOK      = 0
	exitFailure = 1 // runtime or API failure
	exitChanges = 2 // plan --detailed-exitcode: changes present
	exitInvalid = 3 // invalid input detected before any API call
)

// defaultBusyTimeout is --busy-timeout's default: long enough for the
// creates and clones an interrupted run left running, short enough that a
// forgotten lock does not hold a plan for long.
const defaultBusyTimeout = 5 * time.Minute

// Streams are the command's IO, injected so tests run the CLI in-process.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// exitError carries an exit code through cobra; its message (if any) is
// printed once by Execute, after "Error: " unless plain.
type exitError struct {
	code  int
	err   error
	plain bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func invalid(err error) error { return &exitError{code: exitInvalid, err: err} }

// globalOptions are the flags every command shares.
type globalOptions struct {
	debug       bool
	noColor     bool
	profile     string
	configFile  string
	parallelism int
	// readConcurrency is --read-concurrency; readConcurrencySet says the
	// flag was given (else the variable or the profile may set it).
	readConcurrency    int
	readConcurrencySet bool
	// cpuProfile is the hidden --cpuprofile; stopProfile ends it.
	cpuProfile     string
	stopProfile    func()
	requestTimeout time.Duration
	taskTimeout    time.Duration
	// busyTimeout is how long planning waits for guests PVE tasks hold.
	busyTimeout time.Duration
	// streams are the command's IO; Out and Err pass every write through
	// scrubber, which learns each secret as a connection or spec brings it.
	streams  Streams
	scrubber *secret.Scrubber
	// signals delivers interrupts (SIGINT, SIGTERM); tests inject their own.
	signals func() (<-chan os.Signal, func())
}

// Execute runs the CLI and returns the process exit code. Errors are mapped
// to exit codes here and only here.
func Execute(version string, args []string, streams Streams) int {
	scr := secret.NewScrubber()
	streams.Out, streams.Err = scr.Writer(streams.Out), scr.Writer(streams.Err)
	g := &globalOptions{streams: streams, scrubber: scr, signals: notifySignals}
	root := newRootCmd(version, g)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	err := root.Execute()
	if g.stopProfile != nil {
		g.stopProfile()
	}
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ee *exitError
	var diags spec.Diagnostics
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &diags):
		code = exitInvalid
	case isUsageError(err):
		code = exitInvalid
	}
	if errors.As(err, &diags) {
		n := len(diags)
		fmt.Fprintf(streams.Err, "Error: %d problem%s in the specs (nothing was sent to PVE):\n", n, plural(n))
		for _, d := range diags {
			fmt.Fprintf(streams.Err, "  %s\n", d)
		}
		return code
	}
	if err.Error() == "" {
		return code
	}
	if errors.As(err, &ee) && ee.plain {
		fmt.Fprintln(streams.Err, err.Error())
		return code
	}
	headline, todo := explain(err)
	fmt.Fprintln(streams.Err, "Error: "+headline)
	if todo != "" {
		fmt.Fprintln(streams.Err, "  "+todo)
	}
	return code
}

func newRootCmd(version string, g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "pvectl",
		Short: "Manage Proxmox VE declaratively: YAML specs, plan, apply",
		Long: `pvectl reads YAML specs for Proxmox VE resources, compares them with the
live cluster over the PVE API, prints a plan and applies it in dependency order.

Connection settings come from PROXMOX_* environment variables, a profile in the
config file (--profile), or Connection documents in the specs.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           version,
		DisableAutoGenTag: true,
	}
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if g.parallelism < 1 {
			return invalid(fmt.Errorf("--parallelism %d: want 1 or more", g.parallelism))
		}
		if f := c.Flags().Lookup("read-concurrency"); f != nil && f.Changed {
			if _, err := checkReadConcurrency("--read-concurrency", strconv.Itoa(g.readConcurrency)); err != nil {
				return err
			}
			g.readConcurrencySet = true
		}
		stop, err := startCPUProfile(g.cpuProfile)
		if err != nil {
			return err
		}
		g.stopProfile = stop
		if g.requestTimeout < 0 || g.taskTimeout < 0 || g.busyTimeout < 0 {
			return invalid(errors.New("--request-timeout, --task-timeout and --busy-timeout cannot be negative"))
		}
		return nil
	}
	root.SetVersionTemplate("pvectl {{.Version}}\n") // as `pvectl version` prints it
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return invalid(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	pf := root.PersistentFlags()
	pf.BoolVar(&g.debug, "debug", false, "trace HTTP requests on stderr (secrets redacted)")
	pf.BoolVar(&g.noColor, "no-color", false, "disable colour (also NO_COLOR, or when stdout is not a terminal)")
	pf.StringVar(&g.profile, "profile", "", "connection profile from the config file (env PVECTL_PROFILE)")
	pf.StringVar(&g.configFile, "config", "", "config file with profiles (default $PVECTL_CONFIG or ~/.config/pvectl/config.yaml)")
	pf.IntVar(&g.parallelism, "parallelism", 4, "how many changes apply at once")
	pf.IntVar(&g.readConcurrency, "read-concurrency", planner.DefaultReadConcurrency, "how many reads a plan keeps in flight per connection (env "+readConcurrencyEnv+", profile key "+readConcurrencyKey+")")
	pf.StringVar(&g.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof)")
	_ = pf.MarkHidden("cpuprofile")
	pf.DurationVar(&g.requestTimeout, "request-timeout", pve.DefaultRequestTimeout, "how long one API request may wait for its answer, and again for its body (0: no limit)")
	pf.DurationVar(&g.taskTimeout, "task-timeout", pve.DefaultTaskTimeout, "how long to wait for one PVE task (0: no limit)")
	pf.DurationVar(&g.busyTimeout, "busy-timeout", defaultBusyTimeout, "how long planning waits for guests that PVE tasks hold (locked, or still being created or cloned) before it refuses them (0: no wait)")

	root.AddCommand(
		newValidateCmd(g),
		newPlanCmd(g),
		newApplyCmd(g),
		newDestroyCmd(g),
		newForceUnlockCmd(g),
		newSimCmd(g),
		newSchemaCmd(g),
		newExplainCmd(g),
		newImportCmd(g),
		newShowCmd(g),
		newSSHCmd(g),
		newVersionCmd(version),
	)
	registerCompletions(root, g)
	return root
}

func newVersionCmd(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the pvectl version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(c.OutOrStdout(), "pvectl %s\n", version)
			return nil
		},
	}
}

// isUsageError recognises cobra's argument errors, which it returns as plain errors.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "unknown flag", "unknown shorthand flag", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// colorEnabled: colour only on a terminal, never with --no-color or NO_COLOR.
func (g *globalOptions) colorEnabled(w io.Writer) bool {
	if g.noColor {
		return false
	}
	if os.Getenv("NO_COLOR") != "" { // no-color.org: set and not empty
		return false
	}
	return isTerminal(w)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

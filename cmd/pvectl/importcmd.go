package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner"
)

type importOptions struct {
	g                    *globalOptions
	all                  bool
	node                 string
	out                  string
	outDir               string
	withGenerated        bool
	manageInfrastructure bool
	withPowerState       bool
	// adopt is --stack: the stack the imported guests are adopted into.
	adopt ownerOptions
}

// exitSkipped is import's exit code when some objects were not written
// as documents (stderr names each one and why); the others were written.
const exitSkipped = 2

func newImportCmd(g *globalOptions) *cobra.Command {
	o := &importOptions{g: g}
	c := &cobra.Command{
		Use:   "import Kind/id... | --all [--node NODE]",
		Short: "Write live resources as YAML specs that plan clean",
		Long: `import reads live objects over the default connection (PROXMOX_* variables or
--profile) and writes them as spec documents: only the keys a user manages,
without PVE's defaults and what PVE generates (a VM's vmgenid and SMBIOS
UUID) unless --with-generated, a guest's own disks as STORAGE:SIZE, its
NICs' MAC addresses kept, secrets as ${VAR} placeholders (their variables
are named on stderr). Guests get no running key unless --with-power-state.
The node's own infrastructure (a bridge with the node's address, the
installer's local and local-lvm storages, templates pvectl did not bake) is
written managed: false unless --manage-infrastructure, so that a destroy of
the documents never removes it.

import reads the live state once and plans the documents against it: one
that would not plan clean is written commented out, with why, and named on
stderr; the others are written.

Select objects as Kind/id: a guest by vmid or name (QemuVM/100), an interface
by node/iface or iface (LinuxBridge/pve/vmbr1), the others by their id
(Pool/lab, Storage/local, User/ci@pve, APIToken/ci@pve!deploy, NodeDns/pve,
NetworkApply/pve, DownloadedImage/local:iso/debian.iso, ACL by
path:principal:role). --all imports every object (of --node for the kinds
that live on a node). See docs/import.md.

Exit codes: 0 every object written, 2 written but for the objects named on
stderr (commented out, or not read), 1 API failure or a selection that finds
nothing (nothing is written), 3 invalid selection or flags.`,
		Example: "  pvectl import QemuVM/100 LinuxBridge/pve/vmbr1 Pool/lab\n  pvectl import --all --node pve -o cluster.yaml\n  pvectl import --all --out-dir specs/",
		RunE:    func(c *cobra.Command, args []string) error { return o.run(c.Context(), args) },
		// Kinds complete offline; the ids are the cluster's (see --help).
		ValidArgsFunction: func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, k := range planner.ImportableKinds() {
				if strings.HasPrefix(k+"/", toComplete) {
					out = append(out, k+"/")
				}
			}
			return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		},
	}
	c.Flags().BoolVar(&o.all, "all", false, "import every object (with --node: that node's, and the cluster-wide ones)")
	c.Flags().StringVar(&o.node, "node", "", "with --all: only this node's guests, interfaces and settings")
	c.Flags().StringVarP(&o.out, "out", "o", "", "write the documents to FILE instead of stdout")
	c.Flags().StringVar(&o.outDir, "out-dir", "", "write one file per document into DIR (made if missing)")
	c.Flags().BoolVar(&o.withGenerated, "with-generated", false, "keep what PVE generated (vmgenid, SMBIOS UUID, a container's ostype and arch)")
	c.Flags().BoolVar(&o.manageInfrastructure, "manage-infrastructure", false,
		"import the node's bridge with its address, the installer's storages and templates pvectl did not bake as managed (default: managed: false)")
	c.Flags().StringVar(&o.adopt.stack, "stack", "", "adopt the imported guests into this stack: write its ownership mark on each (a config write), so that plan lists them once no document names them and --prune may remove them")
	c.Flags().BoolVar(&o.withPowerState, "with-power-state", false, "write each guest's power state (running: true|false); without it, plan and apply leave power alone")
	return c
}

func (o *importOptions) validate(args []string) error {
	switch {
	case !o.all && len(args) == 0:
		return errors.New("nothing to import: name objects (QemuVM/100 LinuxBridge/pve/vmbr1 …) or pass --all")
	case o.all && len(args) > 0:
		return errors.New("--all imports everything: leave out " + strings.Join(args, " ") + ", or drop --all")
	case o.node != "" && !o.all:
		return errors.New("--node goes with --all (a named object is found on whatever node it is)")
	case o.out != "" && o.outDir != "":
		return errors.New("--out and --out-dir exclude each other")
	}
	return nil
}

func (o *importOptions) run(ctx context.Context, args []string) error {
	if err := o.validate(args); err != nil {
		return invalid(err)
	}
	cl, err := newClients(o.g, nil, nil)
	if err != nil {
		return invalid(err)
	}
	if err := cl.check([]string{""}); err != nil {
		return err
	}
	stack := ""
	if o.adopt.stack != "" {
		if stack, err = o.adopt.resolveStack(); err != nil {
			return err
		}
	}
	in := watchInterrupts(ctx, o.g.signals)
	defer in.close()
	conc, err := o.g.resolveReadConcurrency()
	if err != nil {
		return err
	}
	res, err := planner.Import(in.ctx, cl, planner.ImportOptions{
		Refs: args, All: o.all, Node: o.node, WithGenerated: o.withGenerated, ReadConcurrency: conc,
		ManageInfrastructure: o.manageInfrastructure, WithPowerState: o.withPowerState,
	})
	if in.interrupted() {
		return errInterrupted
	}
	if ie := (*planner.ImportError)(nil); errors.As(err, &ie) && ie.Invalid {
		return invalid(err)
	}
	if err != nil {
		return err
	}
	w := o.g.streams.Err
	for _, msg := range res.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", msg)
	}
	if len(res.Docs)+len(res.Rejected) > 0 {
		if err := o.write(res); err != nil {
			return err
		}
	}
	if vars := res.Vars(); len(vars) > 0 {
		fmt.Fprintf(w, "The documents read from the environment what PVE does not give back (secrets, a container's template): set %s before plan or apply.\n", strings.Join(vars, ", "))
	}
	for _, msg := range res.Problems {
		fmt.Fprintf(w, "Not imported: %s\n", msg)
	}
	if stack != "" {
		adopted, problems := planner.Adopt(in.ctx, cl, "", res, stack)
		if len(adopted) > 0 {
			fmt.Fprintf(w, "Adopted %d object%s into stack %s: %s\n", len(adopted), plural(len(adopted)), stack, strings.Join(adopted, ", "))
		}
		for _, msg := range problems {
			fmt.Fprintf(w, "Not adopted: %s\n", msg)
		}
		if len(problems) > 0 {
			return &exitError{code: exitFailure, err: fmt.Errorf("%d object%s not adopted into stack %s (above)", len(problems), plural(len(problems)), stack)}
		}
	}
	switch n := len(res.Docs); {
	case n == 0 && len(res.Problems) == 0:
		fmt.Fprintln(w, "Nothing to import.")
	case len(res.Problems) == 0:
		fmt.Fprintf(w, "Imported %d document%s.\n", n, plural(n))
	default:
		fmt.Fprintf(w, "Imported %d document%s; %d object%s not imported (above).\n", n, plural(n), len(res.Problems), plural(len(res.Problems)))
		return &exitError{code: exitSkipped}
	}
	return nil
}

// write puts the documents on stdout, in one file, or one per document.
func (o *importOptions) write(res *planner.ImportResult) error {
	if o.outDir == "" {
		var buf bytes.Buffer
		if err := res.Encode(&buf); err != nil {
			return err
		}
		if o.out == "" {
			_, err := o.g.streams.Out.Write(buf.Bytes())
			return err
		}
		return os.WriteFile(o.out, buf.Bytes(), 0o644)
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return err
	}
	used := map[string]bool{}
	for _, d := range append(slices.Clip(res.Docs), res.Rejected...) {
		b, err := d.YAML()
		if err != nil {
			return err
		}
		name := fileName(d.Kind, d.Name, used)
		if err := os.WriteFile(filepath.Join(o.outDir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

var unsafeFileChars = lazyre.New(`[^A-Za-z0-9._-]+`)

// fileName is a document's file in --out-dir: kind-name.yaml, lowercase,
// made safe and unique.
func fileName(kind, name string, used map[string]bool) string {
	base := strings.ToLower(kind + "-" + unsafeFileChars.ReplaceAllString(name, "_"))
	f := base + ".yaml"
	for i := 2; used[f]; i++ {
		f = fmt.Sprintf("%s-%d.yaml", base, i)
	}
	used[f] = true
	return f
}

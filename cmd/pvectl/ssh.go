package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pvectl/pvectl/pkg/planner"
	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// repinTimeout bounds reaching the guest's sshd for its host key.
const repinTimeout = 30 * time.Second

type repinOptions struct {
	g *globalOptions
	specOptions
	yes     bool
	address string
}

func newSSHCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "ssh",
		Short: "SSH chores of provisioned guests",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newRepinCmd(g))
	return c
}

func newRepinCmd(g *globalOptions) *cobra.Command {
	o := &repinOptions{g: g}
	c := &cobra.Command{
		Use:   "repin QemuVM/NAME -f PATH... [--yes]",
		Short: "Pin a guest's new SSH host key after a deliberate rebuild",
		Long: `repin reads the SSH host key a provisioned VM presents now and, once
confirmed, writes it as the pin in the VM's description ([pvectl-hostkey: …]),
in place of the key pinned before. Use it after rebuilding a guest on purpose:
provisioning refuses a guest whose key is not the pinned one.

It shows the pinned fingerprint and the presented one. The SSH handshake stops
at the host key: nothing is authenticated, no key or password is sent. The
address is --address, else the one provisioning uses: the VM's static ip
(its ipconfig0, or the spec's ip), else its DNS record (the connection's
dnsDomain and dnsServers), else its guest agent's lease; the port is the
spec's sshPort (22 by default).

Confirmation: on a terminal repin asks; elsewhere it needs --yes. The
description is written with the config's digest, so an edit made meanwhile
is refused, and only the pin changes: the rest stays byte for byte. The same
key changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return o.run(c.Context(), args[0])
		},
	}
	o.addFlags(c, "")
	c.Flags().BoolVar(&o.yes, "yes", false, "write the new pin without asking")
	c.Flags().StringVar(&o.address, "address", "", "reach the guest's sshd at HOST[:PORT] instead of its static ip")
	return c
}

func (o *repinOptions) run(ctx context.Context, addr string) error {
	set, err := o.load(o.g)
	if err != nil {
		return err
	}
	r, err := repinResource(set, addr)
	if err != nil {
		return err
	}
	if err := o.checkAddress(); err != nil {
		return err
	}
	if !o.yes && !isTerminal(o.g.streams.In) {
		return invalid(errors.New("ssh repin needs --yes when its input is not a terminal"))
	}
	cl, err := newClients(o.g, set, nil)
	if err != nil {
		return err
	}
	if err := cl.check([]string{r.Connection}); err != nil {
		return err
	}
	client, _ := cl.Client(r.Connection) // checked above
	row, err := findVM(ctx, client, r)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("ssh repin %s: %w", r.Address(), err)}
	}
	cfg, err := client.GuestConfig(ctx, pve.QEMU, row.Node, row.VMID)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("read vm %d: %w", row.VMID, err)}
	}
	desc := cfg.Get("description")
	state, err := provision.ParseDescription(desc)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("vm %d: %w", row.VMID, err)}
	}
	target, err := o.sshAddress(ctx, client, cl.Connection(r.Connection), r, row, cfg)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("ssh repin %s: %w", r.Address(), err)}
	}
	key, err := provision.ProbeHostKey(ctx, target, repinTimeout)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("ssh repin %s: %w", r.Address(), err)}
	}
	return o.write(ctx, client, r, row, cfg.Get("digest"), desc, state, provision.Pin(key), target)
}

// write shows both fingerprints and, once confirmed, writes the new pin.
func (o *repinOptions) write(ctx context.Context, client *pve.Client, r *spec.Resource, row *pve.ClusterResource,
	digest, desc string, state provision.State, pin, target string) error {
	w := o.g.streams.Out
	pinned := state.HostKey
	if pinned == "" {
		pinned = "(none)"
	}
	fmt.Fprintf(w, "%s (vm %d on %s) at %s:\n  pinned:    %s\n  presented: %s\n", r.Address(), row.VMID, row.Node, target, pinned, pin)
	if state.HostKey == pin {
		fmt.Fprintln(w, "The guest presents the pinned key: nothing to change.")
		return nil
	}
	if !o.yes {
		fmt.Fprintf(w, "\nPin the presented key? Do so only if the guest was rebuilt on purpose; otherwise someone may be intercepting the connection.\n  Only 'yes' will be accepted.\n\n  Enter a value: ")
		ok, err := readYes(ctx, o.g.streams.In)
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: exitFailure, err: errors.New("ssh repin cancelled: nothing was changed")}
		}
	}
	state.HostKey = pin
	next, err := provision.WriteDescription(desc, state)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("vm %d: %w", row.VMID, err)}
	}
	params := url.Values{"description": {next}}
	if digest != "" {
		params.Set("digest", digest)
	}
	if err := client.UpdateQemu(ctx, row.Node, row.VMID, params); err != nil {
		if pve.IsDigestMismatch(err) {
			err = fmt.Errorf("its config changed while repin ran (digest): nothing was written; run repin again")
		}
		return &exitError{code: exitFailure, err: fmt.Errorf("ssh repin %s: %w", r.Address(), err)}
	}
	fmt.Fprintf(w, "Pinned %s for %s.\n", pin, r.Address())
	return nil
}

// readYes reads one answer line; the read runs apart so that an interrupt
// ends the wait, and a closed input is a no.
func readYes(ctx context.Context, in io.Reader) (bool, error) {
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(in).ReadString('\n')
		got <- line
	}()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case line := <-got:
		return strings.TrimSpace(line) == "yes", nil
	}
}

// repinResource is the QemuVM the argument names.
func repinResource(set *spec.Set, addr string) (*spec.Resource, error) {
	r := set.Lookup(addr)
	if r == nil {
		msg := fmt.Sprintf("ssh repin %s: no such resource in the specs", addr)
		if s := set.Suggest(addr); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return nil, invalid(errors.New(msg))
	}
	if r.Kind != "QemuVM" {
		return nil, invalid(fmt.Errorf("ssh repin %s: only a QemuVM's host key is pinned", addr))
	}
	return r, nil
}

// findVM is r's VM as plan finds it: by vmid, else by its name among the
// VMs that are not templates; several of one name need a vmid. The rows
// come from the lists of the nodes /cluster/resources places VMs on: its
// own rows lack the name of a guest made a moment ago (pkg/planner
// guestfind.go guestRows).
func findVM(ctx context.Context, client *pve.Client, r *spec.Resource) (*pve.ClusterResource, error) {
	all, err := client.ClusterResources(ctx, "vm")
	if err != nil {
		return nil, fmt.Errorf("list guests: %w", err)
	}
	var nodes []string
	for _, row := range all {
		if row.Type == string(pve.QEMU) && !slices.Contains(nodes, row.Node) {
			nodes = append(nodes, row.Node)
		}
	}
	slices.Sort(nodes)
	name := r.Params.Get("name")
	if name == "" {
		name = r.Name
	}
	vmid, _ := strconv.Atoi(r.Params.Get("vmid"))
	var found []*pve.ClusterResource
	for _, node := range nodes {
		rows, err := client.NodeGuests(ctx, pve.QEMU, node)
		if err != nil {
			return nil, fmt.Errorf("list the VMs of node %s: %w", node, err)
		}
		for i := range rows {
			row := &rows[i]
			if !row.Template && ((vmid != 0 && row.VMID == vmid) || (vmid == 0 && row.Name == name)) {
				found = append(found, row)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no VM named %s in PVE (apply creates it)", name)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("name %s matches %d VMs: set vmid", name, len(found))
}

// sshAddress is host:port of the guest's sshd: --address, else the
// address provisioning would use (planner.GuestLookup): the static
// ip of its ipconfig0 or spec, else its DNS record as the connection says,
// else the guest agent's lease; at the spec's sshPort (22).
func (o *repinOptions) sshAddress(ctx context.Context, client *pve.Client, conn *spec.Connection, r *spec.Resource, row *pve.ClusterResource, cfg *pve.Config) (string, error) {
	port := 22
	if p := spec.Provisioning(r); p != nil && p.SSHPort != nil {
		port = *p.SSHPort
	}
	if o.address != "" {
		if _, _, err := net.SplitHostPort(o.address); err == nil {
			return o.address, nil // checkAddress
		}
		return net.JoinHostPort(o.address, strconv.Itoa(port)), nil
	}
	l := planner.GuestLookup(client, r, cfg, conn, row.Node, row.VMID)
	ip, err := provision.Resolve(ctx, row.Name, l, provision.Options{Timeout: repinTimeout})
	if err != nil {
		return "", fmt.Errorf("%w (or give the address with --address HOST[:PORT])", err)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port)), nil
}

// checkAddress refuses a malformed --address before any call.
func (o *repinOptions) checkAddress() error {
	if o.address == "" {
		return nil
	}
	host, port := o.address, "22"
	if h, p, err := net.SplitHostPort(o.address); err == nil {
		host, port = h, p
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, " /[]") {
		return invalid(fmt.Errorf("--address %q: want HOST or HOST:PORT", o.address))
	}
	return nil
}

package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/provision"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// The reference provider's VM conveniences that need live state (design
// §3): the address DNS holds for a VM without a static IP, the VM that
// `replace` names, `template: 1`, and the cloud-init drive PVE makes anew
// after its input changed.

// needsAddress reports whether the plan must settle r's ipconfig0 from
// DNS (else DHCP): a VM cloned from an image, or one that names a
// gateway, without ip or ipconfig0 of its own. Other VMs are left as they
// are: they may have no cloud-init at all.
func needsAddress(r *spec.Resource) bool {
	g := spec.Guest(r)
	if g.Image == nil && g.FromTemplate == nil && g.Gateway == nil {
		return false
	}
	if g.IP != nil {
		return false
	}
	_, set := r.Params.Lookup("ipconfig0")
	return !set && !slices.Contains(r.Remove, "ipconfig0")
}

// addressConfig is ipconfig0 for a VM without a static IP: the A record of
// NAME.dnsDomain asked of the connection's dnsServers (prefix /24, gateway
// as for ip), or DHCP when the servers say the name has none or the
// connection names no DNS. A server that does not answer is an error: a
// guess would switch the VM between static and DHCP.
func addressConfig(ctx context.Context, conn *spec.Connection, name string, g *spec.GuestKeys) (string, error) {
	if conn == nil || conn.DNSDomain == "" || len(conn.DNSServers) == 0 {
		return "ip=dhcp", nil
	}
	fqdn := name + "." + strings.Trim(conn.DNSDomain, ".")
	a, err := provision.LookupA(ctx, conn.DNSServers, fqdn)
	switch {
	case errors.Is(err, provision.ErrNoRecord):
		return "ip=dhcp", nil
	case err != nil:
		return "", fmt.Errorf("the address of %s (no ip given): DNS did not answer (%v): fix dnsServers, or set ip", fqdn, err)
	}
	gw := ""
	if g.Gateway != nil {
		gw = *g.Gateway
	}
	return spec.IPConfig(a.String(), gw)
}

// numericVMID reads a VMID written as a string ("105").
func numericVMID(s string) (int, bool) {
	id, err := strconv.Atoi(strings.TrimSpace(s))
	return id, err == nil && id > 0
}

// findOld finds the VM that replace names (a vmid, else a name among the
// VMs that are not templates); nil when it does not exist (any more).
// self is the vmid of the spec's own VM (0 when it has none yet).
func findOld(ix *guestIndex, old string, self int) (*guestRef, error) {
	old = strings.TrimSpace(old)
	id, byID := numericVMID(old)
	var found []*pve.ClusterResource
	switch row := ix.vmid(id); {
	case !byID:
		found = ix.named(old, false)
	case row == nil:
	case row.Type == string(pve.QEMU):
		found = append(found, row)
	default:
		return nil, fmt.Errorf("replace: %s is a %s, not a VM", old, guestNoun(row.Type))
	}
	switch {
	case len(found) == 0:
		return nil, nil
	case len(found) > 1:
		sort.Slice(found, func(i, j int) bool { return found[i].VMID < found[j].VMID })
		ids := make([]string, len(found))
		for i, f := range found {
			ids[i] = strconv.Itoa(f.VMID)
		}
		return nil, fmt.Errorf("replace: name %s matches VMs %s: write the vmid", old, strings.Join(ids, ", "))
	case found[0].Template:
		return nil, fmt.Errorf("replace: VM %d is a template: pvectl destroys only VMs with replace", found[0].VMID)
	case found[0].VMID == self:
		return nil, fmt.Errorf("replace: %s is this VM itself (vmid %d)", old, self)
	}
	f := found[0]
	return &guestRef{VMID: f.VMID, Node: f.Node, Name: f.Name, Status: f.Status}, nil
}

// planExtras adds to a create (or a replace's create) what it takes from
// live state, each shown: the template, the derived address, the VM it
// replaces.
func (k qemuKind) planExtras(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	gl := liveOf(lo)
	if err := errors.Join(gl.more().CloneErr, gl.more().Unsettled); err != nil {
		return fmt.Errorf("%s: %w", r.Address(), err)
	}
	if g := spec.Guest(r); g.Image != nil || g.FromTemplate != nil {
		kind := "full"
		if g.Full != nil && !*g.Full {
			kind = "linked"
		}
		switch {
		case g.FromTemplate == nil:
			c.Reasons = append(c.Reasons, fmt.Sprintf("%s clone of template %s", kind, gl.more().Clone))
		case templateChanges(b, r):
			c.Reasons = append(c.Reasons, fmt.Sprintf("%s clone of %s, once it is baked", kind, spec.CloneSource(r)))
		case gl.more().Clone != nil:
			c.Reasons = append(c.Reasons, fmt.Sprintf("%s clone of %s (template %s)", kind, spec.CloneSource(r), gl.more().Clone))
		default:
			c.Reasons = append(c.Reasons, fmt.Sprintf("%s clone of %s", kind, spec.CloneSource(r)))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(gl.more().Derived)) {
		if c.Action == engine.Create {
			c.Diff = append(c.Diff, compare.Diff(key, nil, gl.more().Derived[key]))
		}
		c.Reasons = append(c.Reasons, key+" from "+derivedFrom(gl.more().Derived[key]))
	}
	sort.SliceStable(c.Diff, func(i, j int) bool { return c.Diff[i].Path < c.Diff[j].Path })
	return k.planOld(b, r, gl, c)
}

func derivedFrom(ipconfig string) string {
	if ipconfig == "ip=dhcp" {
		return "DHCP (no ip given, and no address from DNS)"
	}
	return "DNS (no ip given)"
}

// planOld refuses a replace target that the specs manage, and says when
// the one found will be destroyed.
func (k qemuKind) planOld(b *engine.Builder, r *spec.Resource, gl *guestLive, c *engine.Change) error {
	g := spec.Guest(r)
	if g.Replace == nil {
		return nil
	}
	old := strings.TrimSpace(*g.Replace)
	for _, o := range b.Set.Resources {
		if o == r || o.Kind != r.Kind || o.Connection != r.Connection || o.State == spec.Absent {
			continue
		}
		if k.name(o) == old || o.Params.Get("vmid") == old || gl.more().Old != nil && specGuestOf(b, o.Connection, gl.more().Old.VMID) == o {
			return fmt.Errorf("%s: replace: %s names %s of these specs: replace is for a VM the specs do not manage (write state: absent on %s to remove it)",
				r.Address(), old, o.Address(), o.Address())
		}
	}
	if gl.more().Old != nil {
		c.Reasons = append(c.Reasons, fmt.Sprintf("then destroys VM %s, which it replaces", gl.more().Old))
	}
	return nil
}

// compareTemplate decides template: 1 of an existing VM: a VM becomes a
// template by POST …/template (which refuses a running VM), and PVE has
// no call that turns a template back.
func (k qemuKind) compareTemplate(r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	for _, d := range c.Diff {
		if d.Path != "template" {
			continue
		}
		if d.After != "1" {
			return fmt.Errorf("%s: template: VM %d is a template, and PVE cannot turn a template back into a VM: clone it (image: \"%d\") or remove template: 0", r.Address(), liveOf(lo).VMID, liveOf(lo).VMID)
		}
		if want := spec.Guest(r).Running; liveOf(lo).Status == "running" && (want == nil || *want) {
			return fmt.Errorf("%s: template: 1: VM %d is running, and PVE converts only a stopped VM: add running: false", r.Address(), liveOf(lo).VMID)
		}
	}
	return nil
}

// compareExtras adds to an update (after compareCommon decided it) the
// regeneration of the cloud-init drive and the removal of a VM that
// replace names and that is still there.
func (k qemuKind) compareExtras(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	gl := liveOf(lo)
	if gl.more().Unsettled != nil {
		return fmt.Errorf("%s: %w", r.Address(), gl.more().Unsettled)
	}
	if err := k.planOld(b, r, gl, c); err != nil {
		return err
	}
	if gl.more().Old != nil {
		c.Diff = append(c.Diff, engine.FieldDiff{Path: "replace", Before: "VM " + gl.more().Old.String(), After: nil})
		c.Action = engine.Update
	}
	for _, d := range c.Diff {
		if isCloudinitKey(compare.TopKey(d.Path)) && hasCloudinitDrive(lo.Config) {
			stateOf(c).Regenerate = true
			c.Reasons = append(c.Reasons, "the cloud-init drive is regenerated (PVE makes it anew from the config; the guest reads it at its next boot)")
			break
		}
	}
	return nil
}

// isCloudinitKey: the config keys a VM's cloud-init image is made from
// (qemu-server $confdesc_cloudinit and ipconfigN).
func isCloudinitKey(key string) bool {
	switch key {
	case "citype", "ciuser", "cipassword", "ciupgrade", "cicustom", "searchdomain", "nameserver", "sshkeys":
		return true
	}
	rest, ok := strings.CutPrefix(key, "ipconfig")
	return ok && compare.IsNumber(rest)
}

// hasCloudinitDrive: a drive of the config is a cloud-init drive
// (qemu-server drive_is_cloudinit).
func hasCloudinitDrive(cfg *pve.Config) bool {
	for key, val := range cfg.All() {
		if isDriveKey(key) && cloudinitRe.MatchString(driveFile(val)) {
			return true
		}
	}
	return false
}

// up runs once the new VM is up (created, configured, started or made a
// template): provisioning (design §4), then the VM that this one
// replaces goes — only after the new one is ready to take over.
func (k qemuKind) up(ctx context.Context, x *engine.Execution, c *engine.Change, vmid int) error {
	if err := k.provisionVM(ctx, x, c, vmid, true); err != nil {
		return err
	}
	if old := stateOf(c).Old; old != nil {
		return k.removeOld(ctx, x, old)
	}
	return nil
}

// removeOld destroys the VM that replace names, as the plan found it: a
// vmid that meanwhile holds a VM of another name is not it.
func (k qemuKind) removeOld(ctx context.Context, x *engine.Execution, old *guestRef) error {
	cfg, err := x.Client.GuestConfig(ctx, pve.QEMU, old.Node, old.VMID)
	if pve.IsNotFound(err) {
		x.Msg("vm %d, which this VM replaces, is already gone", old.VMID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read vm %d, which this VM replaces: %w", old.VMID, err)
	}
	if old.Name != "" && cfg.Get("name") != old.Name {
		return fmt.Errorf("vm %d, which this VM replaces, is now named %q, not %q: not destroying it", old.VMID, cfg.Get("name"), old.Name)
	}
	x.Msg("destroying vm %s, which this VM replaces", old)
	tmp := &engine.Change{Node: old.Node, State: &guestState{VMID: old.VMID}}
	if err := k.Remove(ctx, x, tmp); err != nil {
		return fmt.Errorf("destroy vm %d, which this VM replaces: %w", old.VMID, err)
	}
	return nil
}

// oldCalls: the VM this one replaces is stopped when running, then
// destroyed.
func (k qemuKind) oldCalls(old *guestRef) []engine.APICall {
	var calls []engine.APICall
	if old.Status == "running" {
		calls = append(calls, k.guestCall("POST", "/status/stop", "to stop VM "+old.String()+" before destroying it", old.Node, old.VMID))
	}
	return append(calls, k.guestCall("DELETE", "", "to destroy VM "+old.String()+", which this VM replaces", old.Node, old.VMID))
}

func withoutKey(m map[string]string, key string) map[string]string {
	out := maps.Clone(m)
	delete(out, key)
	if len(out) == 0 {
		return nil
	}
	return out
}

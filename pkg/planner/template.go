package planner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// templateKind manages Template, a golden image (design §4): a QEMU
// template of that name, baked from baseImage — a full clone with the
// spec's keys applied, booted, provisioned, shut down and converted with
// POST …/template — and rebuilt (removed, then baked again) when its
// recipe changes. The recipe's hash lives in the template's description
// ("[pvectl-template: recipe=<12 hex>]"), beside the user's text: no
// state file. VMs with fromTemplate clone it once it is baked (the
// implicit edge of spec's fromTemplate), in parallel.
//
// A template is not a VM with doors shut: it has a VM (vm), whose steps
// the bake uses (clone, start, shutdown, convert) and whose doors it
// passes on one by one where a template is like a VM (its state, vmid and
// node as outputs, prerequisites, removal, permissions of its reads). It
// has none of a VM's in-place updates, imports, ownership marks, or
// snapshots.
type templateKind struct{ vm qemuKind }

var templates = templateKind{vm: qemu}

// recipeRE finds the template's block in its description.
var recipeRE = lazyre.New(`\[pvectl-template: recipe=([0-9a-f]{12})\]`)

// recipe is the hash of what a template is made from: baseImage and the
// config keys (not the description, which is the user's). A change of
// either rebuilds the template.
func recipe(r *spec.Resource) string {
	h := sha256.New()
	g := spec.Guest(r)
	if g.BaseImage != nil {
		fmt.Fprintf(h, "baseImage=%s\n", strings.TrimSpace(*g.BaseImage))
	}
	for _, k := range r.Params.Keys() {
		if k == "description" {
			continue
		}
		fmt.Fprintf(h, "%s=%s\n", k, r.Params.Get(k))
	}
	for _, k := range r.Remove {
		fmt.Fprintf(h, "-%s\n", k)
	}
	// The provisioning files by name: one dropped from the list rebuilds
	// too (their contents are the provision block's, see compare).
	if p := spec.Provisioning(r); p != nil {
		for _, f := range p.Provision {
			fmt.Fprintf(h, "provision=%s\n", f)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// liveRecipe is the recipe hash the template's description records ("":
// none).
func liveRecipe(desc string) string {
	if m := recipeRE.FindStringSubmatch(desc); m != nil {
		return m[1]
	}
	return ""
}

// withRecipe returns desc with its template block set to hash: replaced
// where it stands, or appended on a line of its own; the text around it
// stays as it is, byte for byte.
func withRecipe(desc, hash string) string {
	blk := "[pvectl-template: recipe=" + hash + "]"
	if loc := recipeRE.FindStringIndex(desc); loc != nil {
		return desc[:loc[0]] + blk + desc[loc[1]:]
	}
	if desc != "" && !strings.HasSuffix(desc, "\n") {
		desc += "\n"
	}
	return desc + blk
}

// Observe finds the template by name (a template, or a VM of that name
// that a bake left unfinished), the PVE template baseImage names, and,
// for a template that exists, the linked clones that hold it.
func (k templateKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	rows, err := guestIndexOf(lc, ctx, pve.QEMU)
	if err != nil {
		return nil, err
	}
	lo, err := k.vm.Observe(ctx, lc, r)
	if err != nil {
		return nil, err
	}
	gl := liveOf(lo)
	if g := spec.Guest(r); g.BaseImage != nil {
		m := gl.setMore()
		m.Clone, m.CloneErr = pickImage(rows, *g.BaseImage)
		if m.CloneErr != nil {
			m.CloneErr = fmt.Errorf("baseImage: %s", strings.TrimPrefix(m.CloneErr.Error(), "image "))
		}
		if m.Clone != nil && !lo.Exists && engine.ParamNode(r) == "" {
			lo.Node = m.Clone.Node // the base template's node, as image
		}
	}
	cl, own := lc.Client, lo.Load
	lo.Load = func(ctx context.Context) error {
		if own != nil {
			if err := own(ctx); err != nil {
				return err
			}
		}
		if gl.more().Clone != nil {
			gl.loadCloneConfig(ctx, cl)
		}
		if lo.Exists && lo.Config.Get("template") == "1" {
			m := gl.setMore()
			m.Linked, m.LinkedErr = linkedClones(ctx, cl, lo.Node, gl.VMID, lo.Config, rows)
		}
		return nil
	}
	return lo, nil
}

// linkedClones finds the guests whose disks are layered on the
// template's base volumes. PVE tells them by name only: a linked clone on
// a file storage, ZFS or RBD names its base ("9000/base-9000-disk-0.qcow2/
// 101/vm-101-disk-0.qcow2"), and that is what keeps PVE from destroying
// the template (pve-storage src/PVE/Storage.pm volume_is_base_and_used,
// checked by qemu-server src/PVE/QemuServer.pm destroy_vm). LVM-thin's
// thin snapshots do not name it, and PVE lets their base go (the note in
// pve-storage src/PVE/Storage/LvmThinPlugin.pm): none is found there.
func linkedClones(ctx context.Context, cl *pve.Client, node string, vmid int, cfg *pve.Config, ix *guestIndex) ([]guestRef, error) {
	bases := map[string][]string{} // storage → base volume names
	for key, val := range cfg.All() {
		if !isDriveKey(key) || isCDROMValue(val) {
			continue
		}
		sid, name, ok := strings.Cut(driveFile(val), ":")
		if !ok || !strings.Contains(name, fmt.Sprintf("base-%d-", vmid)) {
			continue
		}
		bases[sid] = append(bases[sid], name)
	}
	ids := map[int]bool{}
	for _, sid := range slices.Sorted(maps.Keys(bases)) {
		vols, err := cl.StorageContent(ctx, node, sid, "images")
		if err != nil {
			return nil, fmt.Errorf("list the volumes of storage %s (for the linked clones of template %d): %w", sid, vmid, err)
		}
		for _, v := range vols {
			_, name, _ := strings.Cut(v.VolID, ":")
			for _, b := range bases[sid] {
				if strings.HasPrefix(name, b+"/") && v.VMID != vmid {
					ids[v.VMID] = true
				}
			}
		}
	}
	var out []guestRef
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		ref := guestRef{VMID: id}
		if row := ix.vmid(id); row != nil {
			ref.Node, ref.Name = row.Node, row.Name
		}
		out = append(out, ref)
	}
	return out, nil
}

// Traits are a VM's (PVE's template is a VM, and messages name it so),
// except that a template is removed before it is baked again (design §4),
// keeping its vmid: two templates of one name would leave the VMs that
// clone it, and the next plan, to guess. And it is never updated in place
// (design §4).
func (templateKind) Traits() engine.KindTraits {
	t := qemuTraits
	t.CreatesFirst = nil
	t.Rebuilt = "a template is kept as it is or rebuilt, never updated in place: a change of its recipe (baseImage, a PVE key, the list of provisioning files) or of a provisioning file removes it and bakes it again with the same vmid; the VMs cloned from it keep what they were made with"
	return t
}

func (k templateKind) CheckCreate(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	return k.planBake(b, r, lo, c)
}

// planBake shows what a bake clones and provisions (with the notice when
// no SSH key is to be had for it), and refuses one whose base is not
// found.
func (k templateKind) planBake(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	gl := liveOf(lo)
	if gl.more().CloneErr != nil {
		return fmt.Errorf("%s: %w", r.Address(), gl.more().CloneErr)
	}
	c.Reasons = append(c.Reasons, fmt.Sprintf("baked from template %s: full clone, boot, provision, shut down, convert into a template", gl.more().Clone))
	// What the bake's provisioning runs: from the description the clone
	// gets (the spec's, else its base template's).
	desc := gl.more().CloneConfig.Get("description")
	if text, set := r.Params.Lookup("description"); set {
		desc = marks.WithBlocks(text, desc)
	}
	if err := planProvision(r, c, desc, true); err != nil {
		return err
	}
	noteMissingKey(b, r, c)
	return nil
}

// Compare keeps a template whose recipe block matches the spec, and
// rebuilds any other: a changed recipe, a template pvectl did not bake, a
// VM whose bake did not finish. A rebuild is refused while linked clones
// hold the template.
func (k templateKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	gl := liveOf(lo)
	want, have := recipe(r), liveRecipe(lo.Config.Get("description"))
	var why string
	switch {
	case lo.Config.Get("template") != "1":
		why = fmt.Sprintf("VM %d is named %s but is not a template: a bake that did not finish", gl.VMID, k.vm.name(r))
	case have == "":
		why = "the template has no [pvectl-template: …] block: pvectl did not bake it"
	case have != want:
		why = "its recipe changed (baseImage, config keys or the list of provisioning files)"
		c.Diff = append(c.Diff, engine.FieldDiff{Path: "recipe", Before: have, After: want})
	default:
		// A provisioning file that changed since the bake (or
		// forceConfigCheck) rebuilds it: the description's provision
		// block says what ran, as on any VM.
		steps, err := pendingProvision(r, lo.Config.Get("description"))
		if err != nil {
			return err
		}
		if len(steps) > 0 {
			why = "its provisioning changed: " + stepList(steps)
		}
	}
	if why == "" {
		c.Action, c.Reasons = engine.NoOp, []string{"recipe unchanged"}
		return nil
	}
	if err := k.refuseLinked(b, r, gl, "rebuild"); err != nil {
		return err
	}
	if err := b.Replace(r, c, why); err != nil {
		return err
	}
	stateOf(c).Note = marks.UserDescription(lo.Config.Get("description"))
	return k.planBake(b, r, lo, c)
}

// CheckRemove refuses to delete a template that linked clones still hold.
func (k templateKind) CheckRemove(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj) error {
	return k.refuseLinked(b, r, liveOf(lo), "remove")
}

// refuseLinked is the plan's refusal of what PVE would refuse: destroying
// a template whose base volumes linked clones use ("base volume '…' is
// still in use by linked cloned", qemu-server QemuServer.pm destroy_vm).
// Clones that this plan destroys first do not count.
func (k templateKind) refuseLinked(b *engine.Builder, r *spec.Resource, gl *guestLive, what string) error {
	if gl.more().LinkedErr != nil {
		return fmt.Errorf("%s: cannot %s template %d: whether linked clones hold it is unknown: %w", r.Address(), what, gl.VMID, gl.more().LinkedErr)
	}
	var holders []string
	for _, l := range gl.more().Linked {
		if o := specGuestOf(b, r.Connection, l.VMID); o != nil && (b.Opts.Destroy || o.State == spec.Absent) {
			continue
		}
		holders = append(holders, "VM "+l.String())
	}
	if len(holders) == 0 {
		return nil
	}
	return fmt.Errorf("%s: cannot %s template %d: linked clones use its disks as their base: %s; PVE refuses to destroy it while they exist (\"base volume … is still in use by linked cloned\"): destroy them first, or make them full clones (full: true) next time",
		r.Address(), what, gl.VMID, strings.Join(holders, ", "))
}

// Create bakes the template: a full clone of baseImage with the spec's
// keys, booted, provisioned, shut down, its recipe written into its
// description (after the user's text), converted into a template.
func (k templateKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	st := stateOf(c)
	if st.Clone == nil {
		return fmt.Errorf("%s: no base template was found at plan time", c.Address)
	}
	vmid, err := k.vm.cloneVM(ctx, x, c)
	if err != nil {
		return err
	}
	x.Msg("starting vm %d to bake it", vmid)
	if err := x.Client.GuestPower(ctx, pve.QEMU, c.Node, vmid, "start", nil); err != nil {
		return fmt.Errorf("start vm %d: %w", vmid, err)
	}
	if err := k.bakeProvision(ctx, x, c, vmid); err != nil {
		return err
	}
	x.Msg("shutting down vm %d (a hard stop after %s)", vmid, durfmt.Format(shutdownTimeout*time.Second))
	if err := k.vm.shutdown(ctx, x, c.Node, vmid); err != nil {
		return err
	}
	if err := k.writeRecipe(ctx, x, c, vmid); err != nil {
		return err
	}
	return k.vm.toTemplate(ctx, x, c.Node, vmid)
}

// bakeProvision runs the template's provisioning on the booted VM (the
// planner's provisionGuest, as for any VM made in this run): each file's
// hash lands in the description as it succeeds.
func (k templateKind) bakeProvision(ctx context.Context, x *engine.Execution, c *engine.Change, vmid int) error {
	_, err := provisionGuest(ctx, x, c.Resource, provisionTarget{Node: c.Node, VMID: vmid, Name: k.vm.name(c.Resource), New: true})
	if err != nil {
		return fmt.Errorf("bake vm %d: %w", vmid, err)
	}
	return nil
}

// ReadCalls: a VM's, and the template baseImage names, which the guest
// lists show only to a token that may audit it.
func (k templateKind) ReadCalls(r *spec.Resource) []engine.APICall {
	calls := k.vm.ReadCalls(r)
	if g := spec.Guest(r); g.BaseImage != nil {
		path, why := "/vms", "to find the template baseImage names (PVE lists only the guests a token may audit)"
		if id, ok := numericVMID(*g.BaseImage); ok {
			path, why = vmPath(id), "to see the template baseImage names (PVE hides the guests a token may not audit)"
		}
		calls[0] = calls[0].With(engine.NeedPriv(path, why, "VM.Audit"))
	}
	return calls
}

// ChangeCalls: a bake starts and shuts down the VM it converts, writes
// the recipe into its description and converts it.
func (k templateKind) ChangeCalls(c *engine.Change, lo *engine.LiveObj) []engine.APICall {
	calls := k.vm.ChangeCalls(c, lo)
	if c.Action == engine.Create || c.Action == engine.Replace {
		id, _ := specVMID(c.Resource)
		why := "to start and shut down the VM the template is baked in"
		recipe := "to write the recipe into the template's description"
		calls = append(calls, k.vm.guestCall("POST", "/status/start", why, c.Node, id), k.vm.guestCall("POST", "/status/shutdown", why, c.Node, id),
			// update_vm_api checks the description's category beyond the
			// config write's rule (qemu-server API2/Qemu.pm).
			k.vm.guestCall("POST", "/config", recipe, c.Node, id).With(engine.NeedPriv(vmPath(id), recipe, "VM.Config.Options")),
			k.vm.guestCall("POST", "/template", "to convert the baked VM into a template", c.Node, id))
	}
	return calls
}

// writeRecipe sets the recipe block in the description as it is now
// (provisioning wrote its blocks there), with the user's note of the
// template this one replaces when the spec gives no description.
func (k templateKind) writeRecipe(ctx context.Context, x *engine.Execution, c *engine.Change, vmid int) error {
	cfg, err := x.Client.GuestConfig(ctx, pve.QEMU, c.Node, vmid)
	if err != nil {
		return fmt.Errorf("read config of vm %d: %w", vmid, err)
	}
	desc := cfg.Get("description")
	if _, set := c.Resource.Params.Lookup("description"); !set && marks.UserDescription(desc) == "" && stateOf(c).Note != "" {
		desc = marks.WithBlocks(stateOf(c).Note, desc)
	}
	values := url.Values{"description": {withRecipe(desc, recipe(c.Resource))}, "digest": {cfg.Get("digest")}}
	if err := x.Client.UpdateGuest(ctx, pve.QEMU, c.Node, vmid, values); err != nil {
		return fmt.Errorf("write the recipe into the description of vm %d: %w", vmid, err)
	}
	return nil
}

// Update is never planned: a template is kept or rebuilt.
func (k templateKind) Update(context.Context, *engine.Execution, *engine.Change) error {
	return errors.New("internal error: a template is never updated in place")
}

// fieldEffect: every key that goes into the recipe rebuilds the template
// (compare); the keys of how the bake connects, and the description, are
// used by the bake only; name and vmid find the template as they find a
// VM; template has its one value (the spec facts say so).
func (k templateKind) fieldEffect(ks *spec.KindSpec, key, sub string) (Effect, bool) {
	switch key {
	case "sshUser", "sshPort", "sshPrivateKey", "provisionTimeout":
		return Effect{Kind: CreateOnly, Why: "how the bake reaches the VM it provisions, not part of the recipe"}, true
	case "description":
		return Effect{Kind: CreateOnly, Why: "written when the template is baked (the user's text, then pvectl's blocks); not part of the recipe"}, true
	case "template":
		return Effect{}, false
	case "vmid":
		return k.vm.fieldEffect(ks, key, sub)
	case "name":
		return Effect{Kind: Names, Why: "without vmid, name is how pvectl finds the template",
			Note: "with vmid set, the plan refuses a new name while that vmid holds the template of the old one"}, true
	case "node":
		return Effect{Kind: Replaces, Why: "node is part of the recipe: the template is removed and baked again on the new node (it is not migrated)"}, true
	case "provision":
		return Effect{Kind: Replaces, Why: "the list of provisioning files is part of the recipe, and a listed file whose contents changed rebuilds it too"}, true
	case "forceConfigCheck":
		return Effect{Kind: Replaces, Why: "with forceConfigCheck: true every provisioning file runs again at each apply, which for a template is a rebuild at each apply"}, true
	}
	return Effect{Kind: Replaces, Why: "it is part of the recipe: the template is removed and baked again with the same vmid, and the VMs cloned from it keep what they were made with"}, true
}

// cloneSource finds, at apply time, the template a fromTemplate VM
// clones: the vmid and node the Template's change produced in this apply
// (outputs.go; the VM depends on it), else the template the plan found.
func cloneSource(x *engine.Execution, c *engine.Change) *guestRef {
	addr := spec.CloneSource(c.Resource)
	conn := c.Resource.Connection
	id, ok := x.Outputs.Produced(conn, addr, "vmid")
	if addr == "" || !ok {
		return stateOf(c).Clone
	}
	vmid, err := strconv.Atoi(id)
	if err != nil {
		return stateOf(c).Clone
	}
	node, _ := x.Outputs.Produced(conn, addr, "node")
	name, _ := x.Outputs.Produced(conn, addr, "name")
	return &guestRef{VMID: vmid, Node: node, Name: name}
}

// findTemplate finds the QEMU template named exactly name (nil: none, or
// not one alone).
func findTemplate(ix *guestIndex, name string) *guestRef {
	var found *guestRef
	for _, row := range ix.named(name, true) {
		if row.Type != string(pve.QEMU) || !row.Template {
			continue
		}
		if found != nil {
			return nil
		}
		found = &guestRef{VMID: row.VMID, Node: row.Node, Name: row.Name}
	}
	return found
}

// templateChanges reports whether the Template that r clones is baked (or
// rebuilt) by this plan: as far as the plan got, the resource's live
// object is missing or not kept.
func templateChanges(b *engine.Builder, r *spec.Resource) bool {
	o := b.ResourceAt(r.Connection, spec.CloneSource(r))
	if o == nil {
		return false
	}
	lo := b.Obs.Objs[o.Address()]
	return lo == nil || !lo.Exists || lo.Config.Get("template") != "1" || liveRecipe(lo.Config.Get("description")) != recipe(o)
}

// NotImported: PVE keeps a template's config but not its recipe (the
// base it was baked from, the provisioning files), so an imported
// Template could not plan clean; import writes PVE's templates as QemuVMs
// with template: true. importerOf says this reason for Template instead
// of a bare "cannot be imported".
func (templateKind) NotImported() string {
	return "PVE does not keep what a template was baked from (baseImage, the provisioning files); templates are imported as QemuVM with template: true"
}

// The doors a template passes on to its VM: a template is removed, read
// back, numbered, placed and permitted as a VM is.

func (k templateKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	return k.vm.Remove(ctx, x, c)
}

func (k templateKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	return k.vm.Current(ctx, cl, c)
}

func (k templateKind) NewState(lo *engine.LiveObj) any { return k.vm.NewState(lo) }

func (k templateKind) DecodeState(raw json.RawMessage) (any, error) { return k.vm.DecodeState(raw) }

func (k templateKind) Prereqs(r *spec.Resource, node string, lo *engine.LiveObj) []engine.Prereq {
	return k.vm.Prereqs(r, node, lo)
}

func (k templateKind) Outputs(r *spec.Resource, lo *engine.LiveObj, c *engine.Change) map[string]string {
	return k.vm.Outputs(r, lo, c)
}

package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/spec"
)

// qemuKind manages QemuVM: identity is vmid if set, else the VM name. On
// top of what guests share it clones from an image (qemu_clone.go), takes
// an address from DNS, replaces an older VM, converts into a template and
// regenerates the cloud-init drive (qemu_conv.go).
type qemuKind struct{ guest }

const qemuCreatePath = "/nodes/{node}/qemu"

var qemu = qemuKind{guest{
	typ: pve.QEMU, noun: "vm", nameParam: "name", createPath: qemuCreatePath,
	notInConfig: map[string]bool{
		"node": true, "vmid": true, "pool": true, "start": true, "storage": true,
		"unique": true, "archive": true, "live-restore": true, "bwlimit": true,
		"import-working-storage": true, "force": true, "ha-managed": true,
	},

	specKind:          spec.KindQemuVM,
	cli:               "qm",
	configMethod:      "POST",
	quickConfig:       pve.QemuConfigIsQuick,
	option:            acl.QemuOption,
	ownValuePerms:     qemuValuePerms,
	findNeeds:         qemuFindNeeds,
	createNeeds:       qemuCreateNeeds,
	createPrereqs:     qemuCreatePrereqs,
	isDisk:            acl.IsQemuDrive,
	isVolumeKey:       isDriveKey,
	diskContent:       "images",
	defaultStorage:    qemuDefaultStorage,
	moveSub:           "/move_disk",
	moveFormat:        true,
	migrateNote:       "a running VM migrates online (with-local-disks when it has disks on storages of its node), a stopped one offline; it keeps its vmid",
	checksMigration:   true,
	migrationBlockers: qemuMigrationBlockers,
	ownPending:        qemuPending,
	rebootCheck:       qemuRebootCheck,
}}

var qemuTraits = qemu.guestTraits()

func (qemuKind) Traits() engine.KindTraits { return qemuTraits }

// Observe finds the VM as guests are found, and settles what its change
// takes from live state beside it: the template an image names (and, for
// a create, its config), the VM that replace names, and an address from
// DNS.
func (k qemuKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	g := spec.Guest(r)
	var rows *guestIndex
	if g.Image != nil || g.Replace != nil || g.FromTemplate != nil {
		var err error
		if rows, err = guestIndexOf(lc, ctx, pve.QEMU); err != nil {
			return nil, err
		}
	}
	lo, err := k.guest.Observe(ctx, lc, r)
	if err != nil {
		return nil, err
	}
	gl := liveOf(lo)
	var unsettled []error
	if g.Image != nil {
		m := gl.setMore()
		m.Clone, m.CloneErr = pickImage(rows, *g.Image)
		if m.Clone != nil && !lo.Exists && engine.ParamNode(r) == "" {
			lo.Node = m.Clone.Node // design §3: the template's node
		}
	}
	if g.FromTemplate != nil && !lo.Exists {
		// The template as it is now; one baked in this run is taken
		// from its change at apply time (cloneSource).
		m := gl.setMore()
		m.Clone = findTemplate(rows, strings.TrimSpace(*g.FromTemplate))
		if m.Clone != nil && engine.ParamNode(r) == "" {
			lo.Node = m.Clone.Node
		}
	}
	if g.Replace != nil {
		old, err := findOld(rows, *g.Replace, gl.VMID)
		if err != nil {
			unsettled = append(unsettled, err)
		}
		gl.setMore().Old = old
	}
	if err := errors.Join(unsettled...); err != nil {
		gl.setMore().Unsettled = err
	}
	if err := cloneSourceDown(lc, gl.more().Clone, lo.Exists); err != nil {
		return nil, err
	}
	// The reads below run with the other loads; what they cannot settle
	// fails only a change that needs it.
	var loads []func(context.Context)
	if gl.more().Clone != nil && !lo.Exists {
		cl := lc.Client
		loads = append(loads, func(ctx context.Context) { gl.loadCloneConfig(ctx, cl) })
	}
	if needsAddress(r) {
		settings := lc.Settings
		loads = append(loads, func(ctx context.Context) {
			v, err := addressConfig(ctx, settings, k.name(r), g)
			m := gl.setMore()
			if err != nil {
				m.Unsettled = errors.Join(m.Unsettled, err)
				return
			}
			m.Derived = map[string]string{"ipconfig0": v}
		})
	}
	if len(loads) > 0 {
		own := lo.Load
		lo.Load = func(ctx context.Context) error {
			for _, load := range loads {
				load(ctx)
			}
			if own != nil {
				return own(ctx)
			}
			return nil
		}
	}
	return lo, nil
}

// loadCloneConfig reads the config of the template gl clones (a create
// that clones takes its description from it); a failed read is CloneErr.
func (gl *guestLive) loadCloneConfig(ctx context.Context, cl *pve.Client) {
	m := gl.setMore()
	src := m.Clone
	cfg, err := cl.GuestConfig(ctx, pve.QEMU, src.Node, src.VMID)
	if err != nil {
		m.CloneErr = fmt.Errorf("read config of template %d: %w", src.VMID, err)
		return
	}
	m.CloneConfig = cfg
}

// CheckCreate shows what a create takes from live state: the template it
// clones (which must be found), the derived address, the VM it replaces.
func (k qemuKind) CheckCreate(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if err := k.planExtras(b, r, lo, c); err != nil {
		return err
	}
	if spec.Guest(r).FromTemplate == nil && stateOf(c).Clone == nil {
		c.Reasons = append(c.Reasons, importGrowReasons(r.Params.Map())...)
	}
	return k.planProvision(b, r, lo, c)
}

// Compare compares the VM and adds what provisioning will run.
func (k qemuKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if err := k.compareVM(b, r, lo, c); err != nil {
		return err
	}
	return k.planProvision(b, r, lo, c)
}

// planProvision: what provisioning runs on the VM once c is done, from
// the description it will have — the live one, or for a new VM the
// spec's (else its template's, which a clone copies) — and the notice
// when no SSH key is to be had for it.
func (k qemuKind) planProvision(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	if c.Action == engine.Delete {
		return nil
	}
	g := spec.Guest(r)
	st, gl := stateOf(c), liveOf(lo)
	var desc string
	var willRun bool
	if c.Action == engine.Create || c.Action == engine.Replace {
		desc = r.Params.Get("description")
		if st.Clone != nil && gl.more().CloneConfig != nil {
			// The clone copies its template's description; the spec's
			// text replaces the user's part and keeps the blocks.
			desc = gl.more().CloneConfig.Get("description")
			if text, set := r.Params.Lookup("description"); set {
				desc = marks.WithBlocks(text, desc)
			}
		}
		willRun = g.Running != nil && *g.Running
		if st.Clone != nil {
			willRun = g.Running == nil || *g.Running // a clone is started
		}
	} else {
		desc = lo.Config.Get("description")
		willRun = g.Running != nil && *g.Running || g.Running == nil && gl.Status == "running"
	}
	if r.Params.Get("template") == "1" {
		willRun = false
	}
	if err := planProvision(r, c, desc, willRun); err != nil {
		return err
	}
	noteMissingKey(b, r, c)
	return nil
}

func (k qemuKind) compareVM(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	done, err := k.compareConfig(b, r, lo, c)
	if err != nil {
		return err
	}
	if done {
		if c.Action == engine.Replace {
			return k.planExtras(b, r, lo, c)
		}
		return nil
	}
	if err := k.compareTemplate(r, lo, c); err != nil {
		return err
	}
	// A template is made by POST …/template (which turns the disks into
	// base volumes), not by writing the flag.
	if _, ok := c.Params["template"]; ok {
		c.Params = withoutKey(c.Params, "template")
	}
	k.compareCommon(r, lo, c)
	return k.compareExtras(b, r, lo, c)
}

// Create makes the VM (a clone of the plan's template, or from its
// parameters), converts it into a template or starts it as asked, and
// once it is up destroys the VM it replaces.
func (k qemuKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	st := stateOf(c)
	r := c.Resource
	g := spec.Guest(r)
	var vmid int
	var err error
	start := g.Running != nil && *g.Running
	if g.FromTemplate != nil {
		src := cloneSource(x, c)
		if src == nil {
			return fmt.Errorf("fromTemplate: template %s was not found (it is neither in PVE nor baked by this plan)", *g.FromTemplate)
		}
		st.Clone = src
		if engine.ParamNode(r) == "" {
			c.Node = src.Node // a clone is made on its template's node
		}
	}
	if st.Clone != nil {
		vmid, err = k.cloneVM(ctx, x, c)
		// The reference provider starts what it clones.
		start = g.Running == nil || *g.Running
	} else {
		params := k.createParams(c)
		params.Del("template") // POST …/template converts it, after
		grows := importGrows(params)
		if vmid, err = k.createGuest(ctx, x, c, params); err == nil {
			err = growImported(ctx, x, c.Node, vmid, grows)
		}
	}
	if err != nil {
		return err
	}
	switch {
	case r.Params.Get("template") == "1":
		if err := k.toTemplate(ctx, x, c.Node, vmid); err != nil {
			return err
		}
	case start:
		x.Msg("starting vm %d", vmid)
		if err := x.Client.GuestPower(ctx, pve.QEMU, c.Node, vmid, "start", nil); err != nil {
			return fmt.Errorf("start vm %d: %w", vmid, err)
		}
	}
	return k.up(ctx, x, c, vmid)
}

// Update migrates the guest if its node changed, changes its config
// and disks, reboots it for pending changes when asked, and reconciles
// pool and power.
func (k qemuKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	st := stateOf(c)
	if err := k.migrate(ctx, x, c); err != nil {
		return err
	}
	if err := k.updateConfig(ctx, x, c); err != nil {
		return err
	}
	if st.Regenerate {
		x.Msg("regenerating the cloud-init drive of vm %d", st.VMID)
		if err := x.Client.RegenerateCloudinit(ctx, c.Node, st.VMID); err != nil {
			return fmt.Errorf("regenerate the cloud-init drive of vm %d: %w", st.VMID, err)
		}
	}
	if err := k.applyPending(ctx, x, c); err != nil {
		return err
	}
	if err := k.updateCommon(ctx, x, c); err != nil {
		return err
	}
	if slices.ContainsFunc(c.Diff, func(d engine.FieldDiff) bool { return d.Path == "template" && d.After == "1" }) {
		if err := k.toTemplate(ctx, x, c.Node, st.VMID); err != nil {
			return err
		}
	}
	return k.Provision(ctx, x, c)
}

// Provision runs the provisioning files of the VM (the whole of a change
// that needs nothing else, the end of an update), then destroys the VM
// it replaces, if any.
func (k qemuKind) Provision(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	st := stateOf(c)
	if err := k.provisionVM(ctx, x, c, st.VMID, false); err != nil {
		return err
	}
	if st.Old != nil {
		return k.removeOld(ctx, x, st.Old)
	}
	return nil
}

// provisionVM runs what is pending of the VM's provisioning (nothing for
// a template); isNew says the VM was made in this run.
func (k qemuKind) provisionVM(ctx context.Context, x *engine.Execution, c *engine.Change, vmid int, isNew bool) error {
	r := c.Resource
	if r.Params.Get("template") == "1" {
		return nil
	}
	_, err := provisionGuest(ctx, x, r, provisionTarget{Node: c.Node, VMID: vmid, Name: k.name(r), New: isNew})
	if err == nil {
		return nil
	}
	// Say what was done before provisioning failed: the VM stays (a
	// rerun provisions it, nothing is created twice), and so does the
	// VM it was to replace.
	done := ""
	switch {
	case isNew:
		done = fmt.Sprintf("created vm %d on %s", vmid, c.Node)
	case c.Action != engine.Provision && len(c.Diff) > 0:
		done = fmt.Sprintf("updated vm %d", vmid)
	}
	if old := stateOf(c).Old; old != nil {
		if done != "" {
			done += ", "
		}
		done += fmt.Sprintf("kept vm %d that it replaces", old.VMID)
	}
	if done == "" {
		return err
	}
	return fmt.Errorf("%s; provisioning failed: %w", done, err)
}

// toTemplate converts the stopped VM into a template.
func (k qemuKind) toTemplate(ctx context.Context, x *engine.Execution, node string, vmid int) error {
	x.Msg("converting vm %d into a template", vmid)
	if err := x.Client.TemplateGuest(ctx, pve.QEMU, node, vmid); err != nil {
		return fmt.Errorf("convert vm %d into a template: %w", vmid, err)
	}
	return nil
}

// ReadCalls: the guest index, and the VMs image and replace name.
func (k qemuKind) ReadCalls(r *spec.Resource) []engine.APICall {
	needs := k.listNeeds(r)
	g := spec.Guest(r)
	for _, ref := range []struct {
		key string
		val *string
	}{{"image", g.Image}, {"replace", g.Replace}} {
		if ref.val == nil {
			continue
		}
		path, why := "/vms", fmt.Sprintf("to find the VM that %s names (PVE lists only the guests a token may audit)", ref.key)
		if id, ok := numericVMID(*ref.val); ok {
			path, why = vmPath(id), fmt.Sprintf("to see the VM that %s names (PVE hides the guests a token may not audit)", ref.key)
		}
		needs = append(needs, engine.NeedPriv(path, why, "VM.Audit"))
	}
	return []engine.APICall{engine.Call("GET", "/cluster/resources", "to find the VM").With(needs...)}
}

// ChangeCalls: a guest's calls, a clone's instead of the create for a VM
// made from a template, the conversions and regeneration, the VM it
// replaces (replace:) and what provisioning writes and asks.
func (k qemuKind) ChangeCalls(c *engine.Change, lo *engine.LiveObj) []engine.APICall {
	st := stateOf(c)
	gl := liveOf(lo)
	var calls []engine.APICall
	switch {
	case st.Clone != nil && (c.Action == engine.Create || c.Action == engine.Replace):
		if c.Action == engine.Replace {
			calls = k.removeCalls(c.Node, lo, st.VMID)
		}
		calls = append(calls, k.cloneCall(c.Node, c.Resource, st.Clone, gl.more().CloneConfig).With(k.ownerPerms(c)...))
		calls = append(calls, k.createExtraCalls(c)...)
	case c.Action == engine.Create || c.Action == engine.Replace:
		calls = append(k.guest.ChangeCalls(c, lo), k.createExtraCalls(c)...)
	default:
		calls = k.guest.ChangeCalls(c, lo)
		if c.Action == engine.Update {
			if st.Regenerate {
				calls = append(calls, k.guestCall("PUT", "/cloudinit", "to regenerate the cloud-init drive", c.Node, st.VMID))
			}
			for _, d := range c.Diff {
				if d.Path == "template" {
					calls = append(calls, k.guestCall("POST", "/template", "to convert the VM into a template", c.Node, st.VMID))
				}
			}
		}
	}
	id := st.VMID
	if c.Action == engine.Create || c.Action == engine.Replace {
		id, _ = specVMID(c.Resource)
		// What the plan derived (ipconfig0 from DNS) is set at create too.
		onGuest := func(why string, privs ...string) engine.PermNeed {
			n := engine.NeedPriv(vmPath(id), why, privs...)
			if pool := c.Resource.Params.Get("pool"); pool != "" {
				n.Or = "/pool/" + pool
			}
			return n
		}
		if needs := k.settingPerms(st.Derived, nil, nil, setting{onGuest: onGuest}); len(needs) > 0 {
			// create_vm checks them with the create's other settings.
			calls = append(calls, engine.APICall{Why: "to set what the plan derived", Handler: needs})
		}
	}
	if st.Old != nil && (c.Action == engine.Create || c.Action == engine.Replace || c.Action == engine.Update || c.Action == engine.Provision) {
		calls = append(calls, k.oldCalls(st.Old)...)
	}
	if len(c.Provision) > 0 {
		// update_vm_api checks the description's category
		// (VM.Config.Options) beyond the config write's rule.
		calls = append(calls, k.guestCall("POST", "/config", "to record provisioning (what ran, the SSH host key) in the VM's description", c.Node, id).
			With(engine.NeedPriv(vmPath(id), "to record provisioning (what ran, the SSH host key) in the VM's description", "VM.Config.Options")))
		if g := spec.Guest(c.Resource); g.IP == nil {
			calls = append(calls, k.guestCall("GET", "/agent/network-get-interfaces", "to ask the guest agent for the VM's address (no ip given)", c.Node, id))
		}
	}
	return calls
}

// createExtraCalls: a disk imported at the image's size is grown; a new
// template is converted; a clone is started unless running: false (a
// plain create's start is among the guest's create calls).
func (k qemuKind) createExtraCalls(c *engine.Change) []engine.APICall {
	r := c.Resource
	id, _ := specVMID(r)
	var calls []engine.APICall
	if stateOf(c).Clone == nil && len(importGrowReasons(r.Params.Map())) > 0 {
		calls = append(calls, k.guestCall("PUT", "/resize", "to grow a disk imported at the image's size", c.Node, id))
	}
	if r.Params.Get("template") == "1" {
		return append(calls, k.guestCall("POST", "/template", "to convert the VM into a template", c.Node, id))
	}
	if g := spec.Guest(r); stateOf(c).Clone != nil && (g.Running == nil || *g.Running) {
		start := k.guestCall("POST", "/status/start", "to start the VM (a clone is started unless running: false)", c.Node, id)
		start.Pool = r.Params.Get("pool")
		return append(calls, start)
	}
	return calls
}

// fieldEffect: the clone keys act at create only, the conveniences are
// the PVE keys they stand for, provisioning keys are not PVE's.
func (k qemuKind) fieldEffect(ks *spec.KindSpec, key, sub string) (Effect, bool) {
	update := ks.Update.String()
	switch key {
	case "image", "full", "fromTemplate":
		return Effect{Kind: CreateOnly, Why: "read when the VM is cloned; a VM that exists keeps the disks it was made with"}, true
	case "ip", "gateway":
		return Effect{Kind: InPlace, How: update, Note: "written as ipconfig0; the cloud-init drive is regenerated (PUT …/cloudinit), the guest reads it at its next boot"}, true
	case "vlan", "bridge":
		return Effect{Kind: InPlace, How: update, Note: "written as net0's tag and bridge", Live: k.fieldLive("net0", key)}, true
	case "sshKeys":
		return Effect{Kind: InPlace, How: update, Note: "written as sshkeys; the cloud-init drive is regenerated (PUT …/cloudinit)"}, true
	case "provision", "forceConfigCheck":
		return Effect{Kind: InPlace, How: "ansible-playbook / puppet apply over SSH",
			Note: "nothing in PVE changes but the description's [pvectl-provision: …] block: new and changed files (all with forceConfigCheck) run at the next apply, once the VM is up"}, true
	case "sshUser", "sshPort", "sshPrivateKey", "provisionTimeout":
		return Effect{Kind: InPlace, Note: "used by provisioning only: nothing in PVE changes"}, true
	case "replace":
		return Effect{Kind: InPlace, How: "DELETE /nodes/{node}/qemu/{vmid} of the VM it names", Note: "the named VM is destroyed once this one is up; one that does not exist is nothing to do"}, true
	case "template":
		return Effect{Kind: InPlace, How: "POST /nodes/{node}/qemu/{vmid}/template",
			Note: "a stopped VM becomes a template; PVE cannot turn a template back into a VM, so 1 → 0 is refused at plan time"}, true
	}
	if isCloudinitKey(key) {
		e, ok := k.guest.fieldEffect(ks, key, sub)
		e.Note = strings.TrimSpace(e.Note + " The cloud-init drive is regenerated (PUT …/cloudinit).")
		return e, ok
	}
	return k.guest.fieldEffect(ks, key, sub)
}

func (k qemuKind) fieldLive(key, sub string) *pve.LiveRule {
	r := pve.GuestLiveRule(k.typ, key, sub)
	return &r
}

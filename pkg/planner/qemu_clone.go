package planner

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A QemuVM with `image` is made by cloning an existing PVE template
// (design §3): the template is picked at plan time, the clone made with
// POST …/clone, and the spec's keys applied to it in one config update
// with the clone's digest.

// pickImage finds the template image names: a VMID (numeric string) or a
// part of a template's name that only one template has; a template named
// exactly image wins over those that merely contain it.
func pickImage(ix *guestIndex, image string) (*guestRef, error) {
	image = strings.TrimSpace(image)
	templates := ix.templates
	ref := func(t *pve.ClusterResource) *guestRef { return &guestRef{VMID: t.VMID, Node: t.Node, Name: t.Name} }
	if id, err := strconv.Atoi(image); err == nil {
		row := ix.vmid(id)
		switch {
		case row == nil:
			return nil, fmt.Errorf("image %q: no template has vmid %d (templates: %s)", image, id, candidates(templates))
		case row.Type != string(pve.QEMU) || !row.Template:
			return nil, fmt.Errorf("image %q: %s %d is not a QEMU template (templates: %s)", image, guestNoun(row.Type), id, candidates(templates))
		}
		return ref(row), nil
	}
	var exact *pve.ClusterResource
	for _, t := range ix.named(image, true) {
		if t.Template && (exact == nil || t.VMID < exact.VMID) {
			exact = t
		}
	}
	if exact != nil {
		return ref(exact), nil
	}
	var found []*pve.ClusterResource
	for _, t := range templates {
		if t.Name == image {
			return ref(t), nil
		}
		if strings.Contains(t.Name, image) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("image %q: no template's name contains it (templates: %s)", image, candidates(templates))
	case 1:
		return ref(found[0]), nil
	}
	return nil, fmt.Errorf("image %q matches %d templates: %s; write more of the name, or the vmid", image, len(found), candidates(found))
}

// candidates lists templates for a message: "9000 (ubuntu-24.04-cloud)".
func candidates(ts []*pve.ClusterResource) string {
	if len(ts) == 0 {
		return "none"
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%d (%s)", t.VMID, t.Name)
	}
	return strings.Join(out, ", ")
}

// cloneParams are the clone call's parameters: the new VM's name, full or
// linked, the target node when it is not the template's, and the create
// parameters the clone call takes as well.
func (k qemuKind) cloneParams(c *engine.Change, src *guestRef) url.Values {
	r := c.Resource
	full := "1"
	if f := spec.Guest(r).Full; f != nil && !*f {
		full = "0"
	}
	params := url.Values{"name": {k.name(r)}, "full": {full}}
	if c.Node != src.Node {
		params.Set("target", c.Node)
	}
	for _, key := range []string{"pool", "storage", "bwlimit"} {
		if v := r.Params.Get(key); v != "" {
			params.Set(key, v)
		}
	}
	return params
}

// cloneVM clones the template the plan picked, then applies the spec's
// keys to the clone in one config update (with the clone's digest) and
// grows the disks the spec makes larger. It returns the new vmid.
func (k qemuKind) cloneVM(ctx context.Context, x *engine.Execution, c *engine.Change) (int, error) {
	st := stateOf(c)
	src := st.Clone
	fixed, err := k.newVMID(c)
	if err != nil {
		return 0, err
	}
	params := k.cloneParams(c, src)
	vmid, err := engine.WithNewVMID(ctx, x, fixed, k.noun, func(vmid int) error {
		params.Set("newid", strconv.Itoa(vmid))
		x.Msg("cloning template %s as vm %d on node %s (%s clone)", src, vmid, c.Node, map[string]string{"1": "full", "0": "linked"}[params.Get("full")])
		return x.Client.CloneGuest(ctx, pve.QEMU, src.Node, src.VMID, params)
	})
	if err != nil {
		return 0, fmt.Errorf("clone template %d as vm %d: %w", src.VMID, vmid, err)
	}
	st.Created = vmid
	if err := k.configureClone(ctx, x, c, vmid); err != nil {
		return vmid, fmt.Errorf("vm %d (cloned from template %d): %w", vmid, src.VMID, err)
	}
	return vmid, nil
}

// configureClone compares the clone's config with the spec as any
// existing VM's, and makes the update that follows.
func (k qemuKind) configureClone(ctx context.Context, x *engine.Execution, c *engine.Change, vmid int) error {
	r := c.Resource
	cfg, err := x.Client.GuestConfig(ctx, pve.QEMU, c.Node, vmid)
	if err != nil {
		return fmt.Errorf("read its config: %w", err)
	}
	m, _ := schema.Default().Lookup("POST", k.createPath)
	cmp := compare.Comparer{M: m}
	want := maps.Clone(wanted(r, stateOf(c).Derived))
	delete(want, "template") // POST …/template converts it, after
	delete(want, "name")     // the clone call named it
	diff := cmp.DiffParams(want, r.Remove, cfg, k.notInConfig)
	for _, d := range diff {
		if strings.HasSuffix(d.Path, ".storage") {
			return fmt.Errorf("%s is on storage %v after the clone, the spec wants %v: set storage: %v for a full clone (PVE moves every disk there)", compare.TopKey(d.Path), d.Before, d.After, d.After)
		}
		if isResize(d) {
			before, _ := d.Before.(string)
			after, _ := d.After.(string)
			x, ok1 := compare.ParseSize(before)
			y, ok2 := compare.ParseSize(after)
			if ok1 && ok2 && y < x {
				return fmt.Errorf("%s: the template's disk is %s, PVE cannot shrink it to %s", compare.TopKey(d.Path), before, after)
			}
		}
	}
	upd := cmp.UpdateParams(diff, want, cfg, isResize)
	ownerParams(c, upd, cfg, vmid) // before: the template's recipe block goes
	stripInherited(upd, cfg)
	for key, v := range upd {
		if _, had := cfg.Lookup(key); !had && strings.HasPrefix(key, "net") {
			upd[key] = withNICModel(m, key, v)
		}
	}
	if len(upd) == 0 && !slices.ContainsFunc(diff, isResize) {
		return nil
	}
	x.Msg("applying the spec to vm %d: %s", vmid, strings.Join(compare.Reasons(diff), ", "))
	tmp := &engine.Change{Address: c.Address, Resource: r, Node: c.Node, State: &guestState{VMID: vmid},
		Params: upd, Digest: cfg.Get("digest"), Diff: diff}
	return k.updateConfig(ctx, x, tmp)
}

// withNICModel gives a NIC that only names sub-keys (vlan's bridge and tag
// for a template that has no such NIC) PVE's required model: virtio.
func withNICModel(m *schema.Method, key, v string) string {
	if m == nil {
		return v
	}
	p, ok := m.Param(key)
	if !ok {
		return v
	}
	items, err := schema.ParsePropertyString(v, p)
	if err != nil {
		return v
	}
	if _, ok := schema.PropValue(items, "model"); ok {
		return v
	}
	return "virtio," + v
}

// cloneCall is POST /nodes/{node}/qemu/{vmid}/clone: its rule asks
// VM.Clone on the template and VM.Allocate on the new VM or its pool;
// clone_vm (qemu-server API2/Qemu.pm) checks check_storage_access_clone
// and check_bridge_access over the template's config, then the update
// after it what it sets.
func (k qemuKind) cloneCall(node string, r *spec.Resource, src *guestRef, srcConf *pve.Config) engine.APICall {
	id, _ := specVMID(r)
	newid := engine.KnownAfterApply // allocated at apply
	if id != 0 {
		newid = strconv.Itoa(id)
	}
	clone := engine.Call("POST", "/nodes/{node}/qemu/{vmid}/clone", "to create the VM (a clone)", "node", node,
		"vmid", strconv.Itoa(src.VMID), "newid", newid).Saying("VM.Clone", fmt.Sprintf("to clone template %d", src.VMID))
	if pool := r.Params.Get("pool"); pool != "" {
		clone.Params["pool"] = pool
	}
	return clone.With(k.clonePerms(r, srcConf)...)
}

// clonePerms are what clone_vm's handler and the update after it check.
func (k qemuKind) clonePerms(r *spec.Resource, srcConf *pve.Config) []engine.PermNeed {
	onGuest := onNewGuest(r)
	var needs []engine.PermNeed
	target := r.Params.Get("storage")
	for key, val := range srcConf.All() {
		switch {
		case strings.HasPrefix(key, "net"):
			if n, ok := bridgeNeed(val, "to clone "+key); ok {
				needs = append(needs, n)
			}
		case isDriveKey(key):
			file := driveFile(val)
			sid, _, ok := strings.Cut(file, ":")
			switch {
			case !ok || file == "none":
			case slices.ContainsFunc(splitProps(val), func(kv schema.KV) bool { return kv.Key == "media" && kv.Value == "cdrom" }) && !cloudinitRe.MatchString(file):
				needs = append(needs, volumeNeed(file, "to clone "+key))
			case target != "":
				needs = append(needs, engine.NeedPriv("/storage/"+target, "to clone "+key+" to storage "+target, "Datastore.AllocateSpace"))
			default:
				needs = append(needs, engine.NeedPriv("/storage/"+sid, "to clone "+key, "Datastore.AllocateSpace"))
			}
		}
	}
	vals := map[string]string{}
	for key, v := range r.Params.All() {
		if !k.notInConfig[key] && key != "name" && key != "template" && srcConf.Get(key) != v {
			vals[key] = v
		}
	}
	return append(needs, k.settingPerms(vals, r.Remove, srcConf, setting{onGuest: onGuest, storage: target})...)
}

// isDriveKey: a VM's disks and CD-ROMs, the EFI and TPM state.
func isDriveKey(key string) bool {
	for _, p := range []string{"ide", "sata", "scsi", "virtio"} {
		if rest, ok := strings.CutPrefix(key, p); ok && compare.IsNumber(rest) {
			return true
		}
	}
	return key == "efidisk0" || key == "tpmstate0"
}

// stripInherited drops from a clone's description the recipe block of
// the Template it was cloned from: PVE copies the description, and the
// recipe is the template's, not the new VM's. The provisioning blocks stay
// (the clone's disk is a copy of what those files made; a new host key
// is pinned anew, the VM being new), and so does the text around them.
func stripInherited(upd map[string]string, cfg *pve.Config) {
	desc, set := upd["description"]
	if !set {
		desc = cfg.Get("description")
	}
	loc := recipeRE.FindStringIndex(desc)
	if loc == nil {
		return
	}
	start := loc[0]
	if start > 0 && desc[start-1] == '\n' {
		start-- // the line break withRecipe put before it
	}
	desc = desc[:start] + desc[loc[1]:]
	if desc != "" {
		upd["description"] = desc
		return
	}
	delete(upd, "description")
	del := schema.SplitList(upd["delete"])
	upd["delete"] = strings.Join(append(del, "description"), ",")
}

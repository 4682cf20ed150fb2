package planner

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/planner/marks"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// What QEMU VMs and containers share in import: the guests are listed as
// a plan finds them (guestRows: the per-node lists, not pvestatd's lagging
// names), each one is observed by vmid, and its config is written with
// the create call's parameters, its own disks as STORAGE:SIZE.

// guestNotManaged are config keys PVE keeps for itself (snapshots, locks,
// disks no drive uses): nobody writes them in a spec.
var guestNotManaged = map[string]bool{"lock": true, "parent": true, "snaptime": true, "vmstate": true, "digest": true}

func isUnused(key string) bool {
	n, ok := strings.CutPrefix(key, "unused")
	_, err := strconv.Atoi(n)
	return ok && err == nil
}

func (g guest) Importable(ctx context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	rows, err := currentGuestRows(ic.Lc, ctx, g.typ)
	if err != nil {
		return nil, err
	}
	kind := g.specKind
	var out []engine.ImportItem
	for _, row := range rows {
		if row.Type != string(g.typ) || (node != "" && row.Node != node) {
			continue
		}
		id := strconv.Itoa(row.VMID)
		name := row.Name
		if name == "" {
			name = g.noun + "-" + id
		}
		r := &spec.Resource{Kind: kind, Name: name, State: spec.Present,
			Params: spec.ParamsOf(map[string]string{"vmid": id, "node": row.Node})}
		ids := []string{id}
		if row.Name != "" {
			ids = append(ids, row.Name)
		}
		out = append(out, engine.ImportItem{R: r, Ids: ids})
	}
	return out, nil
}

// ImportLists: the guest rows (the per-node lists of the type).
func (g guest) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{guestRowsRead(lc, g.typ)}
}

// ImportPerms: the node lists show only the guests a token may audit.
func (g guest) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedPriv("/vms", "to list the guests (PVE lists only those a token may audit)", "VM.Audit")}
}

// guestDoc is the part of a guest's document both kinds write: node,
// vmid, the config's create parameters, pool, and the power state when
// asked for (without it, a guest stopped for maintenance stays stopped
// whatever the next apply does). It is nil
// (with a warning) for a guest without a name, which a spec cannot name.
func (g guest) guestDoc(ic *engine.ImportCtx, kind string, lo *engine.LiveObj, skip func(string) bool) *engine.ImportedDoc {
	gl := liveOf(lo)
	name := lo.Config.Get(g.nameParam)
	if name == "" {
		ic.Warn("%s %d on node %s has no %s: skipped (a document needs a name; set one in PVE and import it again)",
			guestNoun(string(g.typ)), gl.VMID, lo.Node, g.nameParam)
		return nil
	}
	id := strconv.Itoa(gl.VMID)
	d := &engine.ImportedDoc{Kind: kind, Name: ic.DocName(kind, name, name+"-"+id)}
	m := ic.Method("POST", g.createPath)
	fields := ic.Fields(d, m, importedConfig(lo.Config), fmt.Sprintf("%s_%d", g.noun, gl.VMID), func(k string) bool {
		return g.notInConfig[k] || guestNotManaged[k] || isUnused(k) || k == g.nameParam || skip(k)
	}, g.subRule(gl.VMID))
	first := []engine.Field{{Key: "node", Value: lo.Node}, {Key: "vmid", Value: gl.VMID}}
	if d.Name != name {
		first = append(first, engine.Field{Key: g.nameParam, Value: name})
	}
	fields = importdoc.WithFirst(fields, first...)
	if gl.Pool != "" {
		fields = append(fields, engine.Field{Key: "pool", Value: gl.Pool})
	}
	template := lo.Config.Get("template") == "1"
	if ic.WithPowerState && !template {
		fields = append(fields, engine.Field{Key: "running", Value: gl.Status == "running"})
	}
	d.Spec = fields
	// A template pvectl did not bake (no recipe block) is the node's
	// base image, which other guests are cloned from: read only.
	if template && liveRecipe(lo.Config.Get("description")) == "" && !ic.ManageInfrastructure {
		d.ReadOnly = true
		d.Notes = append(d.Notes, "# managed: false: a template pvectl did not bake (import with --manage-infrastructure to manage it).")
	}
	return d
}

// subRule writes the guest's own disks as STORAGE:SIZE. A NIC's MAC
// address is kept, the user's or PVE's: the guest exists, and a create
// from the document without it would get a new one (PVE generates one
// for a NIC that has none: qemu-server PVE/QemuServer.pm parse_net,
// pve-container src/PVE/LXC/Config.pm parse_lxc_network), which breaks
// DHCP reservations and anything else keyed on it.
func (g guest) subRule(vmid int) importdoc.SubRule {
	return func(key string, p *schema.Param, sub, value string, items []schema.KV) (string, bool) {
		volKey := compare.VolumeKey(p.SubKeys())
		switch {
		case volKey != "" && sub == volKey:
			size, _ := schema.PropValue(items, "size")
			return ownVolume(key, value, size, vmid), true
		case volKey != "" && sub == "size":
			return "", false // PVE reads it from the volume
		}
		return value, true
	}
}

// ownVolumeRE matches the name of a volume PVE allocated for guest N:
// vm-N-disk-K (base-N-disk-K for a template), with a path or an
// extension on file storages, after a linked clone's base volume.
var ownVolumeRE = lazyre.New(`^(?:[^/]*/)*(?:vm|base|subvol)-(\d+)-(disk-\d+|cloudinit)(?:\.\w+)?$`)

// ownVolume writes a volume of the guest's own as a create writes it
// ("local-lvm:32", "local-lvm:cloudinit"); any other (an ISO, another
// guest's disk) stays the volume it names.
func ownVolume(key, vol, size string, vmid int) string {
	m := compare.DiskVolRE.FindStringSubmatch(vol)
	if m == nil {
		return vol
	}
	own := ownVolumeRE.FindStringSubmatch(m[2])
	if own == nil || own[1] != strconv.Itoa(vmid) {
		return vol
	}
	if own[2] == "cloudinit" {
		return m[1] + ":cloudinit"
	}
	b, ok := schema.ParseSize(size)
	if compare.FixedSizeDisks.MatchString(key) || !ok || b <= 0 {
		return m[1] + ":1" // PVE chooses the size of an EFI vars or TPM state volume
	}
	gib := float64(b) / (1 << 30)
	if gib == math.Trunc(gib) {
		return m[1] + ":" + strconv.FormatInt(int64(gib), 10)
	}
	return m[1] + ":" + strconv.FormatFloat(gib, 'f', -1, 64)
}

// importedConfig is a guest's config as a spec would set it: the
// description is the user's text only, without pvectl's blocks (the
// provisioning hashes, the host key pin), which plan never compares and
// apply keeps; a description that is only blocks is left out.
func importedConfig(cfg *pve.Config) *pve.Config {
	out := cfg.Clone()
	if d, ok := cfg.Lookup("description"); ok {
		if user := marks.UserDescription(d); user != "" {
			out.Set("description", user)
		} else {
			out.Delete("description")
		}
	}
	// The owner tag is pvectl's too (owner.go).
	if t, ok := cfg.Lookup("tags"); ok {
		if user := marks.WithoutOwnerTag(t); user != "" {
			out.Set("tags", user)
		} else {
			out.Delete("tags")
		}
	}
	return out
}

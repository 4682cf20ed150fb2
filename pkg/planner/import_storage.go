package planner

import (
	"context"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Storages are imported from storage.cfg as GET /storage lists them: the
// options their type takes, without those PVE fills in (a network
// storage's mount point under /mnt/pve). The secrets PVE keeps apart
// (pve-storage Plugin.pm sensitive_properties) never come back: a type
// that needs one gets a ${VAR} placeholder, which plan does not compare.

func (storageKind) Importable(ctx context.Context, ic *engine.ImportCtx, node string) ([]engine.ImportItem, error) {
	rows, err := ic.Lc.StorageList(ctx)
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, row := range rows {
		id := row.Get("storage")
		if node != "" && row.Get("nodes") != "" && !slices.Contains(compare.SplitSet(row.Get("nodes")), node) {
			continue
		}
		r := &spec.Resource{Kind: spec.KindStorage, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{"storage": id})}
		out = append(out, engine.ImportItem{R: r, Ids: []string{id}})
	}
	return out, nil
}

// ImportLists: GET /storage.
func (storageKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{engine.StoragesRead(lc)}
}

// ImportPerms: GET /storage lists only the storages a token may audit.
func (storageKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedAny("/storage", "to list the storages (PVE lists only those a token may audit)", "Datastore.Audit", "Datastore.AllocateSpace")}
}

// networkMounts are the types PVE mounts under /mnt/pve/<storage> by
// itself (pve-storage NFSPlugin.pm, CIFSPlugin.pm, CephFSPlugin.pm:
// path defaults to the mount point).
var networkMounts = map[string]bool{"nfs": true, "cifs": true, "cephfs": true, "glusterfs": true}

func (storageKind) ImportDoc(ic *engine.ImportCtx, _ *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	id, typ := lo.Config.Get("storage"), lo.Config.Get("type")
	t, _ := schema.LookupStorageType(typ)
	d := &engine.ImportedDoc{Kind: spec.KindStorage, Name: id}
	fields := ic.Fields(d, ic.Method("POST", storageCreatePath), lo.Config, "storage_"+id, func(k string) bool {
		switch {
		case k == "storage" || k == "type":
			return true
		case k == "path" && networkMounts[typ] && lo.Config.Get(k) == "/mnt/pve/"+id:
			return true
		case t != nil && !t.Takes(k):
			return true // PVE's own (shared of a network type)
		}
		return false
	}, importdoc.KeepSub)
	fields = importdoc.WithFirst(fields, engine.Field{Key: "type", Value: typ})
	if t != nil {
		for _, k := range t.Required() {
			if t.IsSensitive(k) {
				fields = append(fields, engine.Field{Key: k, Value: d.Placeholder("storage_"+id, k, "")})
			}
		}
		// A storage that logs in as a user (PBS, CIFS) has its password
		// kept in /etc/pve/priv.
		if _, done := importdoc.Value(fields, "password"); !done && t.IsSensitive("password") && lo.Config.Get("username") != "" {
			fields = append(fields, engine.Field{Key: "password", Value: d.Placeholder("storage_"+id, "password", "")})
		}
		for _, k := range t.Sensitive {
			if _, marked := lo.Config.Lookup(k); marked && t.IsMarked(k) {
				if _, done := importdoc.Value(fields, k); !done {
					fields = append(fields, engine.Field{Key: k, Value: d.Placeholder("storage_"+id, k, "")})
				}
			}
		}
	}
	d.Spec = fields
	if installerStorages[id] == typ && !ic.ManageInfrastructure {
		d.ReadOnly = true
		d.Notes = append(d.Notes, "# managed: false: a storage the PVE installer made (import with --manage-infrastructure to manage it).")
	}
	return d, nil
}

// installerStorages are the storages the PVE installer writes into
// storage.cfg, by id and type: `local` (the directory /var/lib/vz) and,
// by the root file system, `local-lvm`, `local-zfs` or `local-btrfs`
// (the admin guide's default storage.cfg). They are the node's disks,
// not a spec's.
var installerStorages = map[string]string{"local": "dir", "local-lvm": "lvmthin", "local-zfs": "zfspool", "local-btrfs": "btrfs"}

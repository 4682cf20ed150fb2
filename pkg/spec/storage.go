package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// What the storage plugins refuse beyond the API schema, found before any
// API call. PVE's POST /storage schema merges every storage type's
// options; each type's own rules are in its plugin (pve-storage
// src/PVE/Storage/*Plugin.pm `options`, read into schema.StorageType) and
// pve-common SectionConfig.pm check_config enforces them at create and
// update.

// dirPathRe is DirPlugin.pm check_config's test of a directory path
// (BTRFSPlugin.pm reuses it).
var dirPathRe = lazyre.New(`^/[-/a-zA-Z0-9_.@]+$`)

// checkStorage is a storage row's Check. A storage that is only read
// (managed: false) or removed (state: absent) needs no type.
func checkStorage(r *Resource) []problem {
	if r.ReadOnly || r.State == Absent {
		return nil
	}
	problems := storageProblems(r)
	var out []problem
	for _, key := range slices.Sorted(maps.Keys(problems)) {
		out = append(out, problem{key, "spec." + key + ": " + problems[key]})
	}
	return out
}

// keyedDiagnostics places problems keyed by spec key at the key's line,
// or at the document's when the key is not written, in key order.
// storageProblems are the storage plugins' objections, by spec key.
func storageProblems(r *Resource) map[string]string {
	out := map[string]string{}
	typ, ok := r.Params.Lookup("type")
	if !ok {
		return out // missing: requiredProblems says so; a bad type is reported already
	}
	t, ok := schema.LookupStorageType(typ)
	if !ok {
		return out // not in the schema's enum: reported already
	}
	var missing []string
	for _, k := range t.Required() {
		if !r.KeyPos.Has(k) {
			missing = append(missing, "spec."+k)
		}
	}
	if len(missing) > 0 {
		out["type"] = fmt.Sprintf("a %s storage needs %s: PVE refuses to create it without (\"missing value for required option\")",
			typ, joinAnd(missing))
	}
	for k := range r.Params.All() {
		if k == "storage" || k == "type" || t.Takes(k) {
			continue
		}
		out[k] = fmt.Sprintf("a %s storage has no option %s: PVE refuses it (\"unexpected property\"); a %s storage takes %s",
			typ, k, typ, strings.Join(t.OptionNames(), ", "))
	}
	if c, ok := r.Params.Lookup("content"); ok && out["content"] == "" {
		var bad []string
		for _, x := range schema.SplitList(c) {
			if !t.HoldsContent(x) {
				bad = append(bad, x)
			}
		}
		if len(bad) > 0 {
			out["content"] = fmt.Sprintf("a %s storage cannot hold %s (PVE drops it, so every plan would show it again); it holds %s",
				typ, strings.Join(bad, ", "), strings.Join(t.Content, ", "))
		}
	}
	if f, ok := r.Params.Lookup("format"); ok && out["format"] == "" && !t.HoldsFormat(f) {
		holds := "no image format"
		if len(t.Formats) > 0 {
			holds = strings.Join(t.Formats, ", ")
		}
		out["format"] = fmt.Sprintf("a %s storage cannot keep format %s (pve-storage Plugin.pm decode_value drops it, so every plan would show it again); it keeps %s",
			typ, f, holds)
	}
	if r.Name == "local" || r.Params.Get("storage") == "local" {
		if _, ok := r.Params.Lookup("nodes"); ok {
			out["nodes"] = "the storage local is on every node: PVE drops its nodes (pve-storage Plugin.pm parse_config), so every plan would show them again: leave nodes out"
		}
	}
	for k, v := range r.Params.All() {
		if v == "" && k != "storage" && out[k] == "" {
			out[k] = "an empty value is not kept: PVE writes no line for it (SectionConfig.pm format_config_line): leave the key out, or write null to remove it"
		}
	}
	for _, k := range r.Remove {
		o, ok := t.Options[k]
		switch {
		case !ok:
			out[k] = fmt.Sprintf("a %s storage has no option %s to remove", typ, k)
		case !o.Optional:
			out[k] = fmt.Sprintf("cannot be null: a %s storage requires it", typ)
		case o.Fixed:
			out[k] = fmt.Sprintf("cannot be null: PVE never changes a %s storage's %s after its creation", typ, k)
		}
	}
	if p, ok := r.Params.Lookup("path"); ok && (typ == "dir" || typ == "btrfs") && !dirPathRe.MatchString(p) {
		out["path"] = fmt.Sprintf("%q is no path PVE accepts for a %s storage (an absolute path of letters, digits and - _ . @ /)", p, typ)
	}
	return out
}

func joinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// guestVolumeKeyRe names the guest parameters that hold a volume: QEMU's
// drives and unused volumes, a container's root and mount points.
var guestVolumeKeyRe = lazyre.New(`^((ide|sata|scsi|virtio|unused|mp)\d+|efidisk0|tpmstate0|rootfs)$`)

// volumeIDRe is the storage part of a volume ID (pve-storage Plugin.pm
// parse_volume_id), "local-lvm" in "local-lvm:vm-100-disk-0" or "local-lvm:32".
var volumeIDRe = lazyre.New(`^([a-z][a-z0-9\-_.]*[a-z0-9]):`)

// volumeStorages are the storages a guest's values name: the volume (or
// "STORAGE:SIZE" allocation) and import-from source of each disk, the
// default storages (storage, vmstatestorage), a container's template,
// hook scripts and cloud-init snippets. Each one of the specs is a
// dependency: the guest cannot be created before its storage is.
func volumeStorages(r *Resource) []refValue {
	var out []refValue
	seen := map[string]bool{}
	add := func(key, storage string) {
		if !seen[storage] {
			seen[storage] = true
			out = append(out, refValue{key, storage})
		}
	}
	addVolume := func(key, volid string) {
		if m := volumeIDRe.FindStringSubmatch(volid); m != nil {
			add(key, m[1])
		}
	}
	for _, key := range r.Params.Keys() {
		v := r.Params.Get(key)
		switch {
		case guestVolumeKeyRe.MatchString(key):
			items, _ := schema.SplitPropertyString(v)
			for _, it := range items {
				switch it.Key {
				case "", "file", "volume", "import-from":
					addVolume(key, it.Value)
				}
			}
		case key == "storage" || key == "vmstatestorage":
			add(key, v)
		case key == "ostemplate" || key == "hookscript":
			addVolume(key, v)
		case key == "cicustom":
			items, _ := schema.SplitPropertyString(v)
			for _, it := range items {
				addVolume(key, it.Value)
			}
		}
	}
	return out
}

// poolStorages references the storages a Pool lists as members.
func poolStorages(r *Resource) []refValue {
	k, ok := r.Keys.(*PoolKeys)
	if !ok || k == nil || k.Storages == nil {
		return nil
	}
	var out []refValue
	for _, s := range *k.Storages {
		out = append(out, refValue{"storages", s})
	}
	return out
}

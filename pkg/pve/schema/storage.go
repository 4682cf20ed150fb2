package schema

import (
	"maps"
	"slices"
	"sync"
)

// The storage plugins' own facts. PVE's API schema has one flat parameter
// list for POST /storage and PUT /storage/{storage} (pve-common
// SectionConfig.pm createSchema/updateSchema merge every plugin), so what
// a storage *type* takes, needs and cannot change is only in the plugins:
// each pve-storage src/PVE/Storage/*Plugin.pm declares it in `options`
// (optional / fixed flags) and `plugindata` (content types, sensitive
// properties). SectionConfig.pm check_config enforces them: an option the
// type lacks is "unexpected property", a non-optional one missing at
// create is "missing value for required option", a fixed one in an update
// is "can't change value of fixed parameter". This table is read from the
// plugins of pve-storage (PVE 9.x); storage_test.go checks it against the
// API schema.

// StorageOption is how a storage type declares one of its options.
type StorageOption struct {
	// Optional: a create may leave it out (else it is required).
	Optional bool
	// Fixed: set at create only; an update that names it is refused.
	Fixed bool
}

// StorageType is one storage plugin's declaration.
type StorageType struct {
	Name string
	// Options are the parameters the type accepts besides "storage" and
	// "type" (plugin `options`).
	Options map[string]StorageOption
	// Content are the content types it can hold, DefaultContent what it
	// holds when the config names none (plugin `plugindata` content).
	Content, DefaultContent []string
	// Sensitive are the options PVE keeps out of storage.cfg, in
	// /etc/pve/priv (plugindata `sensitive-properties`): GET never
	// returns them.
	Sensitive []string
	// Marked are the sensitive options storage.cfg still marks as set
	// (PBSPlugin.pm on_add_hook: an encryption key's fingerprint or 1,
	// master-pubkey 1): a GET shows that they are set, never their value.
	Marked []string
	// Shared types are marked shared by PVE itself (Plugin.pm
	// @SHARED_STORAGE, applied in parse_config).
	Shared bool
	// MountPath types get path /mnt/pve/<storage> when a create names
	// none (their plugin's check_config).
	MountPath bool
	// Formats are the image formats the plugindata lists (`format`); a
	// format option naming another is dropped by Plugin.pm decode_value
	// (a warning only), so it never reaches storage.cfg.
	Formats []string
}

// HoldsFormat reports whether the type keeps format option value f.
func (t *StorageType) HoldsFormat(f string) bool { return slices.Contains(t.Formats, f) }

// Required lists the options a create must give, sorted: the non-optional
// ones, less a path the plugin fills in itself.
func (t *StorageType) Required() []string {
	var out []string
	for k, o := range t.Options {
		if !o.Optional && !(k == "path" && t.MountPath) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// FixedOptions lists the options an update may not name, sorted.
func (t *StorageType) FixedOptions() []string {
	var out []string
	for k, o := range t.Options {
		if o.Fixed {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Takes reports whether the type accepts option k.
func (t *StorageType) Takes(k string) bool { _, ok := t.Options[k]; return ok }

// IsSensitive reports whether the type keeps option k apart (in /etc/pve/priv).
func (t *StorageType) IsSensitive(k string) bool { return slices.Contains(t.Sensitive, k) }

// IsMarked reports whether storage.cfg marks sensitive option k as set.
func (t *StorageType) IsMarked(k string) bool { return slices.Contains(t.Marked, k) }

// HoldsContent reports whether the type can hold content type c.
func (t *StorageType) HoldsContent(c string) bool { return slices.Contains(t.Content, c) }

// OptionNames lists the options the type accepts, sorted.
func (t *StorageType) OptionNames() []string { return slices.Sorted(maps.Keys(t.Options)) }

// LookupStorageType returns the declaration of a storage type ("nfs").
// The result is shared: callers must not modify it.
func LookupStorageType(name string) (*StorageType, bool) {
	t, ok := storageTypes()[name]
	return t, ok
}

// StorageTypeNames lists the storage types PVE registers, sorted.
func StorageTypeNames() []string { return slices.Sorted(maps.Keys(storageTypes())) }

// Flag shorthands for the table below.
var (
	opt      = StorageOption{Optional: true}
	req      = StorageOption{}
	fixed    = StorageOption{Fixed: true}
	optFixed = StorageOption{Optional: true, Fixed: true}
)

// withCommon adds the options every listed type declares the same way.
func withCommon(m map[string]StorageOption, common ...string) map[string]StorageOption {
	for _, k := range common {
		m[k] = opt
	}
	return m
}

// fileContent is what the file-based types can hold.
var fileContent = []string{"backup", "images", "import", "iso", "rootdir", "snippets", "vztmpl"}

// storageTypes is built once and read-only afterwards. Each row cites
// its plugin in pve-storage src/PVE/Storage/.
var storageTypes = sync.OnceValue(func() map[string]*StorageType {
	rows := []*StorageType{
		{ // DirPlugin.pm
			Name:    "dir",
			Formats: []string{"raw", "qcow2", "vmdk", "subvol"},
			Options: withCommon(map[string]StorageOption{"path": fixed, "snapshot-as-volume-chain": optFixed},
				"content-dirs", "nodes", "shared", "disable", "prune-backups", "max-protected-backups", "content",
				"format", "mkdir", "create-base-path", "create-subdirs", "is_mountpoint", "bwlimit", "preallocation"),
			Content: append(slices.Clone(fileContent), "none"), DefaultContent: []string{"images", "rootdir"},
		},
		{ // NFSPlugin.pm
			Name:    "nfs",
			Formats: []string{"raw", "qcow2", "vmdk"},
			Options: withCommon(map[string]StorageOption{"path": fixed, "server": fixed, "export": fixed, "snapshot-as-volume-chain": optFixed},
				"content-dirs", "nodes", "disable", "prune-backups", "max-protected-backups", "options", "content",
				"format", "mkdir", "create-base-path", "create-subdirs", "bwlimit", "preallocation"),
			Content: fileContent, DefaultContent: []string{"images"}, Shared: true, MountPath: true,
		},
		{ // CIFSPlugin.pm
			Name:    "cifs",
			Formats: []string{"raw", "qcow2", "vmdk"},
			Options: withCommon(map[string]StorageOption{"path": fixed, "server": fixed, "share": fixed, "snapshot-as-volume-chain": optFixed},
				"content-dirs", "subdir", "nodes", "disable", "prune-backups", "max-protected-backups", "content",
				"format", "username", "password", "domain", "smbversion", "mkdir", "create-base-path",
				"create-subdirs", "bwlimit", "preallocation", "options"),
			Content: fileContent, DefaultContent: []string{"images"}, Sensitive: []string{"password"},
			Shared: true, MountPath: true,
		},
		{ // CephFSPlugin.pm
			Name: "cephfs",
			Options: withCommon(map[string]StorageOption{"path": fixed},
				"content-dirs", "monhost", "nodes", "subdir", "disable", "options", "username", "content", "format",
				"mkdir", "create-base-path", "create-subdirs", "fuse", "bwlimit", "keyring", "prune-backups",
				"max-protected-backups", "fs-name"),
			Content:        []string{"backup", "import", "iso", "snippets", "vztmpl"},
			DefaultContent: []string{"backup"}, Sensitive: []string{"keyring"}, Shared: true, MountPath: true,
		},
		{ // BTRFSPlugin.pm
			Name:    "btrfs",
			Formats: []string{"raw", "subvol"},
			Options: withCommon(map[string]StorageOption{"path": fixed},
				"nodes", "shared", "disable", "prune-backups", "max-protected-backups", "content", "format",
				"is_mountpoint", "nocow", "mkdir", "create-base-path", "create-subdirs", "preallocation"),
			Content: append(slices.Clone(fileContent), "none"), DefaultContent: []string{"images", "rootdir"},
		},
		{ // LVMPlugin.pm
			Name:    "lvm",
			Formats: []string{"raw", "qcow2"},
			Options: withCommon(map[string]StorageOption{"vgname": fixed, "base": optFixed},
				"nodes", "shared", "disable", "saferemove", "saferemove-stepsize", "saferemove_throughput",
				"content", "tagged_only", "bwlimit", "snapshot-as-volume-chain"),
			Content: []string{"images", "rootdir"}, DefaultContent: []string{"images"},
		},
		{ // LvmThinPlugin.pm
			Name:    "lvmthin",
			Options: withCommon(map[string]StorageOption{"thinpool": fixed, "vgname": fixed}, "nodes", "disable", "content", "bwlimit"),
			Content: []string{"images", "rootdir"}, DefaultContent: []string{"images", "rootdir"},
		},
		{ // ZFSPoolPlugin.pm
			Name:    "zfspool",
			Formats: []string{"raw", "subvol"},
			Options: withCommon(map[string]StorageOption{"pool": fixed},
				"blocksize", "sparse", "nodes", "disable", "content", "bwlimit", "mountpoint"),
			Content: []string{"images", "rootdir"}, DefaultContent: []string{"images", "rootdir"},
		},
		{ // ZFSPlugin.pm (ZFS over iSCSI)
			Name: "zfs",
			Options: withCommon(map[string]StorageOption{"portal": fixed, "target": fixed, "pool": fixed, "blocksize": fixed, "iscsiprovider": fixed},
				"nodes", "disable", "nowritecache", "sparse", "comstar_hg", "comstar_tg", "lio_tpg", "content",
				"bwlimit", "zfs-base-path"),
			Content: []string{"images"}, DefaultContent: []string{"images"}, Shared: true,
		},
		{ // RBDPlugin.pm: pool is optional (librados' default pool "rbd")
			Name: "rbd",
			Options: withCommon(map[string]StorageOption{},
				"nodes", "disable", "monhost", "pool", "data-pool", "namespace", "username", "content", "krbd",
				"keyring", "bwlimit"),
			Content: []string{"images", "rootdir"}, DefaultContent: []string{"images"}, Sensitive: []string{"keyring"},
			Shared: true,
		},
		{ // ISCSIPlugin.pm
			Name:    "iscsi",
			Options: withCommon(map[string]StorageOption{"portal": fixed, "target": fixed}, "nodes", "disable", "content", "bwlimit"),
			Content: []string{"images", "none"}, DefaultContent: []string{"images"}, Shared: true,
		},
		{ // ISCSIDirectPlugin.pm
			Name:    "iscsidirect",
			Options: withCommon(map[string]StorageOption{"portal": fixed, "target": fixed}, "nodes", "disable", "content", "bwlimit"),
			Content: []string{"images", "none"}, DefaultContent: []string{"images"}, Shared: true,
		},
		{ // PBSPlugin.pm
			Name: "pbs",
			Options: withCommon(map[string]StorageOption{"server": fixed, "datastore": fixed},
				"namespace", "port", "nodes", "disable", "content", "username", "password", "encryption-key",
				"master-pubkey", "prune-backups", "max-protected-backups", "fingerprint"),
			Content: []string{"backup", "none"}, DefaultContent: []string{"backup"},
			Sensitive: []string{"encryption-key", "master-pubkey", "password"}, Marked: []string{"encryption-key", "master-pubkey"},
			Shared: true,
		},
		{ // ESXiPlugin.pm: server and username are required, and may change
			Name:    "esxi",
			Formats: []string{"raw", "qcow2", "vmdk"},
			Options: withCommon(map[string]StorageOption{"server": req, "username": req},
				"nodes", "shared", "disable", "content", "bwlimit", "password", "skip-cert-verification", "port"),
			Content: []string{"import"}, DefaultContent: []string{"import"}, Sensitive: []string{"password"},
		},
	}
	out := map[string]*StorageType{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out
})

package pvesim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The storage configuration calls, as pve-storage src/PVE/API2/Storage/
// Config.pm has them, with the option rules of the storage plugins
// (schema.StorageType, read from src/PVE/Storage/*Plugin.pm) enforced the
// way pve-common SectionConfig.pm check_config does. PVE answers these
// rule violations with a plain die, so a 500 with the message, not a 400:
// the parameters themselves passed the API schema. What goes wrong inside
// lock_storage_config carries its "create/update/delete storage failed: "
// prefix (Storage.pm lock_storage_config).

const (
	createFailed = "create storage failed: "
	updateFailed = "update storage failed: "
	deleteFailed = "delete storage failed: "
)

// dirPathRe is DirPlugin.pm check_config's test of a directory path.
var dirPathRe = lazyre.New(`^/[-/a-zA-Z0-9_.@]+$`)

func storageType(typ string) (*schema.StorageType, error) {
	t, ok := schema.LookupStorageType(typ)
	if !ok {
		// The schema's enum is the registered types: only a table gap gets here.
		return nil, fail(http.StatusInternalServerError, "unknown section type '%s'", typ)
	}
	return t, nil
}

// storageParams are a call's option values: the path variable, the type
// and the update's control parameters left out.
func storageParams(q *request) map[string]string {
	out := map[string]string{}
	for k := range q.params {
		switch k {
		case "storage", "type", "digest", "delete":
			continue
		}
		out[k] = q.get(k)
	}
	return out
}

// extractSensitive is pve-common Tools.pm extract_sensitive_params: the
// type's sensitive options leave the parameters (PVE writes them under
// /etc/pve/priv, never into storage.cfg); a deleted one is an explicit
// unset (present, "").
func extractSensitive(t *schema.StorageType, params map[string]string, del []string) map[string]*string {
	out := map[string]*string{}
	for _, k := range t.Sensitive {
		if slices.Contains(del, k) {
			out[k] = nil
		}
		if v, ok := params[k]; ok {
			out[k] = &v
			delete(params, k)
		}
	}
	return out
}

// checkStorageConfig is SectionConfig.pm check_config with the plugin
// overrides: unknown options, fixed ones in an update, the values PVE
// decodes (content, nodes), required options at create, a directory's
// path. Keys are checked in name order (PVE walks a hash: some order).
func (s *Server) checkStorageConfig(t *schema.StorageType, id string, params map[string]string, create bool) (map[string]string, error) {
	if create && t.MountPath && params["path"] == "" {
		// NFSPlugin.pm, CIFSPlugin.pm, CephFSPlugin.pm check_config.
		params["path"] = "/mnt/pve/" + id
	}
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		o, ok := t.Options[k]
		if !create && ok && o.Fixed {
			return nil, fail(http.StatusInternalServerError, "can't change value of fixed parameter '%s'", k)
		}
		if !ok {
			return nil, fail(http.StatusInternalServerError, "unexpected property '%s'", k)
		}
		v := params[k]
		if err := checkNoLineFeed(v); err != nil {
			return nil, fail(http.StatusInternalServerError, "%s", err)
		}
		switch k {
		case "content":
			list, err := decodeContent(t, v)
			if err != nil {
				return nil, err
			}
			v = strings.Join(list, ",")
		case "nodes":
			// Plugin.pm decode_value: names that are no node names are
			// dropped, and the rest is a hash: each name once, in some order.
			var nodes []string
			for _, n := range schema.SplitList(v) {
				if validNodeName(n) && !slices.Contains(nodes, n) {
					nodes = append(nodes, n)
				}
			}
			slices.Sort(nodes)
			v = strings.Join(nodes, ",")
		case "format":
			// Plugin.pm decode_value: a format the type's plugindata does
			// not list (schema.StorageType.Formats, from DirPlugin.pm,
			// NFSPlugin.pm, CIFSPlugin.pm, BTRFSPlugin.pm, LVMPlugin.pm,
			// ZFSPoolPlugin.pm, ESXiPlugin.pm; none for CephFSPlugin.pm)
			// only warns, and its `next` leaves check_config's
			// loop before the value is kept: the option is dropped.
			if !t.HoldsFormat(v) {
				continue
			}
		}
		out[k] = v
	}
	if !create {
		return out, nil
	}
	for _, k := range t.Required() {
		if _, ok := out[k]; !ok {
			return nil, fail(http.StatusInternalServerError, "missing value for required option '%s'", k)
		}
	}
	if t.Name == "dir" || t.Name == "btrfs" {
		// DirPlugin.pm check_config (BTRFSPlugin.pm reuses it).
		if !dirPathRe.MatchString(out["path"]) {
			return nil, fail(http.StatusInternalServerError, "illegal path for directory storage: %s", out["path"])
		}
		out["path"] = canonPath(out["path"])
	}
	return out, nil
}

// canonPath is Perl's File::Spec->canonpath, which DirPlugin.pm
// check_config applies: repeated slashes, "." parts and a trailing slash
// go, and ".." right under the root; any other ".." stays (canonpath does
// not resolve it, unlike path.Clean).
func canonPath(p string) string {
	var parts []string
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." && len(parts) == 0 {
			continue
		}
		parts = append(parts, part)
	}
	return "/" + strings.Join(parts, "/")
}

// decodeContent is Plugin.pm decode_value for content: a type the storage
// cannot hold is dropped (PVE only warns), "none" stands alone, and a list
// left empty is "none", which only some types allow.
func decodeContent(t *schema.StorageType, v string) ([]string, error) {
	var out []string
	for _, c := range schema.SplitList(v) {
		if t.HoldsContent(c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if slices.Contains(out, "none") && len(out) > 1 {
		return nil, fail(http.StatusInternalServerError, "unable to combine 'none' with other content types")
	}
	if len(out) == 0 {
		if !t.HoldsContent("none") {
			return nil, fail(http.StatusInternalServerError, "storage does not support content type 'none'")
		}
		out = []string{"none"} // Plugin.pm encode_value: an empty set reads "none"
	}
	return out, nil
}

func (s *Server) createStorage(q *request) (any, error) {
	id, typ := q.get("storage"), q.get("type")
	t, err := storageType(typ)
	if err != nil {
		return nil, err
	}
	params := storageParams(q)
	if params["nodes"] == "" {
		delete(params, "nodes") // Config.pm create: no empty node list
	}
	sensitive := extractSensitive(t, params, nil)
	opts, err := s.checkStorageConfig(t, id, params, true)
	if err != nil {
		return nil, err
	}
	if _, exists := s.st.Storages[id]; exists {
		return nil, fail(http.StatusInternalServerError, createFailed+"storage ID '%s' already defined", id)
	}
	// Plugin.pm parse_config: no content is the type's default content,
	// and the shared types are shared.
	st := &storage{ID: id, Type: typ, Total: 500 * gib, Content: slices.Clone(t.DefaultContent), Shared: t.Shared}
	for k, v := range opts {
		st.set(t, k, v)
	}
	if err := s.addHook(st); err != nil {
		return nil, fail(http.StatusInternalServerError, createFailed+"%s", err.Error())
	}
	returned, err := s.storageSecrets(t, st, sensitive, true)
	if err != nil {
		return nil, fail(http.StatusInternalServerError, createFailed+"%s", err.Error())
	}
	s.st.Storages[id] = st
	return storageAnswer(st, returned), nil
}

// addHook is the plugins' on_add_hook beyond the sensitive options.
func (s *Server) addHook(st *storage) error {
	switch st.Type {
	case "lvm":
		// LVMPlugin.pm on_add_hook: a base volume's storage must exist and
		// be iSCSI (that die has no newline: Perl adds where it died).
		base := st.Extra["base"]
		if base == "" {
			return nil
		}
		baseID, _, _ := strings.Cut(base, ":")
		b, ok := s.st.Storages[baseID]
		if !ok {
			return fmt.Errorf("base storage ID '%s' does not exist", baseID)
		}
		if b.Type != "iscsi" {
			return fmt.Errorf("unsupported base type '%s' at /usr/share/perl5/PVE/Storage/LVMPlugin.pm line 489.", b.Type)
		}
	case "zfspool":
		// ZFSPoolPlugin.pm on_add_hook: without a configured mountpoint
		// it records the pool's own (ZFS's default: /<pool>).
		if _, ok := st.Extra["mountpoint"]; !ok {
			st.Extra["mountpoint"] = "/" + st.Extra["pool"]
		}
	}
	return nil
}

func storageAnswer(st *storage, returned map[string]any) map[string]any {
	out := map[string]any{"storage": st.ID, "type": st.Type}
	// Config.pm create/update answer the hook's result when Perl holds it
	// true: PBSPlugin.pm on_add_hook / on_update_hook always return a hash
	// (empty without a new encryption key), the others nothing.
	if len(returned) > 0 || st.Type == "pbs" {
		out["config"] = returned
	}
	return out
}

func (s *Server) updateStorage(q *request) (any, error) {
	id := q.vars["storage"]
	del := schema.SplitList(q.get("delete"))
	failed := func(err error) error {
		return fail(http.StatusInternalServerError, updateFailed+"%s", asAPIError(err).msg)
	}
	// Config.pm update: everything below runs under the storage.cfg lock.
	// pve-common Tools.pm assert_if_modified compares with Perl's `ne`:
	// the digest must match exactly (an upper-case copy is a mismatch).
	if d := q.get("digest"); d != "" && d != s.storageDigest() {
		return nil, failed(fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again."))
	}
	st, ok := s.st.Storages[id]
	if !ok {
		return nil, failed(fail(http.StatusInternalServerError, "storage '%s' does not exist", id))
	}
	t, err := storageType(st.Type)
	if err != nil {
		return nil, failed(err)
	}
	params := storageParams(q)
	sensitive := extractSensitive(t, params, del)
	opts, err := s.checkStorageConfig(t, id, params, false)
	if err != nil {
		return nil, failed(err)
	}
	for _, k := range del {
		o, ok := t.Options[k]
		switch {
		case !ok:
			return nil, failed(fail(http.StatusInternalServerError, "no such option '%s'", k))
		case !o.Optional:
			return nil, failed(fail(http.StatusInternalServerError, "unable to delete required option '%s'", k))
		case o.Fixed:
			return nil, failed(fail(http.StatusInternalServerError, "unable to delete fixed option '%s'", k))
		}
		if _, set := opts[k]; set {
			return nil, failed(fail(http.StatusInternalServerError, "cannot set and delete property '%s' at the same time!", k))
		}
	}
	returned, err := s.storageSecrets(t, st, sensitive, false)
	if err != nil {
		return nil, failed(err)
	}
	for _, k := range del {
		if !t.IsSensitive(k) {
			st.unset(t, k)
		}
	}
	for k, v := range opts {
		st.set(t, k, v)
	}
	if id == "local" {
		st.Nodes = nil // Plugin.pm parse_config: no node restrictions for local
	}
	return storageAnswer(st, returned), nil
}

// defaultLocalStorage is the 'local' storage Plugin.pm parse_config puts
// back whenever storage.cfg has none (or one that is no dir on
// /var/lib/vz): deleting local only resets it.
func defaultLocalStorage(total int64) *storage {
	return &storage{ID: "local", Type: "dir", Path: "/var/lib/vz", Total: total,
		Content: []string{"backup", "images", "iso", "rootdir", "snippets", "vztmpl"},
		Extra:   map[string]string{"prune-backups": "keep-all=1"}}
}

func (s *Server) deleteStorage(q *request) (any, error) {
	id := q.vars["storage"]
	st, ok := s.st.Storages[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, deleteFailed+"storage '%s' does not exist", id)
	}
	// Storage.pm storage_is_used: an LVM or iSCSI-backed storage's base.
	for _, other := range s.st.Storages {
		if base := other.Extra["base"]; base != "" && strings.SplitN(base, ":", 2)[0] == id {
			return nil, fail(http.StatusInternalServerError, deleteFailed+"can't remove storage - storage is used as base of another storage")
		}
	}
	// The plugins' on_delete_hook remove what /etc/pve/priv keeps.
	delete(s.st.Priv, st.ID)
	delete(s.st.Storages, st.ID)
	if id == "local" {
		s.st.Storages[id] = defaultLocalStorage(st.Total)
	}
	// pve-access-control AccessControl.pm remove_storage_access: the
	// storage's ACLs and pool memberships go too.
	s.dropACL(func(e aclEntry) bool { return e.Path == "/storage/"+id })
	for _, p := range s.st.Pools {
		p.Storages = removeValue(p.Storages, st.ID)
	}
	s.dropACLTree("/storage/" + st.ID) // remove_storage_access
	return nil, nil
}

// storageSecrets is the plugins' on_add_hook / on_update_hook for the
// sensitive options: they go to /etc/pve/priv (the simulator keeps only
// their SHA-256, for tests to check what was sent) and never come back on
// a GET. PBSPlugin.pm records an encryption key's fingerprint (or 1) and a
// master key's presence in storage.cfg, and answers the key it stored.
func (s *Server) storageSecrets(t *schema.StorageType, st *storage, sensitive map[string]*string, create bool) (map[string]any, error) {
	returned := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(sensitive)) {
		v := sensitive[k]
		if v == nil {
			s.setPriv(st.ID, k, nil)
			if t.IsMarked(k) {
				st.unset(t, k)
			}
			continue
		}
		val := *v
		if t.Name == "pbs" && k == "encryption-key" {
			fp, key, err := s.pbsEncryptionKey(val)
			if err != nil {
				return nil, err
			}
			val = key
			returned[k] = key
			st.set(t, k, fp)
		}
		if t.Name == "pbs" && k == "master-pubkey" {
			if create && sensitive["encryption-key"] == nil {
				return nil, fmt.Errorf("'master-pubkey' can only be used together with 'encryption-key'")
			}
			st.set(t, k, "1")
		}
		s.setPriv(st.ID, k, &val)
	}
	return returned, nil
}

func (s *Server) setPriv(id, key string, val *string) {
	if val == nil {
		delete(s.st.Priv[id], key)
		return
	}
	ensureMap(&s.st.Priv)
	if s.st.Priv[id] == nil {
		s.st.Priv[id] = map[string]string{}
	}
	sum := sha256.Sum256([]byte(*val))
	s.st.Priv[id][key] = hex.EncodeToString(sum[:])
}

// pbsEncryptionKey is PBSPlugin.pm's check of an encryption key: a JSON
// key file with "data", or "autogen" for a new one. It returns what
// storage.cfg records (the key's fingerprint, or 1) and the key.
func (s *Server) pbsEncryptionKey(v string) (fp, key string, err error) {
	if v == "autogen" {
		raw := make([]byte, 32)
		for i := range raw {
			raw[i] = byte(s.rng.IntN(256))
		}
		sum := sha256.Sum256(raw)
		var parts []string
		for _, b := range sum[:] {
			parts = append(parts, fmt.Sprintf("%02x", b))
		}
		fp = strings.Join(parts, ":")
		b, _ := json.Marshal(map[string]any{"kdf": nil, "data": base64.StdEncoding.EncodeToString(raw), "fingerprint": fp})
		return fp, string(b), nil
	}
	var decoded map[string]any
	if json.Unmarshal([]byte(v), &decoded) != nil || decoded["data"] == nil {
		return "", "", fmt.Errorf("Value does not seems like a valid, JSON formatted encryption key!")
	}
	if f, ok := decoded["fingerprint"].(string); ok && f != "" {
		return f, v, nil
	}
	return "1", v, nil
}

// StorageSecret reports the SHA-256 (hex) of the secret a storage keeps
// under key in the simulated /etc/pve/priv: tests check with it what
// pvectl sent, since no API call shows it.
func (s *Server) StorageSecret(storage, key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.Priv[storage][key]
	return v, ok
}

// set stores one checked option value.
func (st *storage) set(t *schema.StorageType, k, v string) {
	switch k {
	case "content":
		st.Content = schema.SplitList(v)
	case "path":
		st.Path = v
	case "vgname":
		st.VGName = v
	case "thinpool":
		st.ThinPool = v
	case "nodes":
		st.Nodes = schema.SplitList(v)
	case "shared":
		// storage.cfg keeps the flag as given, so a GET shows "shared 0"
		// too (SectionConfig.pm format_config_line writes a boolean 0 or
		// 1); Plugin.pm parse_config still makes the @SHARED_STORAGE
		// types shared.
		ensureMap(&st.Extra)
		st.Extra[k] = v
		st.Shared = t.Shared || v == "1"
	case "disable":
		// SectionConfig.pm write_config writes a bare "disable" line when
		// it is set and nothing otherwise: "disable 0" is not kept.
		st.Disable = v == "1"
	default:
		if v == "" {
			// SectionConfig.pm format_config_line writes no line for an
			// empty value: the option is gone once storage.cfg is read.
			delete(st.Extra, k)
			return
		}
		ensureMap(&st.Extra)
		st.Extra[k] = v
	}
}

// unset removes an option; what PVE's parser fills in again (a default
// content list, shared for shared types) comes back.
func (st *storage) unset(t *schema.StorageType, k string) {
	switch k {
	case "content":
		st.Content = slices.Clone(t.DefaultContent)
	case "nodes":
		st.Nodes = nil
	case "shared":
		st.Shared = t.Shared
		delete(st.Extra, k)
	case "disable":
		st.Disable = false
	default:
		delete(st.Extra, k)
	}
}

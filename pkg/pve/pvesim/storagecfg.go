package pvesim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Content types each storage type can hold, and the default when none is given.
var storageContent = map[string]struct{ allowed, def []string }{
	"dir":     {[]string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}, []string{"images", "rootdir"}},
	"nfs":     {[]string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}, []string{"images"}},
	"cifs":    {[]string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}, []string{"images"}},
	"cephfs":  {[]string{"vztmpl", "iso", "backup", "snippets", "import"}, []string{"backup", "iso", "vztmpl"}},
	"btrfs":   {[]string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}, []string{"images", "rootdir"}},
	"lvm":     {[]string{"images", "rootdir"}, []string{"images", "rootdir"}},
	"lvmthin": {[]string{"images", "rootdir"}, []string{"images", "rootdir"}},
	"zfspool": {[]string{"images", "rootdir"}, []string{"images", "rootdir"}},
	"rbd":     {[]string{"images", "rootdir"}, []string{"images"}},
	"iscsi":   {[]string{"images", "none"}, []string{"images"}},
	"pbs":     {[]string{"backup"}, []string{"backup"}},
	"esxi":    {[]string{"import"}, []string{"import"}},
}

// Keys that are part of a storage's identity: PUT may not change them.
var fixedStorageKeys = setOf("type", "path", "server", "export", "share", "vgname", "thinpool", "pool", "datastore", "portal", "target", "base")

// Keys kept out of storage.cfg (PVE stores them under /etc/pve/priv).
var secretStorageKeys = setOf("password", "encryption-key", "keyring", "master-pubkey")

var sharedTypes = setOf("nfs", "cifs", "cephfs", "rbd", "pbs", "iscsi", "iscsidirect", "esxi")

// Keys the storage struct holds itself, not in Extra.
var coreStorageKeys = setOf("storage", "type", "content", "path", "vgname", "thinpool", "nodes", "shared", "disable",
	"delete", "digest")

func requiredStorageKeys(typ string) []string {
	switch typ {
	case "dir", "btrfs":
		return []string{"path"}
	case "nfs":
		return []string{"server", "export"}
	case "cifs":
		return []string{"server", "share"}
	case "lvm":
		return []string{"vgname"}
	case "lvmthin":
		return []string{"vgname", "thinpool"}
	case "zfspool":
		return []string{"pool"}
	case "pbs":
		return []string{"server", "datastore"}
	case "iscsi":
		return []string{"portal", "target"}
	}
	return nil
}

func checkContent(typ, content string) ([]string, error) {
	spec, known := storageContent[typ]
	if content == "" {
		if !known {
			return []string{"images"}, nil
		}
		return append([]string(nil), spec.def...), nil
	}
	list := schema.SplitList(content)
	if known {
		for _, c := range list {
			if !slices.Contains(spec.allowed, c) {
				return nil, paramErr1("content", "storage does not support content type '%s'", c)
			}
		}
	}
	return list, nil
}

func (s *Server) createStorage(q *request) (any, error) {
	id, typ := q.get("storage"), q.get("type")
	if _, exists := s.st.Storages[id]; exists {
		return nil, fail(http.StatusInternalServerError, "create storage failed: storage ID '%s' already defined", id)
	}
	errs := map[string]string{}
	for _, k := range requiredStorageKeys(typ) {
		if q.get(k) == "" {
			errs[k] = "property is missing and it is not optional"
		}
	}
	if len(errs) > 0 {
		return nil, paramErr(errs)
	}
	content, err := checkContent(typ, q.get("content"))
	if err != nil {
		return nil, err
	}
	st := &storage{ID: id, Type: typ, Content: content, Path: q.get("path"), VGName: q.get("vgname"),
		ThinPool: q.get("thinpool"), Nodes: schema.SplitList(q.get("nodes")), Disable: q.bool("disable"),
		Shared: sharedTypes[typ] || q.bool("shared"), Total: 500 * gib}
	if typ == "nfs" || typ == "cifs" || typ == "cephfs" {
		st.Path = "/mnt/pve/" + id
	}
	for k := range q.params {
		if !coreStorageKeys[k] && !secretStorageKeys[k] && k != "node" {
			if st.Extra == nil {
				st.Extra = map[string]string{}
			}
			st.Extra[k] = q.get(k)
		}
	}
	s.st.Storages[id] = st
	return map[string]any{"storage": id, "type": typ}, nil
}

func (s *Server) updateStorage(q *request) (any, error) {
	st, err := s.storageByID(q.vars["storage"])
	if err != nil {
		return nil, err
	}
	if d := q.get("digest"); d != "" && !strings.EqualFold(d, s.storageDigest()) {
		return nil, fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
	}
	cur := s.storageConfig(st)
	for k := range q.params {
		if fixedStorageKeys[k] {
			if fmt.Sprint(cur[k]) != q.get(k) {
				return nil, fail(http.StatusInternalServerError, "update storage failed: can't change value of fixed parameter '%s'", k)
			}
		}
	}
	if q.has("content") {
		content, err := checkContent(st.Type, q.get("content"))
		if err != nil {
			return nil, err
		}
		st.Content = content
	}
	if q.has("nodes") {
		st.Nodes = schema.SplitList(q.get("nodes"))
	}
	if q.has("disable") {
		st.Disable = q.bool("disable")
	}
	if q.has("shared") {
		st.Shared = sharedTypes[st.Type] || q.bool("shared")
	}
	for k := range q.params {
		if !coreStorageKeys[k] && !secretStorageKeys[k] && !fixedStorageKeys[k] {
			if st.Extra == nil {
				st.Extra = map[string]string{}
			}
			st.Extra[k] = q.get(k)
		}
	}
	for _, k := range schema.SplitList(q.get("delete")) {
		switch k {
		case "nodes":
			st.Nodes = nil
		case "disable":
			st.Disable = false
		case "shared":
			st.Shared = sharedTypes[st.Type]
		default:
			delete(st.Extra, k)
		}
	}
	return map[string]any{"storage": st.ID, "type": st.Type}, nil
}

func (s *Server) deleteStorage(q *request) (any, error) {
	st, err := s.storageByID(q.vars["storage"])
	if err != nil {
		return nil, err
	}
	delete(s.st.Storages, st.ID)
	for _, p := range s.st.Pools {
		p.Storages = removeString(p.Storages, st.ID)
	}
	s.dropACLTree("/storage/" + st.ID) // remove_storage_access
	return nil, nil
}

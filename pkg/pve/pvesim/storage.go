package pvesim

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

func (s *Server) storageRoutes() []route {
	return append(crudRoutes("/storage", "/{storage}",
		s.listStorage, s.createStorage, s.getStorage, s.updateStorage, s.deleteStorage),
		r("GET /nodes/{node}/storage", s.nodeStorage),
		r("GET /nodes/{node}/storage/{storage}/status", s.nodeStorageStatus))
}

func joinContent(c []string) string {
	cs := append([]string(nil), c...)
	sort.Strings(cs)
	return strings.Join(cs, ",")
}

func (s *Server) storageUsed(id string) int64 {
	var used int64
	for _, v := range s.st.Volumes {
		if v.Storage == id {
			used += v.Size
		}
	}
	return used
}

// storageConfig is a storage as /storage returns it (storage.cfg keys).
func (s *Server) storageConfig(st *storage) map[string]any {
	m := map[string]any{"storage": st.ID, "type": st.Type, "content": joinContent(st.Content)}
	if st.Path != "" {
		m["path"] = st.Path
	}
	if st.VGName != "" {
		m["vgname"] = st.VGName
	}
	if st.ThinPool != "" {
		m["thinpool"] = st.ThinPool
	}
	if st.Shared {
		m["shared"] = 1
	}
	if len(st.Nodes) > 0 {
		m["nodes"] = strings.Join(st.Nodes, ",")
	}
	if st.Disable {
		m["disable"] = 1
	}
	for k, v := range st.Extra {
		m[k] = storageValue(k, v)
	}
	m["digest"] = s.storageDigest()
	return m
}

// storageValue types a storage.cfg value as PVE's parser returns it
// (pve-common SectionConfig.pm check_value): booleans, integers and numbers
// become JSON numbers ("mkdir": 0), everything else stays a string.
func storageValue(key, val string) any {
	m, ok := schema.Default().Lookup("POST", "/storage")
	if !ok {
		return val
	}
	p, ok := m.Param(key)
	if !ok {
		return val
	}
	return typedValue(p.Type, val)
}

func (s *Server) storageDigest() string {
	h := sha1.New()
	for _, id := range slices.Sorted(maps.Keys(s.st.Storages)) {
		st := s.st.Storages[id]
		// The digest is storage.cfg's: every option written counts, shared too.
		fmt.Fprintf(h, "%s: %s\n\tcontent %s\n\tpath %s\n\tvgname %s\n\tthinpool %s\n\tnodes %v\n\tdisable %v\n\tshared %v\n",
			st.Type, st.ID, joinContent(st.Content), st.Path, st.VGName, st.ThinPool, st.Nodes, st.Disable, st.Shared)
		for _, k := range slices.Sorted(maps.Keys(st.Extra)) {
			fmt.Fprintf(h, "\t%s %s\n", k, st.Extra[k])
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func (s *Server) listStorage(q *request) (any, error) {
	typ := q.get("type")
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.st.Storages)) {
		st := s.st.Storages[id]
		if typ != "" && st.Type != typ {
			continue
		}
		// pve-storage API2/Storage/Config.pm index: only what the caller may see.
		if !s.canAny(q.user, "/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace") {
			continue
		}
		out = append(out, s.storageConfig(st))
	}
	return out, nil
}

func (s *Server) storageByID(id string) (*storage, error) {
	st, ok := s.st.Storages[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "storage '%s' does not exist", id)
	}
	return st, nil
}

func (s *Server) getStorage(q *request) (any, error) {
	st, err := s.storageByID(q.vars["storage"])
	if err != nil {
		return nil, err
	}
	return s.storageConfig(st), nil
}

func (s *Server) nodeStorageRow(st *storage) map[string]any {
	used := s.storageUsed(st.ID)
	return map[string]any{
		"storage": st.ID, "type": st.Type, "content": joinContent(st.Content),
		"active": b2i(!st.Disable), "enabled": b2i(!st.Disable), "shared": b2i(st.Shared),
		"total": st.Total, "used": used, "avail": st.Total - used,
		"used_fraction": float64(used) / float64(st.Total),
	}
}

func (s *Server) nodeStorage(q *request) (any, error) {
	node := q.vars["node"]
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.st.Storages)) {
		st := s.st.Storages[id]
		if !st.onNode(node) {
			continue
		}
		// pve-storage API2/Storage/Status.pm index: only what the caller may see.
		if !s.canAny(q.user, "/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace") {
			continue
		}
		if c := q.get("content"); c != "" && !anyContent(st, schema.SplitList(c)) {
			continue
		}
		if f := q.get("storage"); f != "" && f != id {
			continue
		}
		if q.has("enabled") && q.bool("enabled") == st.Disable {
			continue
		}
		out = append(out, s.nodeStorageRow(st))
	}
	return out, nil
}

func anyContent(st *storage, want []string) bool {
	for _, w := range want {
		if st.allows(w) {
			return true
		}
	}
	return false
}

func (s *Server) nodeStorage1(q *request) (*storage, error) {
	st, err := s.storageByID(q.vars["storage"])
	if err != nil {
		return nil, err
	}
	if !st.onNode(q.vars["node"]) {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is not available on node '%s'", st.ID, q.vars["node"])
	}
	return st, nil
}

func (s *Server) nodeStorageStatus(q *request) (any, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, err
	}
	row := s.nodeStorageRow(st)
	delete(row, "storage")
	delete(row, "used_fraction")
	return row, nil
}

// checkImageStorage is what qemu-server checks of a new disk's storage
// before it forks (check_storage_access): it exists and holds images.
func (s *Server) checkImageStorage(id string) error {
	st, ok := s.st.Storages[id]
	if !ok {
		return fail(http.StatusInternalServerError, "storage '%s' does not exist", id)
	}
	if !st.allows("images") {
		return paramErr1("storage", "storage '%s' does not support vm images", id)
	}
	return nil
}

// imageStorage checks that a disk may be allocated on id from node.
func (s *Server) imageStorage(id, node, param string) (*storage, error) {
	st, ok := s.st.Storages[id]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "storage '%s' does not exist", id)
	}
	if !st.onNode(node) {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is not available on node '%s'", id, node)
	}
	if st.Disable {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is disabled", id)
	}
	if !st.allows("images") {
		return nil, paramErr1(param, "storage '%s' does not support vm images", id)
	}
	return st, nil
}

// allocImage creates a new image volume for vmid, named as the storage
// plugin names them: vm-N-disk-K (lvm, zfs, rbd) or N/vm-N-disk-K.qcow2 (dir).
func (s *Server) allocImage(st *storage, vmid int, size int64, prefix string) *volume {
	return s.allocImageFormat(st, vmid, size, prefix, "")
}

// allocImageFormat is allocImage in a format the caller chose: file
// storages hold qcow2 (their default), raw and vmdk files; the others raw
// only (pve-storage Plugin.pm default_format, plugins' formats).
func (s *Server) allocImageFormat(st *storage, vmid int, size int64, prefix, format string) *volume {
	if !isFileStorage(st) {
		format = "raw"
	} else if format != "raw" && format != "vmdk" {
		format = "qcow2"
	}
	for k := 0; ; k++ {
		base := fmt.Sprintf("%s-%d-disk-%d", prefix, vmid, k)
		name := base
		if isFileStorage(st) {
			name = fmt.Sprintf("%d/%s.%s", vmid, base, format)
		}
		if s.volNameTaken(st.ID, base) {
			continue
		}
		v := &volume{Storage: st.ID, Name: name, Content: "images", Format: format, Size: size, VMID: vmid, Ctime: time.Now().Unix()}
		s.st.addVolume(v)
		return v
	}
}

// volNameTaken reports whether a disk basename is in use on a storage,
// including inside linked-clone names ("base-9000-disk-0/vm-101-disk-0").
func (s *Server) volNameTaken(storageID, base string) bool {
	for _, v := range s.st.Volumes {
		if v.Storage != storageID {
			continue
		}
		for _, part := range strings.Split(v.Name, "/") {
			if strings.TrimSuffix(part, ".qcow2") == base || strings.HasPrefix(part, base+".") {
				return true
			}
		}
	}
	return false
}

func isFileStorage(st *storage) bool {
	switch st.Type {
	case "dir", "nfs", "cifs", "glusterfs", "cephfs", "btrfs":
		return true
	}
	return false
}

package pvesim

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

func (s *Server) contentRoutes() []route {
	return []route{
		r("GET /nodes/{node}/storage/{storage}/content", s.storageContent),
		r("POST /nodes/{node}/storage/{storage}/download-url", s.downloadURL),
		r("POST /nodes/{node}/storage/{storage}/upload", s.uploadFile),
		r("GET /nodes/{node}/storage/{storage}/content/{volume}", s.getVolume),
		r("PUT /nodes/{node}/storage/{storage}/content/{volume}", s.putVolume),
		r("DELETE /nodes/{node}/storage/{storage}/content/{volume}", s.deleteVolume),
	}
}

func (s *Server) storageContent(q *request) (any, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, err
	}
	content := q.get("content")
	vmid := q.get("vmid")
	out := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(s.st.Volumes)) {
		v := s.st.Volumes[k]
		if v.Storage != st.ID || content != "" && v.Content != content {
			continue
		}
		if vmid != "" && vmidString(v.VMID) != vmid {
			continue
		}
		// Only volumes the caller may access (pve-storage
		// API2/Storage/Content.pm index: check_volume_access).
		if s.checkVolumeAccess(q.user, 0, v.volid(), "") != nil {
			continue
		}
		row := map[string]any{"volid": v.volid(), "format": v.Format, "size": v.Size, "ctime": v.Ctime}
		if v.Content == "images" || v.Content == "rootdir" {
			row["used"] = v.Size
		}
		if v.VMID != 0 {
			row["vmid"] = v.VMID
		}
		if v.Parent != "" {
			row["parent"] = v.Parent
		}
		out = append(out, row)
	}
	return out, nil
}

// upload is the file part of a multipart upload, spooled to a temp file
// before the state lock is taken.
type upload struct {
	tmp  string
	size int64
}

var (
	fileExt = map[string]*regexp.Regexp{
		"iso":    regexp.MustCompile(`(?i)\.(iso|img)$`),
		"vztmpl": regexp.MustCompile(`\.tar\.(gz|xz|zst|bz2)$`),
		"import": regexp.MustCompile(`(?i)\.(ova|ovf|qcow2|raw|vmdk|img)$`),
	}
	safeFileName = regexp.MustCompile(`^[-\w.+~]+$`)
	hashes       = map[string]func() hash.Hash{
		"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
		"sha384": sha512.New384, "sha512": sha512.New,
	}
)

// contentDir is where a content type lives below a directory storage.
func contentDir(content string) string {
	switch content {
	case "iso":
		return "template/iso"
	case "vztmpl":
		return "template/cache"
	case "backup":
		return "dump"
	}
	return content
}

// volumePath is what PVE reports as a volume's path on the node.
func (s *Server) volumePath(st *storage, v *volume) string {
	file := v.Name
	if i := strings.IndexByte(file, '/'); i >= 0 && v.Content != "images" {
		file = file[i+1:]
	}
	switch {
	case st.Type == "lvm" || st.Type == "lvmthin":
		return "/dev/" + st.VGName + "/" + filepath.Base(v.Name)
	case st.Path != "":
		if v.Content == "images" {
			return filepath.Join(st.Path, "images", v.Name)
		}
		return filepath.Join(st.Path, contentDir(v.Content), file)
	}
	return "/dev/" + v.Name
}

// dataPath is where a simulated file lands in Options.DataDir ("" if unset).
func (s *Server) dataPath(storageID, content, file string) string {
	if s.opts.DataDir == "" {
		return ""
	}
	return filepath.Join(s.opts.DataDir, storageID, contentDir(content), file)
}

// checkNewFile validates a download/upload target and returns the volume name.
func (s *Server) checkNewFile(st *storage, content, filename string) (string, error) {
	if st.Disable {
		return "", fail(http.StatusInternalServerError, "storage '%s' is disabled", st.ID)
	}
	if !st.allows(content) {
		return "", paramErr1("content", "storage '%s' is not configured for content-type '%s'", st.ID, content)
	}
	if !safeFileName.MatchString(filename) {
		return "", paramErr1("filename", "invalid filename '%s'", filename)
	}
	if re := fileExt[content]; re != nil && !re.MatchString(filename) {
		return "", paramErr1("filename", "wrong file extension")
	}
	name := content + "/" + filename
	if _, exists := s.st.Volumes[st.ID+":"+name]; exists {
		return "", fail(http.StatusInternalServerError, "refusing to override existing file '%s'",
			filepath.Join(orDefault(st.Path, "/"), contentDir(content), filename))
	}
	return name, nil
}

func formatOf(content, filename string) string {
	switch {
	case content == "iso":
		return "iso"
	case content == "vztmpl":
		return "t" + strings.TrimPrefix(filepath.Ext(filename), ".") // tzst, tgz, txz
	}
	return strings.TrimPrefix(filepath.Ext(filename), ".")
}

// workerID makes a string safe as the id field of a UPID, like PVE's encode_text.
func workerID(s string) string {
	return strings.NewReplacer(":", "\\x3a", "/", "\\x2f", " ", "\\x20").Replace(s)
}

func (s *Server) downloadURL(q *request) (any, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(q.get("url"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, paramErr1("url", "invalid URL '%s'", q.get("url"))
	}
	content, filename := q.get("content"), q.get("filename")
	name, err := s.checkNewFile(st, content, filename)
	if err != nil {
		return nil, err
	}
	if q.has("checksum") != q.has("checksum-algorithm") {
		return nil, paramErr1("checksum-algorithm", "'checksum' and 'checksum-algorithm' must be given together")
	}
	size := 512 * mib
	if content == "vztmpl" {
		size = 128 * mib
	}
	dst := s.volumePath(st, &volume{Content: content, Name: name})
	return s.startTask(q.vars["node"], "download", workerID(filename), nil, func(t *task) error {
		// The simulator never fetches anything: the volume is data only.
		t.logf("downloading %s to %s", q.get("url"), dst)
		if _, exists := s.st.Volumes[st.ID+":"+name]; exists {
			return fmt.Errorf("refusing to override existing file '%s'", dst)
		}
		if p := s.dataPath(st.ID, content, filename); p != "" {
			if err := writePlaceholder(p, "simulated download of "+q.get("url")+"\n"); err != nil {
				return err
			}
		}
		if q.has("checksum") {
			t.logf("calculating checksum...OK, checksum verified")
		}
		t.logf("download of '%s' to '%s' finished", q.get("url"), dst)
		s.st.addVolume(&volume{Storage: st.ID, Name: name, Content: content, Format: formatOf(content, filename),
			Size: size, Ctime: time.Now().Unix()})
		return nil
	}), nil
}

func writePlaceholder(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

func (s *Server) uploadFile(q *request) (any, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, err
	}
	up := q.upload
	if up == nil {
		return nil, paramErr1("filename", "missing file upload (multipart part 'filename')")
	}
	content, filename := q.get("content"), q.get("filename")
	name, err := s.checkNewFile(st, content, filename)
	if err != nil {
		return nil, err
	}
	algo, want := q.get("checksum-algorithm"), strings.ToLower(q.get("checksum"))
	if (algo == "") != (want == "") {
		return nil, paramErr1("checksum-algorithm", "'checksum' and 'checksum-algorithm' must be given together")
	}
	q.upload = nil // the task owns the temp file now
	dst := s.volumePath(st, &volume{Content: content, Name: name})
	return s.startTask(q.vars["node"], "imgcopy", "", nil, func(t *task) error {
		defer os.Remove(up.tmp)
		t.logf("starting file import from: %s", up.tmp)
		if algo != "" {
			got, err := fileHash(up.tmp, algo)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'", got, want)
			}
			t.logf("calculating checksum of uploaded file...OK, checksum verified")
		}
		t.logf("target node: %s", q.vars["node"])
		t.logf("target file: %s", dst)
		t.logf("file size is: %d", up.size)
		if _, exists := s.st.Volumes[st.ID+":"+name]; exists {
			return fmt.Errorf("refusing to override existing file '%s'", dst)
		}
		if p := s.dataPath(st.ID, content, filename); p != "" {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Rename(up.tmp, p); err != nil {
				return fmt.Errorf("import failed: %v", err)
			}
		}
		t.logf("finished file import successfully")
		s.st.addVolume(&volume{Storage: st.ID, Name: name, Content: content, Format: formatOf(content, filename),
			Size: up.size, Ctime: time.Now().Unix()})
		return nil
	}), nil
}

func fileHash(path, algo string) (string, error) {
	newHash, ok := hashes[algo]
	if !ok {
		return "", fmt.Errorf("unsupported checksum algorithm '%s'", algo)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := newHash()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// volumeOf resolves the {volume} path variable: a full volid or a name on {storage}.
func (s *Server) volumeOf(q *request) (*storage, *volume, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, nil, err
	}
	volid := q.vars["volume"]
	if !strings.Contains(volid, ":") {
		volid = st.ID + ":" + volid
	}
	v, ok := s.st.Volumes[volid]
	if !ok || v.Storage != st.ID {
		return nil, nil, fail(http.StatusInternalServerError, "volume '%s' does not exist", volid)
	}
	return st, v, nil
}

// readableVolume is volumeOf for the calls that need read access to the
// volume (Content.pm info and updateattributes: check_volume_access).
func (s *Server) readableVolume(q *request) (*storage, *volume, error) {
	st, v, err := s.volumeOf(q)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkVolumeAccess(q.user, 0, v.volid(), ""); err != nil {
		return nil, nil, err
	}
	return st, v, nil
}

func (s *Server) getVolume(q *request) (any, error) {
	st, v, err := s.readableVolume(q)
	if err != nil {
		return nil, err
	}
	m := map[string]any{"format": v.Format, "path": s.volumePath(st, v), "size": v.Size, "used": v.Size}
	if v.Notes != "" {
		m["notes"] = v.Notes
	}
	if v.Protect {
		m["protected"] = 1
	}
	return m, nil
}

func (s *Server) putVolume(q *request) (any, error) {
	_, v, err := s.readableVolume(q)
	if err != nil {
		return nil, err
	}
	if q.has("notes") {
		v.Notes = q.get("notes")
	}
	if q.has("protected") {
		v.Protect = q.bool("protected")
	}
	return nil, nil
}

func (s *Server) deleteVolume(q *request) (any, error) {
	st, v, err := s.volumeOf(q)
	if err != nil {
		return nil, err
	}
	// Content.pm delete: a backup needs Datastore.AllocateSpace and
	// VM.Backup on its guest, any other volume Datastore.Allocate.
	if v.Content == "backup" && v.VMID != 0 {
		if err := s.check(q.user, "/storage/"+st.ID, "Datastore.AllocateSpace"); err != nil {
			return nil, err
		}
		if err := s.check(q.user, "/vms/"+vmidString(v.VMID), "VM.Backup"); err != nil {
			return nil, err
		}
	} else if err := s.check(q.user, "/storage/"+st.ID, "Datastore.Allocate"); err != nil {
		return nil, err
	}
	if v.Protect {
		return nil, fail(http.StatusInternalServerError, "volume '%s' is protected", v.volid())
	}
	for _, o := range s.st.Volumes {
		if o.Parent == v.volid() {
			return nil, fail(http.StatusInternalServerError, "base volume '%s' is still in use by linked cloned", v.Name)
		}
	}
	volid := v.volid()
	return s.startTask(q.vars["node"], "imgdel", workerID(volid), nil, func(t *task) error {
		if _, ok := s.st.Volumes[volid]; !ok {
			return fmt.Errorf("volume '%s' does not exist", volid)
		}
		delete(s.st.Volumes, volid)
		if v.Content != "images" {
			if p := s.dataPath(st.ID, v.Content, filepath.Base(v.Name)); p != "" {
				os.Remove(p)
			}
		}
		t.logf("Removed volume '%s'", volid)
		return nil
	}), nil
}

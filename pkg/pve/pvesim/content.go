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
	"slices"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

func (s *Server) contentRoutes() []route {
	return []route{
		r("GET /nodes/{node}/storage/{storage}/content", s.storageContent),
		r("POST /nodes/{node}/storage/{storage}/download-url", s.downloadURL),
		r("POST /nodes/{node}/storage/{storage}/upload", s.uploadFile),
		r("GET /nodes/{node}/storage/{storage}/content/{volume}", s.getVolume),
		r("PUT /nodes/{node}/storage/{storage}/content/{volume}", s.putVolume),
		r("DELETE /nodes/{node}/storage/{storage}/content/{volume}", s.deleteVolume),
		r("GET /nodes/{node}/query-url-metadata", s.queryURLMetadata),
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
		// A guest's volume on a local storage is on the guest's node.
		if n := s.volumeNode(v); n != "" && n != q.vars["node"] {
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
		// pve-storage Plugin.pm list_volumes sets content on every row.
		row := map[string]any{"volid": v.volid(), "content": v.Content, "format": v.Format, "size": v.Size, "ctime": v.Ctime}
		if v.Content == "images" || v.Content == "rootdir" {
			row["used"] = v.Size
		}
		if v.VMID != 0 {
			row["vmid"] = v.VMID
		}
		// Only the file storages report a linked clone's base, as qemu-img
		// shows the backing file: "../9000/base-9000-disk-0.qcow2"
		// (pve-storage src/PVE/Storage/Plugin.pm list_images; LVM-thin,
		// ZFS and RBD list none).
		if _, base, ok := strings.Cut(v.Parent, ":"); ok && isFileStorage(st) {
			row["parent"] = "../" + base
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
	hashes = map[string]func() hash.Hash{
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

// dataPath is where the bytes of an uploaded or downloaded file are kept
// in Options.DataDir: DIR/<storage>/<content>/<filename>, so that tests
// can read them ("" when no data dir is set).
func (s *Server) dataPath(storageID, content, file string) string {
	if s.opts.DataDir == "" {
		return ""
	}
	return filepath.Join(s.opts.DataDir, storageID, content, file)
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
	// pve-common src/PVE/ParseUtils.pm encode_text: control and high-bit
	// bytes, ':' and '%' as %XX.
	var b strings.Builder
	for _, by := range []byte(s) {
		if by < 0x20 || by > 0x7e || by == ':' || by == '%' {
			fmt.Fprintf(&b, "%%%02X", by)
			continue
		}
		b.WriteByte(by)
	}
	return b.String()
}

// fileStorage is the storage of an upload or download: enabled and file
// based (notFile is the message for one that is not, with %s for its
// type: the two calls word it differently).
func (s *Server) fileStorage(q *request, notFile string) (*storage, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, err
	}
	if st.Disable {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is disabled", st.ID)
	}
	if !isFileStorage(st) {
		return nil, fail(http.StatusInternalServerError, notFile, st.Type)
	}
	return st, nil
}

// checkFileExt is the file name check of upload and download_url: the
// extension must suit the content.
func checkFileExt(content, filename string) error {
	if !downloadExt[content].MatchString(filename) {
		msg := "wrong file extension"
		if content == "import" {
			msg = "invalid filename or wrong extension"
		}
		return paramErr1("filename", "%s", msg)
	}
	return nil
}

// checksumParams are an upload's or download's checksum algorithm and
// checksum: both or neither.
func checksumParams(q *request) (algo, want string, err error) {
	algo, want = q.get("checksum-algorithm"), q.get("checksum")
	if (algo == "") != (want == "") {
		return "", "", paramErr1("checksum-algorithm", "'checksum' and 'checksum-algorithm' must be given together")
	}
	return algo, want, nil
}

// downloadURL is pve-storage src/PVE/API2/Storage/Status.pm download_url:
// the storage, content and file name are checked at once; whether the file
// exists is decided by the worker (pve-common Tools.pm
// download_file_from_url): with a checksum that matches the file it ends
// OK without downloading, with another checksum or none it fails. The
// simulator never fetches anything: a download is data, and a host that
// cannot resolve (RFC 6761 .invalid) fails as wget does.
func (s *Server) downloadURL(q *request) (any, error) {
	st, err := s.fileStorage(q, "can't upload to storage type '%s', not a file based storage!")
	if err != nil {
		return nil, err
	}
	content, rawURL := q.get("content"), q.get("url")
	if !st.allows(content) {
		return nil, fail(http.StatusInternalServerError, "storage '%s' is not configured for content-type '%s'", st.ID, content)
	}
	filename := normalizeFilename(q.get("filename"))
	if err := checkFileExt(content, filename); err != nil {
		return nil, err
	}
	algo, want, err := checksumParams(q)
	if err != nil {
		return nil, err
	}
	name := content + "/" + filename
	dst := s.volumePath(st, &volume{Content: content, Name: name})
	node, compression := q.vars["node"], q.get("compression")
	return s.startTask(node, "download", workerID(filename), nil, func(t *task) error {
		if compression != "" && content != "iso" {
			return fmt.Errorf("decompression not supported for %s", content)
		}
		// The schema's enum for compression is an undefined variable
		// (Status.pm: $PVE::Storage::Plugin::KNOWN_COMPRESSION_FORMATS, a
		// constant), so any value gets here; decompressor_info
		// (Storage.pm) knows gz, lzo, zst and bz2.
		if compression != "" && !slices.Contains([]string{"gz", "lzo", "zst", "bz2"}, compression) {
			return fmt.Errorf("no decompression method found")
		}
		t.logf("downloading %s to %s", rawURL, dst)
		if old, exists := s.st.Volumes[st.ID+":"+name]; exists {
			if algo == "" {
				return fmt.Errorf("refusing to override existing file '%s'", dst)
			}
			got := old.checksum(algo)
			if !strings.EqualFold(got, want) {
				return fmt.Errorf("checksum mismatch: got '%s' != expect '%s', aborting", got, want)
			}
			t.logf("calculating checksum of existing file...OK, got correct file already, no need to download")
			return nil
		}
		if host, ok := unresolvable(rawURL); ok {
			t.logf("wget: unable to resolve host address '%s'", host)
			return fmt.Errorf("download failed: command 'wget --progress=dot:giga -O %s.tmp_dwnl.%d %s' failed: exit code 4",
				dst, t.PID, rawURL)
		}
		body := simulatedFile(rawURL)
		if p := s.dataPath(st.ID, content, filename); p != "" {
			if err := writePlaceholder(p, body); err != nil {
				return err
			}
		}
		sums := checksums(strings.NewReader(body))
		if algo != "" {
			// The simulator cannot know the real bytes: it trusts the
			// checksum it was given, and remembers it for the file.
			sums[algo] = strings.ToLower(want)
			t.logf("calculating checksum...OK, checksum verified")
		}
		t.logf("download of '%s' to '%s' finished", rawURL, dst)
		s.st.addVolume(&volume{Storage: st.ID, Name: name, Content: content, Format: formatOf(content, filename),
			Size: simulatedSize(filename), Ctime: time.Now().Unix(), Sums: sums})
		return nil
	}), nil
}

var (
	// downloadExt are pve-storage Storage.pm's ISO_EXT_RE_0, VZTMPL_EXT_RE_1
	// and UPLOAD_IMPORT_EXT_RE_1 as download_url applies them.
	downloadExt = map[string]*lazyre.Regexp{
		"iso":    lazyre.New(`(?i)[^/]+\.(?:iso|img)$`),
		"vztmpl": lazyre.New(`(?i)[^/]+\.(?:tar|tar\.(?:gz|xz|zst|bz2))$`),
		"import": lazyre.New(`[a-zA-Z0-9\-.+=_]+\.(?:ova|qcow2|raw|vmdk)$`),
	}
	unsafeFileChars = lazyre.New(`[^a-zA-Z0-9_.-]`)
)

// normalizeFilename is pve-storage Storage.pm normalize_content_filename:
// the base name, other characters replaced by "_".
func normalizeFilename(f string) string {
	f = strings.TrimSuffix(f, "\n")
	if i := strings.LastIndexAny(f, "/\\"); i >= 0 {
		f = f[i+1:]
	}
	return unsafeFileChars.ReplaceAllString(f, "_")
}

// unresolvable reports a URL whose host no resolver answers. The
// simulated network has every host except those of the top-level domains
// that are never delegated (RFC 2606, RFC 6761): .invalid, .test and
// .example fail as they do on a real node.
func unresolvable(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", true
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	tld := host[strings.LastIndexByte(host, '.')+1:]
	return host, host == "" || tld == "invalid" || tld == "test" || tld == "example"
}

// simulatedFile is what a simulated URL serves: a line naming it.
func simulatedFile(rawURL string) string { return "simulated download of " + rawURL + "\n" }

// simulatedSize is the size the simulated network reports for a file:
// container templates are smaller than disk and ISO images.
func simulatedSize(filename string) int64 {
	if downloadExt["vztmpl"].MatchString(filename) {
		return 128 * mib
	}
	return 512 * mib
}

// checksums hashes r with every algorithm download-url and upload take.
func checksums(r io.Reader) map[string]string {
	hs := map[string]hash.Hash{}
	var ws []io.Writer
	for algo, newHash := range hashes {
		hs[algo] = newHash()
		ws = append(ws, hs[algo])
	}
	io.Copy(io.MultiWriter(ws...), r)
	out := map[string]string{}
	for algo, h := range hs {
		out[algo] = fmt.Sprintf("%x", h.Sum(nil))
	}
	return out
}

// checksum is a file's checksum with algo: the one it was downloaded or
// uploaded with; a file the simulator has no bytes for (seeded) hashes as
// a line naming its volume.
func (v *volume) checksum(algo string) string {
	if sum, ok := v.Sums[algo]; ok {
		return sum
	}
	return checksums(strings.NewReader("simulated volume " + v.volid() + "\n"))[algo]
}

// queryURLMetadata is pve-manager PVE/API2/Nodes.pm query_url_metadata: a
// HEAD request answered by the simulated network (never the real one): the
// file name from the URL, the simulated size and a type by extension; a
// host that cannot resolve is the error LWP reports for it.
func (s *Server) queryURLMetadata(q *request) (any, error) {
	rawURL := q.get("url")
	if host, bad := unresolvable(rawURL); bad {
		port := "443"
		if u, err := url.Parse(rawURL); err == nil {
			if u.Port() != "" {
				port = u.Port()
			} else if u.Scheme == "http" {
				port = "80"
			}
		}
		return nil, fail(http.StatusInternalServerError,
			"invalid server response: '500 Can't connect to %s:%s (Name or service not known)'", host, port)
	}
	// Without a Content-Disposition the name is what follows the URL's
	// last slash before any query ("https://host" names "host").
	path, _, _ := strings.Cut(rawURL, "?")
	file := path[strings.LastIndexByte(path, '/')+1:]
	out := map[string]any{"size": simulatedSize(file), "mimetype": mimeType(file)}
	if file != "" {
		out["filename"] = file
	}
	return out, nil
}

func mimeType(file string) string {
	f := strings.ToLower(file)
	switch {
	case strings.HasSuffix(f, ".iso"):
		return "application/x-iso9660-image"
	case strings.HasSuffix(f, ".tar.zst"):
		return "application/zstd"
	case strings.HasSuffix(f, ".tar.gz"):
		return "application/gzip"
	case strings.HasSuffix(f, ".tar.xz"):
		return "application/x-xz"
	case strings.HasSuffix(f, ".tar.bz2"):
		return "application/x-bzip2"
	case strings.HasSuffix(f, ".tar"), strings.HasSuffix(f, ".ova"):
		return "application/x-tar"
	}
	return "application/octet-stream"
}

func writePlaceholder(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
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

// volumeOf resolves the {volume} path variable: a full volid or a name on
// {storage} (pve-storage src/PVE/API2/Storage/Content.pm, real_volume_id).
func (s *Server) volumeOf(q *request) (*storage, *volume, error) {
	st, volid, err := s.volumeID(q)
	if err != nil {
		return nil, nil, err
	}
	v, ok := s.st.Volumes[volid]
	if !ok {
		return nil, nil, fail(http.StatusInternalServerError, "volume '%s' does not exist", volid)
	}
	return st, v, nil
}

// volumeID is real_volume_id: the volid of the {volume} path variable; a
// volid of another storage than {storage} is refused.
func (s *Server) volumeID(q *request) (*storage, string, error) {
	st, err := s.nodeStorage1(q)
	if err != nil {
		return nil, "", err
	}
	volid := q.vars["volume"]
	sid, _, full := strings.Cut(volid, ":")
	switch {
	case !full:
		volid = st.ID + ":" + volid
	case sid != st.ID:
		return nil, "", paramErr1("volume", "storage ID mismatch (%s != %s)", sid, st.ID)
	}
	return st, volid, nil
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

// deleteVolume is pve-storage Content.pm delete: the worker (id
// "[VMID@]STORAGE") frees the volume. A file that is not there only warns
// (Plugin.pm free_image), so deleting a missing ISO ends "WARNINGS: 1".
func (s *Server) deleteVolume(q *request) (any, error) {
	st, volid, err := s.volumeID(q)
	if err != nil {
		return nil, err
	}
	v, exists := s.st.Volumes[volid]
	if !exists {
		_, name, _ := strings.Cut(volid, ":")
		content, file, _ := strings.Cut(name, "/")
		if !isFileStorage(st) || file == "" || downloadExt[content] == nil || !downloadExt[content].MatchString(file) {
			return nil, fail(http.StatusInternalServerError, "volume '%s' does not exist", volid)
		}
		if err := s.check(q.user, "/storage/"+st.ID, "Datastore.Allocate"); err != nil {
			return nil, err
		}
		path := s.volumePath(st, &volume{Content: content, Name: name})
		return s.startTask(q.vars["node"], "imgdel", st.ID, nil, func(t *task) error {
			t.warn("disk image '%s' does not exist", path)
			t.logf("Removed volume '%s'", volid)
			return nil
		}), nil
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
	id := st.ID
	if v.VMID != 0 {
		id = fmt.Sprintf("%d@%s", v.VMID, st.ID)
	}
	return s.startTask(q.vars["node"], "imgdel", id, nil, func(t *task) error {
		if _, ok := s.st.Volumes[volid]; !ok {
			return fmt.Errorf("volume '%s' does not exist", volid)
		}
		// vdisk_free runs in the imgdel worker and refuses a base volume
		// that a linked clone names (pve-storage src/PVE/Storage.pm
		// vdisk_free, volume_is_base_and_used; API2/Storage/Content.pm
		// delete forks the worker first).
		if s.st.volumeInUseAsBase(volid) {
			return fmt.Errorf("base volume '%s' is still in use by linked clones", v.Name)
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

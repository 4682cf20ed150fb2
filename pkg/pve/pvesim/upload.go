package pvesim

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// uploadPath is the one path pveproxy takes file uploads on.
var uploadPath = lazyre.New(`^/api2/json/nodes/[^/]+/storage/[^/]+/upload$`)

// uploadFields are the text fields pveproxy reads before the file part, in
// this order (pve-http-server src/PVE/APIServer/AnyEvent.pm,
// file_upload_multipart): another field, or one out of order, breaks its
// parse.
var uploadFields = []string{"content", "checksum-algorithm", "checksum"}

// readMultipart spools the file part to a temp file and adds the text
// fields to params. Like pveproxy it wants an explicit Content-Length, the
// fields of uploadFields in their order and then the file part, named
// "filename", whose file name is the filename parameter.
func (s *Server) readMultipart(r *http.Request, params url.Values) (*upload, *apiError) {
	if r.ContentLength < 0 {
		return nil, fail(http.StatusNotImplemented, "chunked transfer encoding not supported")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fail(http.StatusBadRequest, "unable to parse multipart body: %v", err)
	}
	var up *upload
	cleanup := func() {
		if up != nil {
			os.Remove(up.tmp)
		}
	}
	next := 0 // index into uploadFields of the next field pveproxy looks for
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			if up == nil {
				// pveproxy waits for the file part until the body ends.
				return nil, fail(http.StatusInternalServerError, "upload failed")
			}
			return up, nil
		}
		if err != nil {
			cleanup()
			return nil, fail(http.StatusBadRequest, "unable to parse multipart body: %v", err)
		}
		if up != nil {
			// pveproxy writes everything up to the closing boundary into
			// the file: a part after it would end up inside the file.
			cleanup()
			return nil, fail(http.StatusInternalServerError, "upload failed: part '%s' after the file part would be stored inside the file", part.FormName())
		}
		if part.FileName() == "" {
			i := slices.Index(uploadFields[next:], part.FormName())
			if i < 0 {
				return nil, fail(http.StatusInternalServerError, "upload failed: pveproxy reads only %s, in this order, before the file part (got '%s')",
					strings.Join(uploadFields, ", "), part.FormName())
			}
			next += i + 1
			b, err := io.ReadAll(io.LimitReader(part, maxBody))
			if err != nil {
				return nil, fail(http.StatusBadRequest, "unable to read multipart field: %v", err)
			}
			params.Set(part.FormName(), strings.TrimSpace(string(b)))
			continue
		}
		if part.FormName() != "filename" {
			return nil, fail(http.StatusInternalServerError, "wrong field name '%s' for file upload, expected 'filename'", part.FormName())
		}
		dir := os.TempDir()
		if s.opts.DataDir != "" {
			dir = s.opts.DataDir
		}
		f, err := os.CreateTemp(dir, ".pveupload-*")
		if err != nil {
			return nil, fail(http.StatusInternalServerError, "unable to create upload file: %v", err)
		}
		n, err := io.Copy(f, part)
		f.Close()
		up = &upload{tmp: f.Name(), size: n}
		if err != nil {
			cleanup()
			return nil, fail(http.StatusBadRequest, "upload failed: %v", err)
		}
		params.Set("filename", strings.TrimSpace(part.FileName()))
	}
}

// uploadFile is pve-storage src/PVE/API2/Storage/Status.pm upload: the
// storage, the file name (normalised, not refused) and its extension are
// checked at once; the worker verifies a checksum and copies the file into
// place, overwriting one of the same name ("we simply overwrite the
// destination file if it already exists").
func (s *Server) uploadFile(q *request) (any, error) {
	st, err := s.fileStorage(q, "can't upload to storage type '%s'")
	if err != nil {
		return nil, err
	}
	up := q.upload
	if up == nil {
		return nil, fail(http.StatusInternalServerError, "missing temporary file name")
	}
	content := q.get("content")
	filename := normalizeFilename(q.get("filename"))
	if err := checkFileExt(content, filename); err != nil {
		return nil, err
	}
	if !st.allows(content) {
		return nil, fail(http.StatusInternalServerError, "storage '%s' does not support '%s' content", st.ID, content)
	}
	algo, want, err := checksumParams(q)
	if err != nil {
		return nil, err
	}
	q.upload = nil // the task owns the temp file now
	name := content + "/" + filename
	node := q.vars["node"]
	dst := s.volumePath(st, &volume{Content: content, Name: name})
	return s.startTask(node, "imgcopy", "", nil, func(t *task) error {
		defer os.Remove(up.tmp)
		t.logf("starting file import from: %s", up.tmp)
		if algo != "" {
			got, err := fileHash(up.tmp, algo)
			if err != nil {
				return err
			}
			if !strings.EqualFold(got, want) {
				return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'", got, want)
			}
			t.logf("calculating checksum...OK, checksum verified")
		}
		t.logf("target node: %s", node)
		t.logf("target file: %s", dst)
		t.logf("file size is: %d", up.size)
		t.logf("command: cp -- %s %s", up.tmp, dst)
		f, err := os.Open(up.tmp)
		if err != nil {
			return err
		}
		sums := checksums(f)
		f.Close()
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
			Size: up.size, Ctime: time.Now().Unix(), Sums: sums})
		return nil
	}), nil
}

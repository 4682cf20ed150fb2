package pvesim_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// part is one multipart part: a text field, or the file when file is set.
type part struct {
	name, value string
	file        string // the part's filename attribute
}

// upload posts parts as multipart to path (below /api2/json); chunked
// sends the body without a Content-Length.
func (e *env) upload(path string, parts []part, chunked bool) envelope {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		if p.file == "" {
			mw.WriteField(p.name, p.value)
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.file))
		w, _ := mw.CreatePart(h)
		io.WriteString(w, p.value)
	}
	mw.Close()
	var r io.Reader = bytes.NewReader(body.Bytes())
	if chunked {
		r = io.MultiReader(r) // hides the length: the client sends chunks
	}
	req, _ := http.NewRequest("POST", e.URL+"/api2/json"+path, r)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "PVEAPIToken="+testToken+"="+testSecret)
	return e.do(req)
}

func (e *env) do(req *http.Request) envelope {
	e.t.Helper()
	resp, err := e.HTTP.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env envelope
	if err := jsonDecode(resp.Body, &env); err != nil && err != io.EOF {
		e.t.Fatal(err)
	}
	env.Status = resp.StatusCode
	env.Message = strings.TrimSuffix(env.Message, "\n")
	return env
}

func (e *env) uploadTask(path string, parts []part) taskStatus {
	e.t.Helper()
	r := e.upload(path, parts, false)
	var upid string
	if r.Status != 200 || jsonUnmarshal(r.Data, &upid) != nil {
		e.t.Fatalf("upload: got %d %q %v, want a task", r.Status, r.Message, r.Errors)
	}
	return e.wait(upid)
}

func seedParts(filename, data string, checksum string) []part {
	ps := []part{{name: "content", value: "iso"}}
	if checksum != "" {
		ps = append(ps, part{name: "checksum-algorithm", value: "sha256"}, part{name: "checksum", value: checksum})
	}
	return append(ps, part{name: "filename", file: filename, value: data})
}

// pve-storage src/PVE/API2/Storage/Status.pm upload: the checksum is
// verified in the worker, the bytes land in the data dir as
// DIR/<storage>/<content>/<filename>, and an upload of an existing name
// overwrites it.
func TestUpload(t *testing.T) {
	dir := t.TempDir()
	e := startEnv(t, simtest.Options{Sim: pvesim.Options{DataDir: dir}, Conformance: true})
	const path = "/nodes/pve/storage/local/upload"
	payload := "#cloud-config\nhostname: a\n"
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(payload)))

	if st := e.uploadTask(path, seedParts("seed.iso", payload, strings.Repeat("0", 64))); st.ExitStatus != "checksum mismatch: got '"+sum+"' != expect '"+strings.Repeat("0", 64)+"'" {
		t.Errorf("got exit status %q, want checksum mismatch", st.ExitStatus)
	}
	if st := e.uploadTask(path, seedParts("seed.iso", payload, strings.ToUpper(sum))); st.ExitStatus != "OK" || st.Type != "imgcopy" {
		t.Fatalf("got %+v, want imgcopy OK (checksums compare case-insensitively)", st)
	}
	file := filepath.Join(dir, "local", "iso", "seed.iso")
	if got, err := os.ReadFile(file); err != nil || string(got) != payload {
		t.Errorf("got file %q (%v), want the uploaded bytes", got, err)
	}
	contentIs := func(size int) {
		t.Helper()
		content := e.rows("/nodes/pve/storage/local/content", "content", "iso")
		if len(content) != 1 || content[0]["volid"] != "local:iso/seed.iso" || content[0]["size"] != float64(size) || content[0]["content"] != "iso" {
			t.Errorf("got iso content %v, want one seed.iso of %d bytes", content, size)
		}
	}
	contentIs(len(payload))

	// "we simply overwrite the destination file if it already exists"
	second := "#cloud-config\nhostname: second\n"
	if st := e.uploadTask(path, seedParts("seed.iso", second, "")); st.ExitStatus != "OK" {
		t.Fatalf("upload over an existing file: got %q, want OK", st.ExitStatus)
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != second {
		t.Errorf("got file %q (%v) after the second upload, want its bytes", got, err)
	}
	contentIs(len(second))

	// The name is normalised, not refused.
	if st := e.uploadTask(path, seedParts("my seed.iso", payload, "")); st.ExitStatus != "OK" {
		t.Fatalf("upload of 'my seed.iso': got %q", st.ExitStatus)
	}
	if _, err := os.Stat(filepath.Join(dir, "local", "iso", "my_seed.iso")); err != nil {
		t.Errorf("got no my_seed.iso: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".pveupload-*"))
	if len(leftovers) != 0 {
		t.Errorf("got temp files %v after uploads, want none", leftovers)
	}
}

// pve-http-server src/PVE/APIServer/AnyEvent.pm (file_upload_multipart)
// reads content, checksum-algorithm and checksum before the file part,
// named "filename", and wants a Content-Length; pve-manager
// PVE/HTTPServer.pm takes uploads on …/upload only; Status.pm upload checks
// the storage, extension and content at once.
func TestUploadRefusals(t *testing.T) {
	e := newEnv(t, pvesim.Options{})
	e.ok(nil, "POST", "/storage", "storage", "d1", "type", "dir", "path", "/srv/d1", "content", "backup")
	const path = "/nodes/pve/storage/local/upload"
	file := part{name: "filename", file: "seed.iso", value: "x"}
	tests := []struct {
		name    string
		path    string
		parts   []part
		chunked bool
		status  int
		msg     string
		errs    map[string]string
	}{
		{name: "chunked", path: path, parts: []part{{name: "content", value: "iso"}, file}, chunked: true,
			status: 501, msg: "chunked transfer encoding not supported"},
		{name: "checksum before its algorithm", path: path, parts: []part{{name: "content", value: "iso"},
			{name: "checksum", value: "ab"}, {name: "checksum-algorithm", value: "sha256"}, file}, status: 500,
			msg: "upload failed: pveproxy reads only content, checksum-algorithm, checksum, in this order, before the file part (got 'checksum-algorithm')"},
		{name: "another field", path: path, parts: []part{{name: "node", value: "pve"}, {name: "content", value: "iso"}, file},
			status: 500, msg: "upload failed: pveproxy reads only content, checksum-algorithm, checksum, in this order, before the file part (got 'node')"},
		{name: "field after the file", path: path, parts: []part{file, {name: "content", value: "iso"}}, status: 500,
			msg: "upload failed: part 'content' after the file part would be stored inside the file"},
		{name: "file part named file", path: path, parts: []part{{name: "content", value: "iso"}, {name: "file", file: "seed.iso", value: "x"}},
			status: 500, msg: "wrong field name 'file' for file upload, expected 'filename'"},
		{name: "no file", path: path, parts: []part{{name: "content", value: "iso"}}, status: 500, msg: "upload failed"},
		{name: "wrong extension", path: path, parts: []part{{name: "content", value: "iso"}, {name: "filename", file: "seed.txt", value: "x"}},
			status: 400, errs: map[string]string{"filename": "wrong file extension"}},
		{name: "content the storage lacks", path: "/nodes/pve/storage/d1/upload", parts: []part{{name: "content", value: "iso"}, file},
			status: 500, msg: "storage 'd1' does not support 'iso' content"},
		{name: "not a file storage", path: "/nodes/pve/storage/local-lvm/upload", parts: []part{{name: "content", value: "iso"}, file},
			status: 500, msg: "can't upload to storage type 'lvmthin'"},
		{name: "multipart elsewhere", path: "/nodes/pve/storage/local/download-url", parts: []part{{name: "content", value: "iso"}},
			status: 506},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.upload(tc.path, tc.parts, tc.chunked)
			if r.Status != tc.status || (tc.msg != "" && r.Message != tc.msg) || (tc.errs != nil && !equalErrs(r.Errors, tc.errs)) {
				t.Errorf("got %d %q %v, want %d %q %v", r.Status, r.Message, r.Errors, tc.status, tc.msg, tc.errs)
			}
		})
	}

	// A form body is not an upload.
	req, _ := http.NewRequest("POST", e.URL+"/api2/json"+path, strings.NewReader(url.Values{"content": {"iso"}, "filename": {"a.iso"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+testToken+"="+testSecret)
	if r := e.do(req); r.Status != 500 || !strings.HasPrefix(r.Message, "upload 'Content-Type 'application/x-www-form-urlencoded' not implemented") {
		t.Errorf("form upload: got %d %q, want 500 not implemented", r.Status, r.Message)
	}
}

func equalErrs(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// pve-storage Content.pm delete: the worker id is the storage (with the
// owner's vmid for a guest's volume); Plugin.pm free_image only warns about
// a file that is not there; a volid of another storage is refused.
func TestDeleteVolume(t *testing.T) {
	dir := t.TempDir()
	e := startEnv(t, simtest.Options{Sim: pvesim.Options{DataDir: dir}, Conformance: true})
	if st := e.uploadTask("/nodes/pve/storage/local/upload", seedParts("seed.iso", "x", "")); st.ExitStatus != "OK" {
		t.Fatalf("upload: %q", st.ExitStatus)
	}
	st := e.wait(e.task("DELETE", "/nodes/pve/storage/local/content/"+url.PathEscape("local:iso/seed.iso")))
	if st.ExitStatus != "OK" || st.Type != "imgdel" || st.ID != "local" {
		t.Errorf("delete: got %+v, want imgdel OK with id local", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "local", "iso", "seed.iso")); !os.IsNotExist(err) {
		t.Errorf("the file is still in the data dir (%v)", err)
	}
	st = e.wait(e.task("DELETE", "/nodes/pve/storage/local/content/"+url.PathEscape("iso/seed.iso")))
	if st.ExitStatus != "WARNINGS: 1" || !slices.Contains(e.taskLog(st.UPID), "WARN: disk image '/var/lib/vz/template/iso/seed.iso' does not exist") {
		t.Errorf("delete of a missing ISO: got %q %q, want WARNINGS: 1 and free_image's warning", st.ExitStatus, e.taskLog(st.UPID))
	}
	r := e.call("DELETE", "/nodes/pve/storage/local/content/"+url.PathEscape("local-lvm:vm-9000-cloudinit"))
	if r.Status != 400 || r.Errors["volume"] != "storage ID mismatch (local-lvm != local)" {
		t.Errorf("got %d %v, want 400 storage ID mismatch", r.Status, r.Errors)
	}
}

// pve-storage Status.pm download_url: compression has no enum in the
// schema, so the worker refuses what decompressor_info does not know, and
// decompresses ISO images only.
func TestDownloadCompression(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	tests := []struct{ content, file, comp, exit string }{
		{"iso", "a.iso", "xz", "no decompression method found"},
		{"vztmpl", "a.tar.gz", "zst", "decompression not supported for vztmpl"},
		{"iso", "b.iso", "zst", "OK"},
	}
	for _, tc := range tests {
		st := e.wait(e.task("POST", "/nodes/pve/storage/local/download-url", "url", "https://example.org/"+tc.file,
			"content", tc.content, "filename", tc.file, "compression", tc.comp))
		if st.ExitStatus != tc.exit {
			t.Errorf("%s with %s: got %q, want %q", tc.file, tc.comp, st.ExitStatus, tc.exit)
		}
	}
}

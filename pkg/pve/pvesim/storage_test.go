package pvesim_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func TestDownloadAndDeleteContent(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, pvesim.Options{DataDir: dir})
	const noble = "https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img"
	r := e.call("POST", "/nodes/pve/storage/local-lvm/download-url", "url", "https://releases.ubuntu.com/x.iso",
		"content", "iso", "filename", "x.iso")
	if want := "can't upload to storage type 'lvmthin', not a file based storage!"; r.Status != 500 || r.Message != want {
		t.Errorf("got %d %q downloading an ISO to local-lvm, want 500 %q", r.Status, r.Message, want)
	}
	if r := e.call("POST", "/nodes/pve/storage/local/download-url", "url", "https://releases.ubuntu.com/x.iso",
		"content", "iso", "filename", "x.txt"); r.Status != 400 || r.Errors["filename"] != "wrong file extension" {
		t.Errorf("got %d %v for a wrong extension, want 400 errors.filename", r.Status, r.Errors)
	}
	e.run("POST", "/nodes/pve/storage/local/download-url", "url", noble, "content", "import", "filename", "noble.qcow2")
	if _, err := os.Stat(filepath.Join(dir, "local", "import", "noble.qcow2")); err != nil {
		t.Errorf("got no placeholder in the data dir: %v", err)
	}
	// The worker decides: the file is there, and no checksum says it is the same.
	upid := e.task("POST", "/nodes/pve/storage/local/download-url", "url", noble, "content", "import", "filename", "noble.qcow2")
	if st := e.wait(upid); st.ExitStatus != "refusing to override existing file '/var/lib/vz/import/noble.qcow2'" {
		t.Errorf("got exit status %q downloading twice, want refusing to override", st.ExitStatus)
	}

	// The imported image can back a new disk.
	e.run("POST", "/nodes/pve/qemu", "vmid", "120", "scsi0", "local-lvm:0,import-from=local:import/noble.qcow2")
	if c := e.config("120"); c["scsi0"] != "local-lvm:vm-120-disk-0,size=512M" {
		t.Errorf("got scsi0 %v, want the imported size", c["scsi0"])
	}

	vol := e.object("/nodes/pve/storage/local/content/" + url.PathEscape("local:import/noble.qcow2"))
	if vol["path"] != "/var/lib/vz/import/noble.qcow2" || vol["format"] != "qcow2" {
		t.Errorf("got volume %v", vol)
	}
	e.run("DELETE", "/nodes/pve/storage/local/content/"+url.PathEscape("local:import/noble.qcow2"))
	if r := e.call("GET", "/nodes/pve/storage/local/content/"+url.PathEscape("import/noble.qcow2")); r.Status != 500 {
		t.Errorf("got %d reading a deleted volume, want 500", r.Status)
	}
	if r := e.call("DELETE", "/nodes/pve/storage/local-lvm/content/"+url.PathEscape("local-lvm:base-9000-disk-0")); r.Status != 200 {
		t.Errorf("got %d deleting an unused base volume, want 200", r.Status)
	}
}

// pve-common SectionConfig.pm check_value: storage.cfg booleans and
// integers come back as numbers.
func TestStorageConfigTypes(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "d1", "type", "dir", "path", "/srv/d1", "mkdir", "0",
		"is_mountpoint", "yes", "max-protected-backups", "3", "prune-backups", "keep-last=2")
	cfg := e.object("/storage/d1")
	got := map[string]any{"mkdir": cfg["mkdir"], "is_mountpoint": cfg["is_mountpoint"],
		"max-protected-backups": cfg["max-protected-backups"], "prune-backups": cfg["prune-backups"]}
	want := map[string]any{"mkdir": float64(0), "is_mountpoint": "yes", "max-protected-backups": float64(3), "prune-backups": "keep-last=2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("storage d1 (-want +got)\n%s", diff)
	}
}

// pve-common Tools.pm download_file_from_url: the worker decides on an
// existing file, by its checksum.
func TestDownloadOfAnExistingFile(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	const iso = "https://releases.ubuntu.com/24.04/ubuntu-24.04-live-server-amd64.iso"
	sum := strings.Repeat("ab", 32)
	dl := func(kv ...string) taskStatus {
		t.Helper()
		base := []string{"url", iso, "content", "iso", "filename", "ubuntu.iso"}
		return e.wait(e.task("POST", "/nodes/pve/storage/local/download-url", append(base, kv...)...))
	}
	if st := dl("checksum", sum, "checksum-algorithm", "sha256"); st.ExitStatus != "OK" {
		t.Fatalf("first download: got %q, want OK", st.ExitStatus)
	}
	tests := []struct {
		name string
		kv   []string
		exit string
		log  string
	}{
		{"same checksum", []string{"checksum", strings.ToUpper(sum), "checksum-algorithm", "sha256"}, "OK",
			"calculating checksum of existing file...OK, got correct file already, no need to download"},
		{"other checksum", []string{"checksum", strings.Repeat("cd", 32), "checksum-algorithm", "sha256"},
			"checksum mismatch: got '" + sum + "' != expect '" + strings.Repeat("cd", 32) + "', aborting", ""},
		{"no checksum", nil, "refusing to override existing file '/var/lib/vz/template/iso/ubuntu.iso'", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := dl(tc.kv...)
			if st.ExitStatus != tc.exit {
				t.Errorf("got exit status %q, want %q", st.ExitStatus, tc.exit)
			}
			if tc.log != "" && !slices.Contains(e.taskLog(st.UPID), tc.log) {
				t.Errorf("got log %q, want a line %q", e.taskLog(st.UPID), tc.log)
			}
		})
	}
	content := e.rows("/nodes/pve/storage/local/content", "content", "iso")
	if len(content) != 1 {
		t.Errorf("got iso content %v, want the one file", content)
	}

	// A host that never resolves fails in the worker as wget does; the
	// name is normalised, not refused.
	st := e.wait(e.task("POST", "/nodes/pve/storage/local/download-url", "url", "https://mirror.invalid/a.iso",
		"content", "iso", "filename", "my image.iso"))
	if !strings.HasPrefix(st.ExitStatus, "download failed: command 'wget --progress=dot:giga -O /var/lib/vz/template/iso/my_image.iso.tmp_dwnl.") {
		t.Errorf("got exit status %q, want wget's failure", st.ExitStatus)
	}
}

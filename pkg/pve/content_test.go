package pve_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// TestUploadListDelete: Upload's multipart is the one pveproxy parses
// (the simulator refuses any other field order, a chunked body and a file
// part of another name), the bytes arrive intact and checksummed, an
// upload of the same name overwrites, the listing shows the file, and
// DeleteVolume waits for its task. The --debug trace names the fields and
// the file's size, never its bytes.
func TestUploadListDelete(t *testing.T) {
	dir := t.TempDir()
	var trace bytes.Buffer
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{DataDir: dir}, Conformance: true,
		ClientOptions: []pve.Option{pve.WithDebug(&trace)}})
	ctx := context.Background()
	data := []byte("#cloud-config\npassword: not-in-the-trace\n")
	for i, d := range [][]byte{[]byte("first"), data} {
		if err := s.Client.Upload(ctx, "pve", "local", pve.UploadFile{Content: "iso", Filename: "seed.iso", Data: d}); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "local", "iso", "seed.iso")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("got %q (%v) in the data dir, want the second upload's bytes", got, err)
	}
	vols, err := s.Client.StorageContent(ctx, "pve", "local", "iso")
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 1 || vols[0].VolID != "local:iso/seed.iso" || vols[0].Size != int64(len(data)) || vols[0].Name() != "iso/seed.iso" || vols[0].Content != "iso" {
		t.Errorf("got %+v, want one local:iso/seed.iso of %d bytes", vols, len(data))
	}
	if err := s.Client.DeleteVolume(ctx, "pve", "local", "local:iso/seed.iso"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if vols, err := s.Client.StorageContent(ctx, "pve", "local", "iso"); err != nil || len(vols) != 0 {
		t.Errorf("after delete: got %+v, %v, want none", vols, err)
	}
	tr := trace.String()
	if strings.Contains(tr, "not-in-the-trace") {
		t.Errorf("the trace shows the uploaded bytes:\n%s", tr)
	}
	if !strings.Contains(tr, "checksum-algorithm=sha256&content=iso&filename=seed.iso") || !strings.Contains(tr, "the file, 41 bytes") {
		t.Errorf("the trace does not name the upload's fields and size:\n%s", tr)
	}
}

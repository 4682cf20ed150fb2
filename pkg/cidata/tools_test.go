package cidata

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/internal/testtool"
)

// The acceptance check of issue 8 item 4, per format: blkid (which
// cloud-init asks for LABEL= and TYPE=iso9660 devices) sees the label,
// and xorriso and isoinfo read the image and give back the exact bytes of
// every file under its real name.

func TestRealReaders(t *testing.T) {
	for _, s := range []Seed{webSeed(), cd2Seed()} {
		t.Run(string(s.format()), func(t *testing.T) {
			xorriso := testtool.Path(t, "xorriso", "xorriso")
			isoinfo := testtool.Path(t, "isoinfo", "genisoimage")
			iso := filepath.Join(t.TempDir(), "seed.iso")
			if err := os.WriteFile(iso, build(t, s), 0o644); err != nil {
				t.Fatal(err)
			}
			label := s.format().Label()
			files := fileMap(t, s)

			blkid := testtool.Path(t, "blkid", "util-linux")
			probe, _ := testtool.Run(t, blkid, "-p", "-o", "export", iso)
			if lines := strings.Split(probe, "\n"); !slices.Contains(lines, "LABEL="+label) || !slices.Contains(lines, "TYPE=iso9660") {
				t.Errorf("blkid -p: want LABEL=%s and TYPE=iso9660:\n%s", label, probe)
			}

			out, errOut := testtool.Run(t, xorriso, "-indev", iso, "-find", "/", "-type", "f", "-exec", "lsdl", "--")
			if !strings.Contains(errOut+out, "Volume id    : '"+label+"'") {
				t.Errorf("xorriso does not show label %q:\n%s%s", label, errOut, out)
			}
			if m := regexp.MustCompile(`(?m)^xorriso : (WARNING|SORRY|FAILURE|FATAL).*$`).FindString(errOut); m != "" {
				t.Errorf("xorriso: %s", m)
			}
			for p, data := range files {
				want := regexp.MustCompile(`(?m)^-r--r--r-- +1 0 +0 +` + strconv.Itoa(len(data)) + ` .*'/` + regexp.QuoteMeta(p) + `'$`)
				if !want.MatchString(out) {
					t.Errorf("xorriso lists no /%s of %d bytes:\n%s", p, len(data), out)
				}
			}
			if n := len(regexp.MustCompile(`(?m)^-`).FindAllString(out, -1)); n != len(files) {
				t.Errorf("xorriso lists %d files, want %d:\n%s", n, len(files), out)
			}
			dir := filepath.Join(t.TempDir(), "x")
			testtool.Run(t, xorriso, "-osirrox", "on", "-indev", iso, "-extract", "/", dir)
			for p, data := range files {
				if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(got) != data {
					t.Errorf("xorriso extracted /%s: %q (%v), want %q", p, got, err, data)
				}
			}

			d, _ := testtool.Run(t, isoinfo, "-d", "-i", iso)
			if !strings.Contains(d, "Volume id: "+label+"\n") || !strings.Contains(d, "Rock Ridge signatures") || !strings.Contains(d, "Joliet with UCS level 3") {
				t.Errorf("isoinfo -d: want label %q, Rock Ridge and Joliet:\n%s", label, d)
			}
			for p, data := range files {
				for _, ext := range []string{"-J", "-R"} {
					if got, _ := testtool.Run(t, isoinfo, ext, "-x", "/"+p, "-i", iso); got != data {
						t.Errorf("isoinfo %s -x /%s = %q, want %q", ext, p, got, data)
					}
				}
			}
		})
	}
}

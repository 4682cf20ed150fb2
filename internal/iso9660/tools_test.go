package iso9660

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/internal/testtool"
)

// These tests hand the images to the real readers: xorriso (libisofs) and
// isoinfo (genisoimage's reader), and compare with what genisoimage itself
// writes for the same files, as PVE runs it.

func writeImage(t *testing.T, v Volume) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "test.iso")
	if err := os.WriteFile(p, mustBytes(t, v), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// complaint is any xorriso message above NOTE/UPDATE severity.
var complaint = regexp.MustCompile(`(?m)^(?:xorriso|libisofs|libburn) : (?:WARNING|SORRY|FAILURE|FATAL|MISHAP|ABORT)`)

func xorriso(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut := testtool.Run(t, testtool.Path(t, "xorriso", "xorriso"), args...)
	if m := complaint.FindString(errOut + out); m != "" {
		t.Errorf("xorriso %s complained:\n%s%s", strings.Join(args, " "), errOut, out)
	}
	return out
}

func isoinfo(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := testtool.Run(t, testtool.Path(t, "isoinfo", "genisoimage"), args...)
	return out
}

// lsdl is what `xorriso -find / -exec lsdl` shows per node, dates left out.
var lsdlLine = regexp.MustCompile(`^([-dr-x]{10})\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+\w+\s+\d+\s+[\d:]+\s+'(.*)'$`)

func xorrisoTree(t *testing.T, iso string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(xorriso(t, "-indev", iso, "-find", "/", "-exec", "lsdl", "--"), "\n") {
		if m := lsdlLine.FindStringSubmatch(line); m != nil {
			out = append(out, fmt.Sprintf("%s %s:%s %s %s", m[1], m[2], m[3], m[4], m[5]))
		}
	}
	slices.Sort(out)
	return out
}

func wantTree(v Volume) []string {
	out := []string{"dr-xr-xr-x 0:0 0 /"}
	sizes := map[string]int{}
	for _, f := range v.Files {
		sizes["/"+f.Path] = len(f.Data)
	}
	for p := range wantPaths(v) {
		if n, ok := sizes[p]; ok {
			out = append(out, fmt.Sprintf("-r--r--r-- 0:0 %d %s", n, p))
		} else {
			out = append(out, "dr-xr-xr-x 0:0 0 "+p)
		}
	}
	slices.Sort(out)
	return out
}

func TestXorrisoReadsBack(t *testing.T) {
	for name, v := range fixtures() {
		t.Run(name, func(t *testing.T) {
			iso := writeImage(t, v)
			out := xorriso(t, "-indev", iso, "-pvd_info")
			if !strings.Contains(out, "Volume Id    : "+v.Label+"\n") {
				t.Errorf("xorriso -pvd_info does not show label %q:\n%s", v.Label, out)
			}
			if diff := cmp.Diff(wantTree(v), xorrisoTree(t, iso)); diff != "" {
				t.Errorf("xorriso tree (-want +got):\n%s", diff)
			}
			dir := filepath.Join(t.TempDir(), "x")
			xorriso(t, "-osirrox", "on", "-indev", iso, "-extract", "/", dir)
			for _, f := range v.Files {
				got, err := os.ReadFile(filepath.Join(dir, f.Path))
				if err != nil {
					t.Errorf("extracted %s: %v", f.Path, err)
				} else if !bytes.Equal(got, f.Data) {
					t.Errorf("extracted %s: %d bytes differ from the %d written", f.Path, len(got), len(f.Data))
				}
			}
		})
	}
}

// TestXorrisoLayout compares the extents xorriso reports for each file
// with those the test reader finds in the directory records.
func TestXorrisoLayout(t *testing.T) {
	lbaLine := regexp.MustCompile(`^File data lba:\s+0\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*'(.*)'$`)
	for name, v := range fixtures() {
		t.Run(name, func(t *testing.T) {
			img := mustBytes(t, v)
			iso := writeImage(t, v)
			vol, err := readVolume(img, false)
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, e := range vol.Entries {
				if !e.Dir {
					want = append(want, fmt.Sprintf("%d %d %d %s", e.LBA, (e.Size+sectorSize-1)/sectorSize, e.Size, e.Path))
				}
			}
			for _, line := range strings.Split(xorriso(t, "-indev", iso, "-find", "/", "-exec", "report_lba", "--"), "\n") {
				if m := lbaLine.FindStringSubmatch(line); m != nil {
					got = append(got, strings.Join(m[1:], " "))
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("file extents, test reader (-) vs xorriso (+):\n%s", diff)
			}
		})
	}
}

func TestIsoinfoReadsBack(t *testing.T) {
	for name, v := range fixtures() {
		t.Run(name, func(t *testing.T) {
			img := mustBytes(t, v)
			iso := writeImage(t, v)
			d := isoinfo(t, "-d", "-i", iso)
			for _, want := range []string{
				"Volume id: " + v.Label + "\n",
				"Volume size is: " + strconv.Itoa(len(img)/sectorSize) + "\n",
				"Joliet with UCS level 3 found",
				"Rock Ridge signatures version 1 found",
			} {
				if !strings.Contains(d, want) {
					t.Errorf("isoinfo -d lacks %q:\n%s", want, d)
				}
			}
			for _, f := range v.Files {
				for _, ext := range []string{"-J", "-R"} {
					got := isoinfo(t, ext, "-x", "/"+f.Path, "-i", iso)
					if got != string(f.Data) {
						t.Errorf("isoinfo %s -x /%s: %d bytes differ from the %d written", ext, f.Path, len(got), len(f.Data))
					}
				}
			}
			for _, joliet := range []bool{false, true} {
				vol, err := readVolume(img, joliet)
				if err != nil {
					t.Fatal(err)
				}
				checkIsoinfoPathTable(t, iso, vol, joliet)
				checkIsoinfoListing(t, iso, vol, joliet)
			}
		})
	}
}

// checkIsoinfoPathTable: `isoinfo -p` prints "num: parent lba(hex) name".
func checkIsoinfoPathTable(t *testing.T, iso string, vol *volume, joliet bool) {
	t.Helper()
	args := []string{"-p", "-i", iso}
	if joliet {
		args = append([]string{"-J"}, args...)
	}
	var want, got []string
	for _, e := range vol.L {
		want = append(want, fmt.Sprintf("%d %d %x %s", e.Num, e.Parent, e.LBA, e.ID))
	}
	line := regexp.MustCompile(`^\s*(\d+):\s+(\d+)\s+([0-9a-f]+)\s?(.*)$`)
	for _, l := range strings.Split(isoinfo(t, args...), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			got = append(got, strings.TrimSpace(strings.Join(m[1:], " ")))
		}
	}
	for i := range want {
		want[i] = strings.TrimSpace(want[i])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("joliet=%v: path table, test reader (-) vs isoinfo -p (+):\n%s", joliet, diff)
	}
}

// checkIsoinfoListing: `isoinfo -l` (primary identifiers) or `-J -l`
// lists every record with its extent and flags, in on-disk order.
func checkIsoinfoListing(t *testing.T, iso string, vol *volume, joliet bool) {
	t.Helper()
	args := []string{"-l", "-i", iso}
	if joliet {
		args = append([]string{"-J"}, args...)
	}
	var want, got []string
	for _, e := range vol.Entries {
		flags := 0
		if e.Dir {
			flags = 2
		}
		want = append(want, fmt.Sprintf("%d %02d %d %s", e.LBA, flags, e.Size, e.ID))
	}
	line := regexp.MustCompile(`^\S{10}\s+\d+\s+\d+\s+\d+\s+(\d+) .*\[\s*(\d+) (\d+)\]\s+(.*?)\s*$`)
	for _, l := range strings.Split(isoinfo(t, args...), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || m[4] == "." || m[4] == ".." {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", m[2], m[3], m[1], m[4]))
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("joliet=%v: records, test reader (-) vs isoinfo -l (+):\n%s", joliet, diff)
	}
}

// TestLikeGenisoimage builds the cloud-init layouts with genisoimage as PVE
// runs it (-iso-level 3 -J -R, here -r for its fixed owners and modes) and
// checks that every reader view matches: Rock Ridge tree, primary and
// Joliet names.
func TestLikeGenisoimage(t *testing.T) {
	geniso := testtool.Path(t, "genisoimage", "genisoimage")
	for _, name := range []string{"nocloud", "configdrive2"} {
		v := fixtures()[name]
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			for _, f := range v.Files {
				p := filepath.Join(src, f.Path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ref := filepath.Join(t.TempDir(), "ref.iso")
			testtool.Run(t, geniso, "-quiet", "-iso-level", "3", "-J", "-r", "-V", v.Label, "-o", ref, src)
			ours := writeImage(t, v)
			if diff := cmp.Diff(xorrisoTree(t, ref), xorrisoTree(t, ours)); diff != "" {
				t.Errorf("Rock Ridge tree, genisoimage (-) vs ours (+):\n%s", diff)
			}
			for _, mode := range [][]string{{"-l"}, {"-J", "-l"}} {
				if diff := cmp.Diff(names(isoinfo(t, append(mode, "-i", ref)...)), names(isoinfo(t, append(mode, "-i", ours)...))); diff != "" {
					t.Errorf("isoinfo %v names, genisoimage (-) vs ours (+):\n%s", mode, diff)
				}
			}
		})
	}
}

// names keeps the directory headings and record names of an isoinfo -l
// listing, dropping extents and dates.
func names(listing string) []string {
	var out []string
	for _, l := range strings.Split(listing, "\n") {
		switch {
		case strings.HasPrefix(l, "Directory listing of "):
			out = append(out, l)
		case strings.Contains(l, "]  "):
			out = append(out, strings.TrimSpace(l[strings.Index(l, "]  ")+3:]))
		}
	}
	return out
}

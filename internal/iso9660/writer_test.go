package iso9660

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixtures are the volumes every structural test runs on: the two
// cloud-init layouts, and one that stresses the writer (names that clash
// once mangled, the deepest allowed tree, a directory and a path table
// over several sectors, empty, multi-sector and binary files).
func fixtures() map[string]Volume {
	binary := make([]byte, 5000)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	stress := []File{
		{Path: "a-b", Data: []byte("dash")},
		{Path: "a_b", Data: []byte("underscore")},
		{Path: "A_B", Data: []byte("upper")},
		{Path: "1/2/3/4/5/6/7/deepest", Data: []byte("deep")},
		{Path: "bin/blob.bin", Data: binary},
		{Path: "bin/empty"},
		{Path: "bin/exactly-one-sector", Data: bytes.Repeat([]byte{'x'}, sectorSize)},
		{Path: ".hidden", Data: []byte("dot")},
		{Path: "trailing.", Data: []byte("dot at end")},
		{Path: "many.dots.in.name.tar.gz", Data: []byte("gz")},
	}
	for i := range 60 {
		name := fmt.Sprintf("a-rather-long-directory-name-number-%02d", i)
		stress = append(stress, File{Path: "wide/" + name + "/f", Data: []byte(name)})
	}
	for i := range 40 {
		name := fmt.Sprintf("file-with-a-long-name-to-fill-sectors-%02d.json", i)
		stress = append(stress, File{Path: "full/" + name, Data: []byte(name)})
	}
	return map[string]Volume{
		"nocloud": {Label: "cidata", Files: []File{
			{Path: "user-data", Data: []byte("#cloud-config\npackages: [nginx]\n")},
			{Path: "meta-data", Data: []byte("instance-id: iid-1\nlocal-hostname: web01\n")},
			{Path: "network-config", Data: []byte("version: 2\nethernets:\n  eth0: {dhcp4: true}\n")},
		}},
		"configdrive2": {Label: "config-2", Files: []File{
			{Path: "openstack/latest/meta_data.json", Data: []byte(`{"uuid": "x"}` + "\n")},
			{Path: "openstack/latest/user_data", Data: []byte("#cloud-config\n")},
			{Path: "openstack/latest/vendor_data.json", Data: []byte(`"v"` + "\n")},
			{Path: "openstack/content/0000", Data: []byte("auto lo\niface lo inet loopback\n")},
		}},
		"stress": {Label: "STRESS_1", Files: stress},
	}
}

func mustBytes(t *testing.T, v Volume) []byte {
	t.Helper()
	b, err := Bytes(v)
	if err != nil {
		t.Fatalf("Bytes: %v", err)
	}
	return b
}

func TestBytesDeterministic(t *testing.T) {
	for name, v := range fixtures() {
		t.Run(name, func(t *testing.T) {
			a := mustBytes(t, v)
			if b := mustBytes(t, v); !bytes.Equal(a, b) {
				t.Fatal("two builds of the same volume differ")
			}
			shuffled := v
			shuffled.Files = slices.Clone(v.Files)
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(shuffled.Files), func(i, j int) {
				shuffled.Files[i], shuffled.Files[j] = shuffled.Files[j], shuffled.Files[i]
			})
			if b := mustBytes(t, shuffled); !bytes.Equal(a, b) {
				t.Error("file order changed the image")
			}
			epoch := v
			epoch.ModTime = Epoch()
			if b := mustBytes(t, epoch); !bytes.Equal(a, b) {
				t.Error("an explicit Epoch differs from the zero ModTime")
			}
			later := v
			later.ModTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
			if b := mustBytes(t, later); bytes.Equal(a, b) {
				t.Error("ModTime did not change the image")
			}
			changed := v
			changed.Files = slices.Clone(v.Files)
			changed.Files[0].Data = append(slices.Clone(changed.Files[0].Data), '!')
			if b := mustBytes(t, changed); bytes.Equal(a, b) {
				t.Error("changed file data did not change the image")
			}
			relabelled := v
			relabelled.Label = "other"
			if b := mustBytes(t, relabelled); bytes.Equal(a, b) {
				t.Error("label did not change the image")
			}
		})
	}
}

// wantPaths lists every file and implied directory of v, "/" rooted.
func wantPaths(v Volume) map[string]bool {
	out := map[string]bool{}
	for _, f := range v.Files {
		p := "/" + f.Path
		for p != "/" {
			out[p] = true
			p = path.Dir(p)
		}
	}
	return out
}

// TestStructure reads each image back with the test reader and checks the
// directory records and path tables against ECMA-119's rules and against
// the layout the writer planned.
func TestStructure(t *testing.T) {
	for name, v := range fixtures() {
		t.Run(name, func(t *testing.T) {
			img := mustBytes(t, v)
			l, err := plan(v)
			if err != nil {
				t.Fatal(err)
			}
			data := map[string][]byte{}
			for _, f := range v.Files {
				data["/"+f.Path] = f.Data
			}
			for _, joliet := range []bool{false, true} {
				vol, err := readVolume(img, joliet)
				if err != nil {
					t.Fatalf("joliet=%v: %v", joliet, err)
				}
				tr := l.primary
				if joliet {
					tr = l.joliet
				}
				checkVolume(t, v, vol, tr, data, joliet, img)
			}
		})
	}
}

func checkVolume(t *testing.T, v Volume, vol *volume, tr *tree, data map[string][]byte, joliet bool, img []byte) {
	t.Helper()
	if vol.Label != v.Label {
		t.Errorf("joliet=%v: label %q, want %q", joliet, vol.Label, v.Label)
	}
	if int(vol.Sectors)*sectorSize != len(img) {
		t.Errorf("volume space %d sectors, image is %d bytes", vol.Sectors, len(img))
	}
	if !joliet && vol.ER != "RRIP_1991A" {
		t.Errorf("Rock Ridge ER %q, want RRIP_1991A", vol.ER)
	}
	if diff := cmp.Diff(vol.L, vol.M); diff != "" {
		t.Errorf("joliet=%v: L and M path tables differ (-L +M):\n%s", joliet, diff)
	}
	subdirs := map[string]uint32{}
	for _, e := range vol.Entries {
		if e.Dir {
			subdirs[path.Dir(e.Path)]++
		}
	}
	got := map[string]bool{}
	for _, e := range vol.Entries {
		got[e.Path] = true
		if !joliet {
			checkRock(t, e, 2+subdirs[e.Path])
		}
		if e.Dir {
			continue
		}
		want := data[e.Path]
		off := int(e.LBA) * sectorSize
		if int(e.Size) != len(want) || off+len(want) > len(img) {
			t.Errorf("%s: extent at %d of %d bytes, want %d bytes inside the image", e.Path, e.LBA, e.Size, len(want))
			continue
		}
		if !bytes.Equal(img[off:off+len(want)], want) {
			t.Errorf("%s: data at sector %d differs", e.Path, e.LBA)
		}
	}
	if diff := cmp.Diff(wantPaths(v), got); diff != "" {
		t.Errorf("joliet=%v: paths (-want +got):\n%s", joliet, diff)
	}
	checkOrder(t, vol, joliet)
	checkPathTable(t, vol, tr)
}

// checkRock: genisoimage -r modes, a directory's links are 2 + its
// subdirectories (POSIX), names in NM.
func checkRock(t *testing.T, e entry, dirLinks uint32) {
	t.Helper()
	wantMode, wantLinks, wantFlags := uint32(0o100444), uint32(1), byte(rrPX|rrTF|rrNM)
	if e.Dir {
		wantMode, wantLinks = 0o040555, dirLinks
	}
	if e.Mode != wantMode || e.Links != wantLinks || e.RRFlags != wantFlags {
		t.Errorf("%s: mode %o links %d RR flags %#x, want %o %d %#x", e.Path, e.Mode, e.Links, e.RRFlags, wantMode, wantLinks, wantFlags)
	}
}

// checkOrder: records of a directory sort by identifier (ECMA-119 9.3),
// and every identifier in a directory is distinct.
func checkOrder(t *testing.T, vol *volume, joliet bool) {
	t.Helper()
	byDir := map[string][]entry{}
	for _, e := range vol.Entries {
		d := path.Dir(e.Path)
		byDir[d] = append(byDir[d], e)
	}
	key := func(e entry) (string, string) {
		id := strings.TrimSuffix(e.ID, ";1")
		if e.Dir {
			return id, ""
		}
		if i := strings.LastIndexByte(id, '.'); i >= 0 {
			return id[:i], id[i+1:]
		}
		return id, ""
	}
	for d, es := range byDir {
		for i := 1; i < len(es); i++ {
			an, ae := key(es[i-1])
			bn, be := key(es[i])
			c := comparePadded(an, bn)
			if c == 0 {
				c = comparePadded(ae, be)
			}
			if c >= 0 {
				t.Errorf("joliet=%v: %s: %q before %q", joliet, d, es[i-1].ID, es[i].ID)
			}
		}
	}
}

// checkPathTable: one entry per directory, each pointing at the extent its
// records point at, parents before children and sorted by ECMA-119 9.4.3,
// and the same numbering the writer planned.
func checkPathTable(t *testing.T, vol *volume, tr *tree) {
	t.Helper()
	dirs := 1
	for _, e := range vol.Entries {
		if e.Dir {
			dirs++
		}
	}
	if len(vol.L) != dirs {
		t.Fatalf("path table has %d entries, tree has %d directories", len(vol.L), dirs)
	}
	lbaToPath := map[uint32]string{}
	for p, lba := range vol.SelfLBA {
		lbaToPath[lba] = p
	}
	for i, e := range vol.L {
		p, ok := lbaToPath[e.LBA]
		if !ok {
			t.Errorf("path table entry %d (%q) points at sector %d, which is no directory", e.Num, e.ID, e.LBA)
			continue
		}
		if e.Parent < 1 || e.Parent > e.Num || e.Num > 1 && e.Parent == e.Num {
			t.Errorf("path table entry %d (%q): parent %d", e.Num, e.ID, e.Parent)
			continue
		}
		if parent := vol.L[e.Parent-1]; parent.LBA != vol.ParentLBA[p] {
			t.Errorf("%s: path table parent at %d, \"..\" record at %d", p, parent.LBA, vol.ParentLBA[p])
		}
		if i > 0 {
			prev := vol.L[i-1]
			if prev.Parent > e.Parent || prev.Parent == e.Parent && comparePadded(prev.ID, e.ID) >= 0 {
				t.Errorf("path table: %d %q (parent %d) before %d %q (parent %d)", prev.Num, prev.ID, prev.Parent, e.Num, e.ID, e.Parent)
			}
		}
		if planned := tr.dirs[i]; planned.lba != e.LBA || int(planned.parent.number) != e.Parent {
			t.Errorf("path table entry %d: sector %d parent %d, writer planned %d parent %d", e.Num, e.LBA, e.Parent, planned.lba, planned.parent.number)
		}
	}
}

func TestMangle(t *testing.T) {
	tests := []struct {
		names []string // children of one directory; a trailing "/" marks a directory
		want  []string
	}{
		{[]string{"user-data", "meta-data", "network-config", "vendor-data"},
			[]string{"USER_DATA.;1", "META_DATA.;1", "NETWORK_CONFIG.;1", "VENDOR_DATA.;1"}},
		{[]string{"meta_data.json", "0000", "openstack/", "latest/"},
			[]string{"META_DATA.JSON;1", "0000.;1", "OPENSTACK", "LATEST"}},
		// Clashes are settled in the order of the real names (A_B < a-b < a_b),
		// so the result does not depend on input order.
		{[]string{"a-b", "a_b", "A_B", "a.b"}, []string{"A_B1.;1", "A_B2.;1", "A_B.;1", "A.B;1"}},
		{[]string{".hidden", "trailing.", "x.tar.gz"}, []string{".HIDDEN;1", "TRAILING.;1", "X_TAR.GZ;1"}},
		{[]string{"a-name-that-is-much-longer-than-thirty-characters.json"},
			[]string{"A_NAME_THAT_IS_MUCH_LONGE.JSON;1"}},
		{[]string{"a-name-that-is-much-longer-than-thirty-characters.json", "a-name-that-is-much-longer-than-thirty-characters-too.json"},
			[]string{"A_NAME_THAT_IS_MUCH_LONG1.JSON;1", "A_NAME_THAT_IS_MUCH_LONGE.JSON;1"}},
		{[]string{"extension.toolongforeight"}, []string{"EXTENSION.TOOLONGF;1"}},
		{[]string{"a-directory-name-longer-than-31-chars/", "a-directory-name-longer-than-31-chars-2/"},
			[]string{"A_DIRECTORY_NAME_LONGER_THAN_31", "A_DIRECTORY_NAME_LONGER_THAN_32"}}, // _31 is taken
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			var nodes []*node
			for _, n := range tt.names {
				name, dir := strings.CutSuffix(n, "/")
				nodes = append(nodes, &node{name: name, dir: dir})
			}
			sorted := slices.Clone(nodes)
			slices.SortFunc(sorted, func(a, b *node) int { return strings.Compare(a.name, b.name) })
			if err := uniquePrimary(sorted); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range nodes {
				id := n.primary.String()
				if len(strings.TrimSuffix(id, ";1")) > 31 {
					t.Errorf("%q: identifier %q is longer than ISO 9660 level 2 allows", n.name, id)
				}
				got = append(got, id)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("identifiers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidVolumes(t *testing.T) {
	f := func(p string) File { return File{Path: p, Data: []byte("x")} }
	tests := []struct {
		name string
		v    Volume
		want string
	}{
		{"empty label", Volume{Files: []File{f("a")}}, "volume label"},
		{"long label", Volume{Label: "seventeen-chars-x", Files: []File{f("a")}}, "volume label"},
		{"label with space", Volume{Label: "ci data", Files: []File{f("a")}}, "volume label"},
		{"absolute path", Volume{Label: "l", Files: []File{f("/a")}}, `name "" is not allowed`},
		{"dot-dot", Volume{Label: "l", Files: []File{f("a/../b")}}, `name ".." is not allowed`},
		{"empty component", Volume{Label: "l", Files: []File{f("a//b")}}, `name "" is not allowed`},
		{"trailing slash", Volume{Label: "l", Files: []File{f("a/")}}, `name "" is not allowed`},
		{"space", Volume{Label: "l", Files: []File{f("a b")}}, "character ' '"},
		{"non-ascii", Volume{Label: "l", Files: []File{f("ä")}}, "is not one of"},
		{"long name", Volume{Label: "l", Files: []File{f(strings.Repeat("n", 65))}}, "longer than 64"},
		{"too deep", Volume{Label: "l", Files: []File{f("1/2/3/4/5/6/7/8/9")}}, "deeper than 8"},
		{"long path", Volume{Label: "l", Files: []File{f(strings.Repeat(strings.Repeat("p", 60)+"/", 5) + "f")}}, "longer than 255"},
		{"twice", Volume{Label: "l", Files: []File{f("a"), f("a")}}, "given twice"},
		{"file then dir", Volume{Label: "l", Files: []File{f("a"), f("a/b")}}, "both a file and a directory"},
		{"dir then file", Volume{Label: "l", Files: []File{f("a/b"), f("a")}}, "both a file and a directory"},
		{"year", Volume{Label: "l", Files: []File{f("a")}, ModTime: time.Date(1899, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside the years"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Bytes(tt.v)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Bytes: got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestEmptyVolume(t *testing.T) {
	img := mustBytes(t, Volume{Label: "empty"})
	vol, err := readVolume(img, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(vol.Entries) != 0 || len(vol.L) != 1 {
		t.Errorf("empty volume: %d entries, %d path table entries; want 0 and 1", len(vol.Entries), len(vol.L))
	}
}

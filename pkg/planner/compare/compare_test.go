package compare

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// TestCDROMVolumes: a drive that names an existing volume (an ISO) is
// compared by that volume, write-backs (size=) aside, and another one, on
// another storage too, is another file, not a disk that moves (which would
// replace the VM); the update sends the new volume without the old size.
func TestCDROMVolumes(t *testing.T) {
	cmpr := qemuComparer(t)
	tests := []struct {
		name    string
		desired string
		live    string
		diff    []FieldDiff
		update  string
	}{
		{name: "same ISO, size written back", desired: "local:iso/a.iso,media=cdrom", live: "local:iso/a.iso,media=cdrom,size=356K"},
		{name: "new version", desired: "local:iso/b.iso,media=cdrom", live: "local:iso/a.iso,media=cdrom,size=356K",
			diff:   []FieldDiff{{Path: "ide3.file", Before: "local:iso/a.iso", After: "local:iso/b.iso"}},
			update: "local:iso/b.iso,media=cdrom"},
		{name: "another storage", desired: "nfs:iso/a.iso,media=cdrom", live: "local:iso/a.iso,media=cdrom,size=356K",
			diff:   []FieldDiff{{Path: "ide3.file", Before: "local:iso/a.iso", After: "nfs:iso/a.iso"}},
			update: "nfs:iso/a.iso,media=cdrom"},
		{name: "ejected", desired: "none,media=cdrom", live: "local:iso/a.iso,media=cdrom,size=356K",
			diff:   []FieldDiff{{Path: "ide3.file", Before: "local:iso/a.iso", After: "none"}},
			update: "none,media=cdrom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := map[string]string{"ide3": tc.desired}
			live := pve.ConfigOf(map[string]string{"ide3": tc.live})
			d := cmpr.DiffParams(desired, nil, live, nil)
			if diff := cmp.Diff(tc.diff, d); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
			if tc.update == "" {
				return
			}
			if got := cmpr.UpdateParams(d, desired, live, nil)["ide3"]; got != tc.update {
				t.Errorf("update: got %q want %q", got, tc.update)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"32G", 32 << 30, true},
		{"512M", 512 << 20, true},
		{"1T", 1 << 40, true},
		{"1.5K", 1536, true},
		{"100", 100, true},
		{"big", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseSize(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseSize(%q): got %v, %v want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// qemuComparer compares with the facts of a VM's create call.
func qemuComparer(t *testing.T) Comparer {
	t.Helper()
	m, ok := schema.Default().Lookup("POST", "/nodes/{node}/qemu")
	if !ok {
		t.Fatal("schema lacks POST /nodes/{node}/qemu")
	}
	return Comparer{M: m}
}

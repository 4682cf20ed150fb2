package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner"
)

// TestOrphans: a plan with only orphans changes nothing and says so in
// each rendering; the protected one is named as kept by --prune.
func TestOrphans(t *testing.T) {
	p := &planner.Plan{FormatVersion: planner.FormatVersion, Changes: []*planner.Change{},
		Orphans: []planner.Orphan{
			{Address: "QemuVM/worker-1", Node: "pve", What: "vmid 101", Stack: "default"},
			{Address: "QemuVM/worker-3", Node: "pve", What: "vmid 103", Stack: "default", Protected: true},
		}}
	var human, md, js bytes.Buffer
	if err := Human(&human, p, Options{}); err != nil {
		t.Fatal(err)
	}
	want := "  # QemuVM/worker-1 (vmid 101): made by this stack, in no spec — --prune to remove\n" +
		"  # QemuVM/worker-3 (vmid 103): made by this stack, in no spec; protected in PVE (protection: 1), so --prune keeps it\n" +
		"No changes to make; see the notes above.\n"
	if human.String() != want {
		t.Errorf("human:\ngot  %q\nwant %q", human.String(), want)
	}
	if err := Markdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- `QemuVM/worker-1` (vmid 101)\n") || !strings.Contains(md.String(), "`--prune` keeps it") {
		t.Errorf("markdown lacks the orphans:\n%s", md.String())
	}
	if err := JSON(&js, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"orphans":[{"address":"QemuVM/worker-1","node":"pve","what":"vmid 101","stack":"default"}`) {
		t.Errorf("json lacks the orphans:\n%s", js.String())
	}
}

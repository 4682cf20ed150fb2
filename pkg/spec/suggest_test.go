package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSuggestReferences checks that did-you-mean for names the user chose
// proposes only close typos, per part of a reference.
func TestSuggestReferences(t *testing.T) {
	refs := []Ref{{KindPool, "p"}, {KindPool, "prod"}, {KindLinuxBridge, "vmbr9"}, {KindQemuVM, "web01"}}
	tests := []struct {
		in   Ref
		want string
	}{
		{Ref{KindPool, "nope"}, ""},
		{Ref{KindPool, "q"}, "Pool/p"},
		{Ref{KindPool, "prdo"}, "Pool/prod"},
		{Ref{KindLinuxBridge, "vmbr1"}, "LinuxBridge/vmbr9"},
		{Ref{"LinuxBrige", "vmbr9"}, "LinuxBridge/vmbr9"},
		{Ref{"Bridge", "vmbr9"}, ""},
		{Ref{KindQemuVM, "web02"}, "QemuVM/web01"},
		{Ref{KindQemuVM, "db01"}, ""},
		{Ref{KindLinuxBridge, "p"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			if got := suggestRef(tt.in, refs); got != tt.want {
				t.Errorf("suggestRef(%s): got %q want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSuggestName(t *testing.T) {
	cands := []string{"lab", "prod", "c1"}
	tests := []struct{ in, want string }{
		{"lba", "lab"},
		{"c2", "c1"},
		{"prdo", "prod"},
		{"xy", ""},
		{"nope", ""},
		{"stage", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := suggestName(tt.in, cands); got != tt.want {
				t.Errorf("suggestName(%q): got %q want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestReferenceSuggestionsInLoad is the review's case: an undefined
// reference sharing only its kind with a resource gets no suggestion.
func TestReferenceSuggestionsInLoad(t *testing.T) {
	files := map[string]string{"a.yaml": `kind: Pool
name: p
---
kind: LinuxBridge
name: vmbr9
---
kind: QemuVM
name: vm
connection: xy
dependsOn: [Pool/nope, LinuxBridge/vmbr1]
---
kind: Connection
name: ab
spec: {url: "https://pve:8006", tokenId: "a@pve!t"}
`}
	_, got := loadFiles(t, files, nil)
	want := []string{
		`a.yaml:9: connection "xy" is not defined: no Connection document has that name`,
		`a.yaml:10: dependsOn: Pool/nope is not defined in the given files`,
		`a.yaml:10: dependsOn: LinuxBridge/vmbr1 is not defined in the given files — did you mean "LinuxBridge/vmbr9"?`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics: got %q\nwant %q\n(-want +got):\n%s", got, want, diff)
	}
}

func TestSetSuggest(t *testing.T) {
	set := &Set{Resources: []*Resource{{Kind: "QemuVM", Name: "app-vm-1"}, {Kind: "Pool", Name: "demo"}}}
	for in, want := range map[string]string{
		"QemuVM/app-vm1": "QemuVM/app-vm-1",
		"Pool/dmeo":      "Pool/demo",
		"Pool/x":         "",
		"nonsense":       "",
	} {
		if got := set.Suggest(in); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSuggestKeys: did-you-mean for PVE's and pvectl's words offers close
// typos and truncations only, not any short word within two edits.
func TestSuggestKeys(t *testing.T) {
	cands := []string{"boot", "kvm", "memory", "net0", "cores", "QemuVM", "Pool"}
	tests := []struct{ in, want string }{
		{"memroy", "memory"},
		{"Memory", "memory"},
		{"net", "net0"},
		{"core", "cores"},
		{"Qemu", "QemuVM"},
		{"Poll", "Pool"},
		{"foo", ""},
		{"ram", ""},
		{"disk", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, cands); got != tt.want {
			t.Errorf("suggest(%q): got %q want %q", tt.in, got, tt.want)
		}
	}
}

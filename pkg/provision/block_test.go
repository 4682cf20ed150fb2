package provision

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	pinA = "ssh-ed25519 SHA256:gGmlxYKIgmcfgb27c2EXMJUT5+2YWdEatIUXJVc7Mcc"
	pinB = "ecdsa-sha2-nistp256 SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

func TestParseDescription(t *testing.T) {
	tests := []struct {
		name    string
		desc    string
		want    State
		wantErr string
	}{
		{name: "empty", desc: "", want: State{}},
		{name: "user text only", desc: "my [notes] here", want: State{}},
		{
			name: "both blocks",
			desc: "note\n[pvectl-provision: common.yaml=0123456789ab,app/x.yml=ba9876543210]\n[pvectl-hostkey: " + pinA + "]",
			want: State{Files: []FileHash{{"common.yaml", "0123456789ab"}, {"app/x.yml", "ba9876543210"}}, HostKey: pinA},
		},
		{
			name: "legacy",
			desc: "[puls-provision: f.yaml=DEADBEEF00,g.pp=0123456789abcdef0123456789abcdef]",
			want: State{Files: []FileHash{{"f.yaml", "deadbeef00"}, {"g.pp", "0123456789abcdef0123456789abcdef"}}, Legacy: true},
		},
		{
			name: "pvectl block wins over legacy",
			desc: "[puls-provision: f.yaml=deadbeef00]\n[pvectl-provision: f.yaml=0123456789ab]",
			want: State{Files: []FileHash{{"f.yaml", "0123456789ab"}}},
		},
		{name: "unreadable legacy block records nothing", desc: "[puls-provision: f.yaml]", want: State{Legacy: true}},
		{name: "empty block", desc: "[pvectl-provision: ]", want: State{}},
		{name: "short hash", desc: "[pvectl-provision: a.yaml=0123]", wantErr: "want 12 lowercase hex digits"},
		{name: "no hash", desc: "[pvectl-provision: a.yaml]", wantErr: "want NAME=HASH"},
		{name: "twice", desc: "[pvectl-provision: a.yaml=0123456789ab,a.yaml=0123456789ab]", wantErr: "listed twice"},
		{name: "two blocks", desc: "[pvectl-provision: a.yaml=0123456789ab] [pvectl-provision: b.yaml=0123456789ab]", wantErr: "more than one"},
		{name: "bad pin", desc: "[pvectl-hostkey: SHA256:abc]", wantErr: "remove the block to pin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDescription(tc.desc)
			if failedAsWanted(t, err, tc.wantErr) {
				return
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("state (-want +got):\n%s", d)
			}
		})
	}
}

func TestWriteDescription(t *testing.T) {
	files := []FileHash{{"a.yaml", "0123456789ab"}, {"b.pp", "ba9876543210"}}
	prov := "[pvectl-provision: a.yaml=0123456789ab,b.pp=ba9876543210]"
	pin := "[pvectl-hostkey: " + pinA + "]"
	tests := []struct {
		name  string
		desc  string
		state State
		want  string
	}{
		{"empty description", "", State{Files: files, HostKey: pinA}, prov + "\n" + pin},
		{"user text kept", "Hello\n  world  ", State{Files: files}, "Hello\n  world  \n" + prov},
		{"user text ending in a newline", "Hello\n", State{Files: files}, "Hello\n" + prov},
		{"replaced in place", "top\n[pvectl-provision: a.yaml=000000000000]\nbottom [x]", State{Files: files}, "top\n" + prov + "\nbottom [x]"},
		{"pin replaced in place", "[pvectl-hostkey: " + pinB + "] after", State{HostKey: pinA}, pin + " after"},
		{"provision goes before an existing pin", "note\n" + pin + "\ntail", State{Files: files, HostKey: pinA}, "note\n" + prov + "\n" + pin + "\ntail"},
		{"legacy replaced where it stands", "note\n[puls-provision: a.yaml=deadbeef]\nmore", State{Files: files}, "note\n" + prov + "\nmore"},
		{"legacy dropped beside a pvectl block", "note\n[puls-provision: a.yaml=deadbeef]\n[pvectl-provision: a.yaml=000000000000]", State{Files: files}, "note\n" + prov},
		{"pin only", "note", State{HostKey: pinA}, "note\n" + pin},
		{"block removed when no file is recorded", "note\n[pvectl-provision: a.yaml=000000000000]", State{}, "note"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WriteDescription(tc.desc, tc.state)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			// What pvectl wrote reads back as what it was given.
			st, err := ParseDescription(got)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.state.Files, st.Files); d != "" || st.HostKey != tc.state.HostKey {
				t.Errorf("round trip (-want +got):\n%s pin %q", d, st.HostKey)
			}
		})
	}
}

func TestWriteDescriptionLimit(t *testing.T) {
	st := State{Files: []FileHash{{"a.yaml", "0123456789ab"}}, HostKey: pinA}
	blocks, _ := WriteDescription("", st)
	room := MaxDescription - len(blocks) - 1 // the line break before the blocks
	// PVE counts characters, not bytes: "é" is one.
	fits := strings.Repeat("é", room)
	if _, err := WriteDescription(fits, st); err != nil {
		t.Errorf("%d characters refused: %v", room+1+len(blocks), err)
	}
	_, err := WriteDescription(fits+"x", st)
	if err == nil || !strings.Contains(err.Error(), "8193 characters, PVE allows 8192") {
		t.Errorf("err %v, want the limit named", err)
	}
}

func TestWriteDescriptionRefusesBadEntries(t *testing.T) {
	for _, st := range []State{
		{Files: []FileHash{{"a,b.yaml", "0123456789ab"}}},
		{Files: []FileHash{{"a.yaml", "xyz"}}},
		{HostKey: "not a pin"},
	} {
		if _, err := WriteDescription("", st); err == nil {
			t.Errorf("WriteDescription(%+v) succeeded", st)
		}
	}
}

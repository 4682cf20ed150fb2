package spec

import (
	"strings"
	"testing"
)

// Names, labels, comments and identities are one line of plain text; a
// boolean is a boolean only where PVE's schema says so. Each refusal is at
// the value's own line.
func TestLoadRefusesHostileText(t *testing.T) {
	long := strings.Repeat("a", MaxNameLength+1)
	tests := []struct {
		name string
		doc  string
		want []string // nil: loads
	}{
		{"name with a bidi override", "kind: Pool\nname: \"evil\u202egpj.exe\"\n",
			[]string{`a.yaml:2: name contains the bidi control U+202E (RIGHT-TO-LEFT OVERRIDE), which makes text display other than it is: remove it`}},
		{"name with a newline", "kind: Pool\nname: \"web\\nprod\"\n",
			[]string{`a.yaml:2: name contains the control character U+000A (newline): write it on one line, without control characters`}},
		{"name with NUL", "kind: Pool\nname: \"a\\0b\"\n",
			[]string{`a.yaml:2: name contains the control character U+0000 (NUL): write it on one line, without control characters`}},
		{"name with an isolate", "kind: QemuVM\nname: \"vm\u2067x\"\n",
			[]string{`a.yaml:2: name contains the bidi control U+2067 (RIGHT-TO-LEFT ISOLATE), which makes text display other than it is: remove it`}},
		{"name over the cap", "kind: Pool\nname: " + long + "\n",
			[]string{`a.yaml:2: name is 254 characters long, over pvectl's limit of 253 (a DNS name's): shorten it`}},
		{"name at the cap", "kind: ACL\nname: " + long[1:] + "\nspec: {path: /, users: root@pam, roles: PVEAuditor}\n", nil},
		{"dependsOn with ESC", "kind: Pool\nname: p\ndependsOn: [\"Pool/q\\e[2J\"]\n",
			[]string{`a.yaml:3: dependsOn contains the control character U+001B (ESC): write it on one line, without control characters`}},
		{"connection with a tab", "kind: Pool\nname: p\nconnection: \"c\\td\"\n",
			[]string{`a.yaml:3: connection contains the control character U+0009 (tab): write it on one line, without control characters`}},
		{"comment with a newline", "kind: Pool\nname: p\nspec:\n  comment: |\n    one\n    two\n",
			[]string{`a.yaml:4: spec.comment contains the control character U+000A (newline): write it on one line, without control characters`}},
		{"user's firstname with a bidi embedding", "kind: User\nname: a@pve\nspec:\n  firstname: \"\u202bx\"\n",
			[]string{`a.yaml:4: spec.firstname contains the bidi control U+202B (RIGHT-TO-LEFT EMBEDDING), which makes text display other than it is: remove it`}},
		{"identity written in spec", "kind: User\nname: a\nspec:\n  userid: \"a\u202e@pve\"\n",
			[]string{`a.yaml:4: spec.userid contains the bidi control U+202E (RIGHT-TO-LEFT OVERRIDE), which makes text display other than it is: remove it`}},
		{"a tag in a list, at its line", "kind: QemuVM\nname: vm\nspec:\n  tags:\n    - ok\n    - \"b\\x85d\"\n",
			[]string{`a.yaml:6: spec.tags contains the control character U+0085: write it on one line, without control characters`}},
		{"a property sub-value", "kind: QemuVM\nname: vm\nspec:\n  net0:\n    model: virtio\n    bridge: \"vmbr0\\r\"\n",
			[]string{`a.yaml:6: spec.net0 contains the control character U+000D (carriage return): write it on one line, without control characters`}},
		{"a pvectl key", "kind: QemuVM\nname: vm\nspec:\n  sshUser: \"root\\n\"\n",
			[]string{`a.yaml:4: spec.sshUser contains the control character U+000A (newline): write it on one line, without control characters`}},
		{"a default, at the Defaults line", "kind: Defaults\nname: d\nspec:\n  Pool:\n    comment: \"\u2066x\"\n---\nkind: Pool\nname: p\n",
			[]string{`a.yaml:5: Defaults.Pool.comment contains the bidi control U+2066 (LEFT-TO-RIGHT ISOLATE), which makes text display other than it is: remove it`}},
		{"a description has lines", "kind: QemuVM\nname: vm\nspec:\n  description: |\n    line one\n    \tline two\n", nil},
		{"but no escape sequence", "kind: QemuVM\nname: vm\nspec:\n  description: \"a\\e[31mred\"\n",
			[]string{`a.yaml:4: spec.description contains the control character U+001B (ESC): write it on one line, without control characters`}},
		{"cloud-init user data has lines", "kind: ConfigDriveISO\nname: seed\nspec:\n  storage: local\n  userData: |\n    #cloud-config\n    packages: [vim]\n", nil},
		{"expire: true is not 1", "kind: User\nname: a@pve\nspec:\n  expire: true\n",
			[]string{`a.yaml:4: spec.expire: true is a YAML boolean, but PVE takes an integer here: write the number you mean (a boolean is not taken as 1 or 0)`}},
		{"memory: false", "kind: QemuVM\nname: vm\nspec:\n  memory: false\n",
			[]string{`a.yaml:4: spec.memory: false is a YAML boolean, but PVE takes an integer here: write the number you mean (a boolean is not taken as 1 or 0)`}},
		{"a string is not 1", "kind: Pool\nname: p\nspec:\n  comment: true\n",
			[]string{`a.yaml:4: spec.comment: true is a YAML boolean, but PVE takes a string here: quote it ("true") to mean the word`}},
		{"a token's expire in Defaults", "kind: Defaults\nname: d\nspec:\n  APIToken:\n    expire: false\n",
			[]string{`a.yaml:5: Defaults.APIToken.expire: false is a YAML boolean, but PVE takes an integer here: write the number you mean (a boolean is not taken as 1 or 0)`}},
		{"booleans where PVE says boolean", "kind: QemuVM\nname: vm\nspec:\n  onboot: true\n  agent: true\n  net0: {model: virtio, bridge: vmbr0, firewall: true}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDiags(t, tt.doc, tt.want)
		})
	}
}

// A boolean where PVE takes one is still 1/0 on the wire.
func TestBooleanParamsStayZeroOne(t *testing.T) {
	set := mustLoad(t, map[string]string{"a.yaml": "kind: QemuVM\nname: vm\nspec:\n  onboot: true\n  agent: false\n  net0: {model: virtio, bridge: vmbr0, firewall: true}\n"}, nil)
	got := set.Lookup("QemuVM/vm").Params
	for key, want := range map[string]string{"onboot": "1", "agent": "0", "net0": "model=virtio,bridge=vmbr0,firewall=1"} {
		if got.Get(key) != want {
			t.Errorf("%s: got %q want %q", key, got.Get(key), want)
		}
	}
}

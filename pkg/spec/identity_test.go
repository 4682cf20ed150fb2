package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDuplicateIdentities checks that two documents which would manage the
// same PVE object are refused at the second, naming the first, and that
// what PVE allows stays legal.
func TestDuplicateIdentities(t *testing.T) {
	const conns = `kind: Connection
name: lab
spec: {url: "https://lab:8006", tokenId: "a@pve!t"}
---
kind: Connection
name: prod
spec: {url: "https://prod:8006", tokenId: "a@pve!t"}
`
	tests := []struct {
		name string
		yaml string
		want []string // nil: loads fine
	}{
		{
			name: "same vmid",
			yaml: "kind: QemuVM\nname: a\nspec:\n  vmid: 150\n---\nkind: QemuVM\nname: b\nspec:\n  vmid: 150\n",
			want: []string{`a.yaml:9: QemuVM/b has the same vmid 150 as QemuVM/a (at a.yaml:4): both would manage the same VM; a VM without vmid is found by its name: give each a different vmid or name, or remove one`},
		},
		{
			name: "a VM and a container share the vmid space",
			yaml: "kind: QemuVM\nname: a\nspec:\n  vmid: 150\n---\nkind: LxcContainer\nname: b\nspec:\n  vmid: 150\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n",
			want: []string{`a.yaml:9: LxcContainer/b has the same vmid 150 as QemuVM/a (at a.yaml:4): both would manage the same guest (VMs and containers share vmids); a container without vmid is found by its hostname: give each a different vmid or hostname, or remove one`},
		},
		{
			name: "a VM name and a container hostname do not clash",
			yaml: "kind: QemuVM\nname: web\n---\nkind: LxcContainer\nname: web\nspec: {ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst}\n",
		},
		{
			name: "same container hostname without vmid",
			yaml: "kind: LxcContainer\nname: dns\nspec: {ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst}\n---\nkind: LxcContainer\nname: b\nspec:\n  hostname: dns\n  ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\n",
			want: []string{`a.yaml:8: LxcContainer/b has the same CT hostname "dns" as LxcContainer/dns (at a.yaml:2): both would manage the same container; a container without vmid is found by its hostname: give each a different vmid or hostname, or remove one`},
		},
		{
			name: "same vmid on different connections",
			yaml: conns + "---\nkind: QemuVM\nname: a\nconnection: lab\nspec: {vmid: 150}\n---\nkind: QemuVM\nname: b\nconnection: prod\nspec: {vmid: 150}\n",
		},
		{
			name: "same name, different vmids: PVE allows it",
			yaml: "kind: QemuVM\nname: a\nspec: {vmid: 150, name: web}\n---\nkind: QemuVM\nname: b\nspec: {vmid: 151, name: web}\n",
		},
		{
			name: "same name without vmid, from spec.name and the document name",
			yaml: "kind: QemuVM\nname: web\n---\nkind: QemuVM\nname: b\nspec:\n  name: web\n",
			want: []string{`a.yaml:7: QemuVM/b has the same VM name "web" as QemuVM/web (at a.yaml:2): both would manage the same VM; a VM without vmid is found by its name: give each a different vmid or name, or remove one`},
		},
		{
			name: "a VM without vmid would be found as the named VM with one",
			yaml: "kind: QemuVM\nname: a\nspec: {vmid: 150, name: web}\n---\nkind: QemuVM\nname: web\n",
			want: []string{`a.yaml:6: QemuVM/web has the same VM name "web" as QemuVM/a (at a.yaml:3): both would manage the same VM; a VM without vmid is found by its name: give each a different vmid or name, or remove one`},
		},
		{
			name: "same pool id",
			yaml: "kind: Pool\nname: p\n---\nkind: Pool\nname: q\nspec:\n  poolid: p\n",
			want: []string{`a.yaml:7: Pool/q has the same poolid "p" as Pool/p (at a.yaml:2): both would manage the same pool; remove one of them`},
		},
		{
			name: "bridges on the default node",
			yaml: "kind: LinuxBridge\nname: vmbr1\n---\nkind: LinuxBridge\nname: lan\nspec: {iface: vmbr1}\n",
			want: []string{`a.yaml:6: LinuxBridge/lan has the same iface "vmbr1" on the default node as LinuxBridge/vmbr1 (at a.yaml:2): both would manage the same bridge; remove one of them`},
		},
		{
			name: "bridges on the same named node",
			yaml: "kind: LinuxBridge\nname: vmbr1\nspec: {node: pve}\n---\nkind: LinuxBridge\nname: lan\nspec: {node: pve, iface: vmbr1}\n",
			want: []string{`a.yaml:7: LinuxBridge/lan has the same iface "vmbr1" on node "pve" as LinuxBridge/vmbr1 (at a.yaml:2): both would manage the same bridge; remove one of them`},
		},
		{
			name: "bridges on different nodes, and a named node against the default",
			yaml: "kind: LinuxBridge\nname: vmbr1\nspec: {node: pve}\n---\nkind: LinuxBridge\nname: b2\nspec: {node: pve2, iface: vmbr1}\n---\nkind: LinuxBridge\nname: b3\nspec: {iface: vmbr1}\n",
		},
		{
			name: "two network commits for one node",
			yaml: "kind: NetworkApply\nname: pve\n---\nkind: NetworkApply\nname: commit\nspec:\n  node: pve\n",
			want: []string{`a.yaml:7: NetworkApply/commit has the same node "pve" as NetworkApply/pve (at a.yaml:2): both would manage the same node's network commit; one NetworkApply per node is enough`},
		},
		{
			name: "Defaults cannot give every VM one vmid",
			yaml: "kind: Defaults\nname: d\nspec:\n  QemuVM:\n    vmid: 150\n    memory: 1024\n---\nkind: QemuVM\nname: a\n",
			want: []string{`a.yaml:5: Defaults.QemuVM cannot set vmid: it identifies each QemuVM (every QemuVM would get the same one)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDiags(t, tt.yaml, tt.want)
		})
	}
}

// TestConnectionChecks checks the URL, fingerprint and CA file rules that
// the client would otherwise only refuse when it connects.
func TestConnectionChecks(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const fp = "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"
	tests := []struct {
		name string
		spec string // the Connection's spec lines, tokenId added
		want string // "" = loads fine; else the message after "a.yaml:4: "
	}{
		{"https with port", `url: "https://pve.example.com:8006"`, ""},
		{"https with /api2/json", `url: "https://pve:8006/api2/json/"`, ""},
		{"http on 127.0.0.1", `url: "http://127.0.0.1:8006"`, ""},
		{"http on 127.1.2.3", `url: "http://127.1.2.3"`, ""},
		{"http on ::1", `url: "http://[::1]:8006"`, ""},
		{"http on localhost", `url: "http://LocalHost:8006"`, ""},
		{"http on a network host", `url: "http://pve:8006"`,
			`spec.url "http://pve:8006": plain http is only allowed for loopback hosts (127.0.0.1, ::1, localhost), the API token would travel unencrypted: use https://pve:8006`},
		{"behind a reverse proxy", `url: "https://proxy.example.com/pve"`, ""},
		{"query", `url: "https://pve:8006?x=1"`, `spec.url "https://pve:8006?x=1" must not have a query or fragment`},
		{"credentials are not repeated", `url: "https://root:hunter2@pve:8006"`,
			`spec.url "https://root:xxxxx@pve:8006" must not carry credentials: use an API token (spec.tokenId, spec.tokenSecret)`},
		{"bad port", `url: "https://pve:99999"`, `spec.url "https://pve:99999": port must be 1..65535`},
		{"no host", `url: "https://:8006"`, `spec.url must be an http(s) URL like https://pve.example.com:8006, got "https://:8006"`},
		{"fingerprint with colons", "url: https://pve:8006\n  tlsFingerprint: " + fp, ""},
		{"fingerprint, lower case, no colons", "url: https://pve:8006\n  tlsFingerprint: " + strings.ToLower(strings.ReplaceAll(fp, ":", "")), ""},
		{"fingerprint as openssl prints it", "url: https://pve:8006\n  tlsFingerprint: \"SHA256 Fingerprint=" + fp + "\"", ""},
		{"fingerprint too short", "tlsFingerprint: AB:CD:EF\n  url: https://pve:8006",
			"spec.tlsFingerprint must be a SHA-256 fingerprint (64 hex digits, colons optional, e.g. as `openssl x509 -noout -fingerprint -sha256` prints it), got 6 digits"},
		{"fingerprint not hex", "tlsFingerprint: " + strings.Replace(fp, "AB", "XY", 1) + "\n  url: https://pve:8006",
			"spec.tlsFingerprint must be a SHA-256 fingerprint (64 hex digits, colons optional, e.g. as `openssl x509 -noout -fingerprint -sha256` prints it), got characters that are not hex digits"},
		{"SHA-1 fingerprint", "tlsFingerprint: " + fp[:59] + "\n  url: https://pve:8006",
			"spec.tlsFingerprint must be a SHA-256 fingerprint (64 hex digits, colons optional, e.g. as `openssl x509 -noout -fingerprint -sha256` prints it), got 40 digits"},
		{"stack", "url: https://pve:8006\n  stack: team-b.prod_1", ""},
		{"stack that breaks the owner mark", "stack: \"a,vmid=1]\"\n  url: https://pve:8006",
			`spec.stack: stack "a,vmid=1]": use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit`},
		{"CA file exists", "url: https://pve:8006\n  caFile: " + ca, ""},
		{"CA file missing", "caFile: " + filepath.Join(dir, "nope.pem") + "\n  url: https://pve:8006",
			`spec.caFile "` + filepath.Join(dir, "nope.pem") + `" does not exist`},
		{"CA file is a directory", "caFile: " + dir + "\n  url: https://pve:8006",
			`spec.caFile "` + dir + `" is a directory, want a PEM file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "kind: Connection\nname: c\nspec:\n  " + tt.spec + "\n  tokenId: \"a@pve!t\"\n"
			_, got := loadFiles(t, map[string]string{"a.yaml": doc}, nil)
			var want []string
			if tt.want != "" {
				want = []string{"a.yaml:4: " + tt.want}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics: got %q\nwant %q\n(-want +got):\n%s", got, want, diff)
			}
		})
	}
}

func TestConnectionCAFileUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	doc := "kind: Connection\nname: c\nspec:\n  caFile: " + ca + "\n  url: https://pve:8006\n  tokenId: \"a@pve!t\"\n"
	_, got := loadFiles(t, map[string]string{"a.yaml": doc}, nil)
	want := []string{`a.yaml:4: spec.caFile "` + ca + `" is not readable: permission denied`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics: got %q\nwant %q\n(-want +got):\n%s", got, want, diff)
	}
}

// The identity check keeps hashes of the keys; keys whose hashes collide
// must still be told apart (here every key hashes alike) and a repeated
// key still found.
func TestClaimsHashCollisions(t *testing.T) {
	var rs []*Resource
	for _, id := range []string{"a", "b", "c", "b"} {
		rs = append(rs, &Resource{Kind: "Pool", Name: id + "x", Params: ParamsOf(map[string]string{"poolid": id})})
	}
	c := newClaims(rs)
	c.hash = func(claimKey) uint64 { return 1 }
	var dups []int
	for i, r := range rs {
		id := kindOf("Pool").Identities(r)[0]
		key := claimKey{r.Connection, id.ns, id.key}
		if ref, dup := c.find(key); dup {
			first, fid := c.identity(ref)
			if first != rs[1] || fid.key != id.key {
				t.Errorf("%s: found %s (%s), want Pool/bx", r.Address(), first.Address(), fid.key)
			}
			dups = append(dups, i)
			continue
		}
		c.add(key, claimRef{int32(i), 0})
	}
	if diff := cmp.Diff([]int{3}, dups); diff != "" {
		t.Errorf("duplicates (-want +got):\n%s", diff)
	}
	if len(c.exact) != 2 {
		t.Errorf("collided keys kept whole: %d, want 2", len(c.exact))
	}
}

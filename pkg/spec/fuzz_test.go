package spec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzLoad: any input either loads or yields diagnostics placed in the
// input (never both, never a panic), and a document of aliases cannot make
// it take long (the alias bound).
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"kind: Pool\nname: p\nspec:\n  comment: hi\n",
		"kind: QemuVM\nname: vm\nspec:\n  memory: 2048\n  net0: {model: virtio, bridge: vmbr0, tag: 100}\n  running: true\n",
		"kind: LinuxBridge\nname: vmbr1\nspec:\n  node: pve\n  bridge_ports: [eno2, eno3]\n---\nkind: NetworkApply\nname: pve\nspec: {node: pve}\n",
		"kind: Connection\nname: c\nspec:\n  url: ${URL:-https://a:8006}\n  tokenId: a@pve!tt\n  tokenSecret: ${SECRET}\n",
		"kind: Defaults\nname: d\nspec:\n  QemuVM: {memory: 512}\n---\nkind: QemuVM\nname: v\n",
		"kind: Pool\nname: &n a\nspec: {comment: *n}\n",
		"kind: QemuVM\nname: x\ndependsOn: [QemuVM/x]\n",
		billionLaughs(9),
		"- not a map\n",
		"kind: [\n",
	} {
		f.Add(seed)
	}
	getenv := env("URL", "https://pve.example:8006", "SECRET", "s3cret")
	f.Fuzz(func(t *testing.T, in string) {
		set, err := Load([]string{StdinPath}, LoadOptions{Stdin: strings.NewReader(in), Getenv: getenv})
		if (set == nil) == (err == nil) {
			t.Fatalf("Load: got set %v and error %v, want exactly one", set != nil, err)
		}
		if err == nil {
			return
		}
		var diags Diagnostics
		if !errors.As(err, &diags) || len(diags) == 0 {
			t.Fatalf("Load: got %T %v, want Diagnostics", err, err)
		}
		// YAML breaks lines at \n, \r\n and a lone \r.
		lines := bytes.Count([]byte(strings.ReplaceAll(in, "\r\n", "\n")), []byte("\n")) + strings.Count(strings.ReplaceAll(in, "\r\n", ""), "\r") + 1
		for _, d := range diags {
			if d.Pos.File != stdinName || d.Pos.Line < 0 || d.Pos.Line > lines+1 {
				t.Fatalf("diagnostic %q is not placed in the input (%d lines)", d, lines)
			}
			if d.Msg == "" || strings.Contains(d.Msg, "\x00") {
				t.Fatalf("diagnostic %q has no readable message", d)
			}
		}
	})
}

package planner

import (
	"context"
	"slices"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
)

// TestSimImportSSHKeys: cloud-init's sshkeys, URL-encoded in PVE (here as
// the GUI encodes "@", "+" and "="), is written as the sshKeys list, a
// key an item, and plans clean; keys with a blank line between them stay
// sshkeys as PVE holds them (the list would drop the line).
func TestSimImportSSHKeys(t *testing.T) {
	const (
		k1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOOyGAkihLtNRiFD1mMVqAYfNWNDQzBlR1SDqPr6j+iZ ops@laptop"
		k2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEQFAyqFWrB7fZnMCrAEhnyggtt6s77Kt17tDveKRNZB ci"
		e1 = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIOOyGAkihLtNRiFD1mMVqAYfNWNDQzBlR1SDqPr6j%2BiZ%20ops%40laptop"
		e2 = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIEQFAyqFWrB7fZnMCrAEhnyggtt6s77Kt17tDveKRNZB%20ci"
	)
	cl, _ := simState(t, func(st map[string]any) {
		putVM(st, "310", map[string]any{"name": "keyed", "memory": "1024", "sshkeys": e1 + "%0A" + e2 + "%0A"})
		putVM(st, "311", map[string]any{"name": "gapped", "memory": "1024", "sshkeys": e1 + "%0A%0A" + e2})
	})
	res, err := engine.Import(context.Background(), cl, engine.ImportOptions{Refs: []string{"QemuVM/310", "QemuVM/311"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Docs) != 2 || len(res.Problems) != 0 {
		t.Fatalf("got %d documents, problems %q; want 2 and none", len(res.Docs), res.Problems)
	}
	for _, d := range res.Docs {
		keys, isList := importdoc.Value(d.Spec, "sshKeys")
		raw, isRaw := importdoc.Value(d.Spec, "sshkeys")
		switch d.Name {
		case "keyed":
			if l, _ := keys.([]string); !isList || isRaw || !slices.Equal(l, []string{k1, k2}) {
				t.Errorf("keyed: sshKeys %v, sshkeys %v; want the list [k1 k2] only", keys, raw)
			}
		case "gapped":
			if isList || raw != e1+"%0A%0A"+e2 {
				t.Errorf("gapped: sshKeys %v, sshkeys %v; want sshkeys as PVE holds it", keys, raw)
			}
		}
	}
	planImported(t, cl, res)
}

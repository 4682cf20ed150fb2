package planner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/secret"
)

// A config drive's new version shows its content as a diff against the
// version an earlier plan on this machine built: userData line by line.
// Without that plan's cache the diff says the old content is unknown and
// shows the new content; a key the document declares secret is kept
// masked, in the plan and in the cache.
func TestSimConfigDriveContentDiff(t *testing.T) {
	sim := newSim(t)
	cache := t.TempDir()
	const v1 = "kind: ConfigDriveISO\nname: seed\nspec:\n  storage: local\n  hostname: web\n  userData: |\n    #cloud-config\n    packages: [nginx]\n"
	v2 := strings.Replace(v1, "[nginx]", "[nginx, curl]", 1)
	applyPlan(t, sim, planFor(t, sim, loadSpec(t, v1), engine.Options{DriveCache: cache}))

	diffOf := func(p *engine.Plan) map[string]engine.FieldDiff {
		out := map[string]engine.FieldDiff{}
		for _, d := range p.Changes[0].Diff {
			out[d.Path] = d
		}
		return out
	}
	p := planFor(t, sim, loadSpec(t, v2), engine.Options{DriveCache: cache})
	d := diffOf(p)
	if ud := d["userData"]; ud.Before != "#cloud-config\npackages: [nginx]\n" || ud.After != "#cloud-config\npackages: [nginx, curl]\n" {
		t.Errorf("userData diff: %#v", ud)
	}
	if _, ok := d["hostname"]; ok {
		t.Errorf("hostname did not change but is in the diff: %#v", d["hostname"])
	}
	if strings.Contains(strings.Join(p.Changes[0].Reasons, "\n"), "not known on this machine") {
		t.Errorf("reasons: %q", p.Changes[0].Reasons)
	}

	// Another machine: the old content is unknown, the new one is shown.
	p = planFor(t, sim, loadSpec(t, v2), engine.Options{DriveCache: t.TempDir()})
	d = diffOf(p)
	if ud := d["userData"]; ud.Before != nil || ud.After != "#cloud-config\npackages: [nginx, curl]\n" {
		t.Errorf("userData without a cache: %#v", ud)
	}
	if !strings.Contains(strings.Join(p.Changes[0].Reasons, "\n"), "the content of seed-") {
		t.Errorf("reasons without a cache: %q", p.Changes[0].Reasons)
	}

	// No cache directory: nothing is written anywhere.
	none := planFor(t, sim, loadSpec(t, v2), engine.Options{})
	if ud := diffOf(none)["userData"]; ud.Before != nil {
		t.Errorf("userData with no cache: %#v", ud)
	}

	// Declared secret: masked in the plan and in the cache.
	const hidden = "hunter2-is-the-password"
	sec := strings.Replace(v1, "  userData:", "  userData:", 1) + "    # " + hidden + "\nsecretKeys: [userData]\n"
	secCache := t.TempDir()
	p = planFor(t, sim, loadSpec(t, sec), engine.Options{DriveCache: secCache})
	files, _ := filepath.Glob(filepath.Join(secCache, "configdrive", "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if strings.Contains(string(b), hidden) || !strings.Contains(string(b), secret.Shown) {
		t.Errorf("cache of a secret userData: %s", b)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(files[0])); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode: %v %v", fi.Mode(), err)
	}
	if ud := diffOf(p)["userData"]; ud.Before != nil && ud.Before != secret.Shown || ud.After != secret.Shown {
		t.Errorf("secret userData in the plan: %#v", ud)
	}
}

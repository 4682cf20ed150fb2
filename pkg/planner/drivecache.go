package planner

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/cidata"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

// A config drive's earlier content, for the diff only. PVE cannot give an
// uploaded ISO back: a storage volume's GET answers its size and path, and
// its notes exist only for backups (pve-storage PVE/Storage/Plugin.pm,
// get_volume_attribute), so a stateless plan knows the old version by its
// name alone. Each plan remembers, on this machine, what it showed of the
// version it builds (Options.DriveCache: one small file per version, named
// after it, 0600 in a 0700 directory), and a later plan that replaces that
// version shows the change field by field, userData as a line diff. The
// cache decides nothing: without it (another machine, a fresh CI runner)
// the plan says the old content is unknown and shows the new one.
// It holds only what a plan prints: keys the document declares secret are
// kept as "(sensitive)" (a secret's value in a plain key is refused at
// load, pkg/spec secretflow.go).

// driveShownKeys are the keys of a config drive whose content the plan
// shows (the …File keys are read into them at load).
var driveShownKeys = []string{"format", "hostname", "userData", "networkConfig", "networkData", "vendorData"}

// driveShown is what a plan shows of r's content, secrets masked.
func driveShown(r *spec.Resource) map[string]string {
	own := r.OwnFields()
	out := map[string]string{}
	for _, k := range driveShownKeys {
		v, ok := own[k].(string)
		if !ok || v == "" {
			continue
		}
		if spec.IsSecretKey(r, k) || secret.Key(k) {
			v = secret.Shown
		}
		out[k] = v
	}
	return out
}

// driveCacheFile is where the content of version file is kept; "" when
// there is no cache or file is not a version's name.
func driveCacheFile(dir, name, file string) string {
	if dir == "" {
		return ""
	}
	if _, ok := cidata.ParseVolumeName(name, file); !ok {
		return ""
	}
	return filepath.Join(dir, "configdrive", file+".json")
}

// rememberDrive keeps what the plan shows of r's version file, once. A
// cache that cannot be written is left alone: it only shortens diffs.
func rememberDrive(dir string, r *spec.Resource, file string) {
	path := driveCacheFile(dir, r.Name, file)
	if path == "" {
		return
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return
	}
	b, err := json.Marshal(driveShown(r))
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// recalledDrive is what an earlier plan showed of version file.
func recalledDrive(dir, name, file string) (map[string]string, bool) {
	path := driveCacheFile(dir, name, file)
	if path == "" {
		return nil, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var m map[string]string
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	return m, true
}

// driveContentDiff is the change from the old version's content to r's:
// field by field when this machine planned the old one, else r's content
// as new with a reason saying why.
func driveContentDiff(dir string, r *spec.Resource, oldFile string) ([]engine.FieldDiff, string) {
	now := driveShown(r)
	old, ok := recalledDrive(dir, r.Name, oldFile)
	if !ok {
		old = map[string]string{}
	}
	var out []engine.FieldDiff
	keys := slices.Collect(maps.Keys(now))
	for k := range old {
		if _, ok := now[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, hadB := old[k]
		a, hasA := now[k]
		if hadB && hasA && a == b {
			continue
		}
		var before, after any
		if hadB {
			before = b
		}
		if hasA {
			after = a
		}
		out = append(out, engine.FieldDiff{Path: k, Before: before, After: after})
	}
	if ok {
		return out, ""
	}
	return out, "the content of " + oldFile + " is not known on this machine (PVE cannot give an ISO back): shown is the new content"
}

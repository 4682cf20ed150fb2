package pvesim_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// pve-storage Plugin.pm decode_value: nodes are a hash (each name once);
// a format the type's plugindata lacks is dropped (warn, then `next`).
func TestStorageDecodeNodesAndFormat(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true, Sim: pvesim.Options{Nodes: []string{"pve1", "pve2"}}})
	e.ok(nil, "POST", "/storage", "storage", "b1", "type", "btrfs", "path", "/srv/b", "format", "qcow2",
		"nodes", "pve2,pve1,pve2")
	cfg := e.object("/storage/b1")
	if _, ok := cfg["format"]; ok {
		t.Errorf("btrfs storage keeps format %v; BTRFSPlugin.pm holds raw and subvol only", cfg["format"])
	}
	if cfg["nodes"] != "pve1,pve2" {
		t.Errorf("got nodes %v, want each node once", cfg["nodes"])
	}
	e.ok(nil, "PUT", "/storage/b1", "format", "subvol")
	if got := e.object("/storage/b1")["format"]; got != "subvol" {
		t.Errorf("got format %v after setting subvol", got)
	}
}

// SectionConfig.pm format_config_line writes a boolean as 0 or 1, so an
// explicit "shared 0" is in storage.cfg and in a GET, but write_config
// writes disable only when set (a bare "disable"); the digest is the
// file's, so changing shared changes it.
func TestStorageExplicitFlagsAndDigest(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "d1", "type", "dir", "path", "/srv/d", "shared", "0", "disable", "0")
	cfg := e.object("/storage/d1")
	if cfg["shared"] != float64(0) {
		t.Errorf("got shared %v, want 0 as storage.cfg keeps it", cfg["shared"])
	}
	if got, ok := cfg["disable"]; ok {
		t.Errorf("got disable %v, want none: write_config drops disable 0", got)
	}
	digest := cfg["digest"].(string)
	e.ok(nil, "PUT", "/storage/d1", "shared", "1", "digest", digest)
	r := e.call("PUT", "/storage/d1", "shared", "0", "digest", digest)
	want := "update storage failed: detected modified configuration - file changed by other user? Try again."
	if r.Status != 500 || r.Message != want {
		t.Errorf("stale digest after a shared change: got %d %q, want 500 %q", r.Status, r.Message, want)
	}
	e.ok(nil, "PUT", "/storage/d1", "delete", "shared,disable")
	cfg = e.object("/storage/d1")
	if _, ok := cfg["shared"]; ok {
		t.Errorf("shared %v after delete", cfg["shared"])
	}
}

// Plugin.pm parse_config: a 'local' dir storage always exists (put back
// with PVE's defaults once storage.cfg lacks it) and has no node list.
func TestStorageLocalAlwaysThere(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "PUT", "/storage/local", "nodes", "pve")
	if got, ok := e.object("/storage/local")["nodes"]; ok {
		t.Errorf("local has nodes %v; parse_config removes them", got)
	}
	e.ok(nil, "DELETE", "/storage/local")
	cfg := e.object("/storage/local")
	delete(cfg, "digest")
	want := map[string]any{"storage": "local", "type": "dir", "path": "/var/lib/vz",
		"content": "backup,images,iso,rootdir,snippets,vztmpl", "prune-backups": "keep-all=1"}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("local after delete (-want +got)\n%s", diff)
	}
}

// The plugins' on_add_hook and check_config: LVMPlugin.pm wants an
// existing iSCSI storage under a base, ZFSPoolPlugin.pm records the pool's
// mountpoint, DirPlugin.pm canonicalizes a path as File::Spec->canonpath
// does (no ".." resolved).
func TestStorageAddHooks(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	tests := []refusal{
		{"base on a missing storage", "POST", "/storage", []string{"storage", "v1", "type", "lvm", "vgname", "v1", "base", "nope:lun0"}, 500,
			"create storage failed: base storage ID 'nope' does not exist"},
		{"base on a dir storage", "POST", "/storage", []string{"storage", "v1", "type", "lvm", "vgname", "v1", "base", "local:lun0"}, 500,
			"create storage failed: unsupported base type 'dir' at /usr/share/perl5/PVE/Storage/LVMPlugin.pm line 489."},
	}
	e.refuses(t, tests)
	e.ok(nil, "POST", "/storage", "storage", "z1", "type", "zfspool", "pool", "tank/vm")
	if got := e.object("/storage/z1")["mountpoint"]; got != "/tank/vm" {
		t.Errorf("got mountpoint %v, want the pool's /tank/vm", got)
	}
	e.ok(nil, "POST", "/storage", "storage", "d2", "type", "dir", "path", "//srv/./a/../b/")
	if got := e.object("/storage/d2")["path"]; got != "/srv/a/../b" {
		t.Errorf("got path %v, want canonpath's /srv/a/../b", got)
	}
}

// pve-common Tools.pm assert_if_modified compares digests with `ne`.
func TestStorageDigestExact(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	digest := e.object("/storage/local")["digest"].(string)
	r := e.call("PUT", "/storage/local", "content", "iso", "digest", strings.ToUpper(digest))
	if r.Status != 500 {
		t.Errorf("an upper-case digest passed: got %d %q", r.Status, r.Message)
	}
}

// ESXiPlugin.pm options take bwlimit like the other plugins.
func TestStorageESXiBwlimit(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "esx1", "type", "esxi", "server", "10.0.0.8", "username", "root",
		"bwlimit", "default=1000")
	if got := e.object("/storage/esx1")["bwlimit"]; got != "default=1000" {
		t.Errorf("got bwlimit %v", got)
	}
}

// SectionConfig.pm format_config_line writes no line for an empty value,
// so an option set to "" is absent from the next read.
func TestStorageEmptyValueGone(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "c1", "type", "cifs", "server", "10.0.0.5", "share", "s",
		"domain", "")
	if got, ok := e.object("/storage/c1")["domain"]; ok {
		t.Errorf("got domain %q, want none: storage.cfg keeps no empty value", got)
	}
	e.ok(nil, "PUT", "/storage/c1", "domain", "corp")
	e.ok(nil, "PUT", "/storage/c1", "domain", "")
	if got, ok := e.object("/storage/c1")["domain"]; ok {
		t.Errorf("got domain %q after setting it empty", got)
	}
}

// PBSPlugin.pm on_add_hook / on_update_hook return a hash even when it is
// empty, and Config.pm answers it as config; other plugins return nothing.
func TestStoragePBSAnswersConfig(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	var got map[string]any
	e.ok(&got, "POST", "/storage", "storage", "pbs1", "type", "pbs", "server", "10.0.0.9", "datastore", "main")
	if c, ok := got["config"]; !ok || len(c.(map[string]any)) != 0 {
		t.Errorf("create answered %v, want config {}", got)
	}
	got = nil
	e.ok(&got, "PUT", "/storage/pbs1", "username", "backup@pbs")
	if _, ok := got["config"]; !ok {
		t.Errorf("update answered %v, want config {}", got)
	}
	got = nil
	e.ok(&got, "PUT", "/storage/local", "content", "iso")
	if _, ok := got["config"]; ok {
		t.Errorf("dir update answered %v, want no config", got)
	}
}

package pvesim_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

func sum256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// The storage calls of pve-storage API2/Storage/Config.pm with the plugin
// rules SectionConfig.pm check_config enforces: PVE dies on them, so the
// answers are 500s with PVE's messages, after the schema check passed.
func TestStorageConfig(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "nfs1", "type", "nfs", "server", "10.0.0.5", "export", "/srv/pve",
		"content", "iso,backup")
	cfg := e.object("/storage/nfs1")
	delete(cfg, "digest")
	want := map[string]any{"storage": "nfs1", "type": "nfs", "server": "10.0.0.5", "export": "/srv/pve",
		"content": "backup,iso", "path": "/mnt/pve/nfs1", "shared": float64(1)}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("storage config (-want +got)\n%s", diff)
	}
	e.ok(nil, "POST", "/storage", "storage", "pbs1", "type", "pbs", "server", "10.0.0.9", "datastore", "main",
		"username", "backup@pbs", "password", "hunter2")

	tests := []refusal{
		{"duplicate", "POST", "/storage", []string{"storage", "nfs1", "type", "dir", "path", "/x"}, 500,
			"create storage failed: storage ID 'nfs1' already defined"},
		{"missing path", "POST", "/storage", []string{"storage", "d1", "type", "dir"}, 500,
			"missing value for required option 'path'"},
		{"missing export", "POST", "/storage", []string{"storage", "n2", "type", "nfs", "server", "10.0.0.5"}, 500,
			"missing value for required option 'export'"},
		{"missing thinpool", "POST", "/storage", []string{"storage", "t1", "type", "lvmthin", "vgname", "pve"}, 500,
			"missing value for required option 'thinpool'"},
		{"option of another type", "POST", "/storage", []string{"storage", "d1", "type", "dir", "path", "/x", "server", "h"}, 500,
			"unexpected property 'server'"},
		{"password on nfs", "POST", "/storage", []string{"storage", "n2", "type", "nfs", "server", "h", "export", "/e", "password", "x"}, 500,
			"unexpected property 'password'"},
		{"illegal dir path", "POST", "/storage", []string{"storage", "d1", "type", "dir", "path", "/srv/a b"}, 500,
			"illegal path for directory storage: /srv/a b"},
		{"content none only", "POST", "/storage", []string{"storage", "l1", "type", "lvm", "vgname", "vg", "content", "iso"}, 500,
			"storage does not support content type 'none'"},
		{"content none and more", "POST", "/storage", []string{"storage", "d1", "type", "dir", "path", "/x", "content", "none,iso"}, 500,
			"unable to combine 'none' with other content types"},
		{"master key without key", "POST", "/storage", []string{"storage", "p2", "type", "pbs", "server", "h", "datastore", "d", "master-pubkey", "cGVt"}, 500,
			"create storage failed: 'master-pubkey' can only be used together with 'encryption-key'"},
		{"bad encryption key", "POST", "/storage", []string{"storage", "p2", "type", "pbs", "server", "h", "datastore", "d", "encryption-key", "nope"}, 500,
			"create storage failed: Value does not seems like a valid, JSON formatted encryption key!"},
		{"fixed server", "PUT", "/storage/nfs1", []string{"server", "10.0.0.6"}, 500,
			"update storage failed: can't change value of fixed parameter 'server'"},
		{"fixed server unchanged", "PUT", "/storage/nfs1", []string{"server", "10.0.0.5"}, 500,
			"update storage failed: can't change value of fixed parameter 'server'"},
		{"option of another type in update", "PUT", "/storage/nfs1", []string{"pool", "tank"}, 500,
			"update storage failed: unexpected property 'pool'"},
		{"delete unknown", "PUT", "/storage/nfs1", []string{"delete", "pool"}, 500,
			"update storage failed: no such option 'pool'"},
		{"delete fixed", "PUT", "/storage/nfs1", []string{"delete", "path"}, 500,
			"update storage failed: unable to delete required option 'path'"},
		{"set and delete", "PUT", "/storage/nfs1", []string{"delete", "options", "options", "vers=4"}, 500,
			"update storage failed: cannot set and delete property 'options' at the same time!"},
		{"stale digest", "PUT", "/storage/nfs1", []string{"content", "iso", "digest", strings.Repeat("a", 40)}, 500,
			"update storage failed: detected modified configuration - file changed by other user? Try again."},
		{"update unknown", "PUT", "/storage/nope", []string{"content", "iso"}, 500,
			"update storage failed: storage 'nope' does not exist"},
		{"delete unknown storage", "DELETE", "/storage/nope", nil, 500,
			"delete storage failed: storage 'nope' does not exist"},
		{"read unknown", "GET", "/storage/nope", nil, 500, "storage 'nope' does not exist"},
	}
	e.refuses(t, tests)

	// Content PVE cannot put on the type is dropped (Plugin.pm decode_value warns).
	e.ok(nil, "PUT", "/storage/nfs1", "content", "iso,rootdir", "nodes", "pve", "disable", "1", "options", "vers=4.2")
	e.ok(&cfg, "GET", "/storage/nfs1")
	if cfg["content"] != "iso,rootdir" || cfg["nodes"] != "pve" || cfg["disable"] != float64(1) || cfg["options"] != "vers=4.2" {
		t.Errorf("got %v after the update", cfg)
	}
	rows := e.rows("/nodes/pve/storage", "storage", "nfs1")
	if len(rows) != 1 || rows[0]["enabled"] != float64(0) {
		t.Errorf("got node storage %v, want disabled nfs1", rows)
	}
	// A deleted content list reads as the type's default again.
	e.ok(nil, "PUT", "/storage/nfs1", "delete", "content,nodes,options", "digest", cfg["digest"].(string))
	cfg = nil // json.Unmarshal would merge into the old map
	e.ok(&cfg, "GET", "/storage/nfs1")
	if cfg["content"] != "images" || cfg["nodes"] != nil || cfg["options"] != nil {
		t.Errorf("got %v after deleting content, nodes, options", cfg)
	}

	e.ok(nil, "DELETE", "/storage/nfs1")
	e.ok(&rows, "GET", "/storage")
	if len(rows) != 3 {
		t.Errorf("got %d storages after delete, want 3", len(rows))
	}
}

// The plugins' hooks keep secrets in /etc/pve/priv: never in storage.cfg,
// never in an answer; PBS records an encryption key's fingerprint.
func TestStorageSecrets(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "smb", "type", "cifs", "server", "files", "share", "vms",
		"username", "svc", "password", "s3cr3t-one")
	key := `{"kdf":null,"created":"2024-01-01T00:00:00Z","data":"AAAA","fingerprint":"aa:bb"}`
	var created map[string]any
	e.ok(&created, "POST", "/storage", "storage", "pbs", "type", "pbs", "server", "10.0.0.9", "datastore", "main",
		"username", "backup@pbs", "password", "s3cr3t-two", "encryption-key", key, "master-pubkey", "cGVtCg==")
	if cfg, _ := created["config"].(map[string]any); cfg["encryption-key"] != key {
		t.Errorf("got create answer %v, want the stored key in config", created)
	}
	e.ok(nil, "POST", "/storage", "storage", "ceph", "type", "rbd", "pool", "vms", "keyring", "[client.admin]")

	all := e.rows("/storage")
	for _, st := range all {
		for k, v := range st {
			if s, ok := v.(string); ok && (strings.Contains(s, "s3cr3t") || strings.Contains(s, "client.admin") || strings.Contains(s, "AAAA")) {
				t.Errorf("storage %v shows a secret in %s", st["storage"], k)
			}
		}
		if st["storage"] == "pbs" && (st["encryption-key"] != "aa:bb" || st["master-pubkey"] != "1") {
			t.Errorf("got pbs %v, want encryption-key aa:bb and master-pubkey 1", st)
		}
	}
	for _, tc := range []struct{ storage, key, value string }{
		{"smb", "password", "s3cr3t-one"}, {"pbs", "password", "s3cr3t-two"}, {"pbs", "encryption-key", key},
		{"ceph", "keyring", "[client.admin]"},
	} {
		if got, ok := e.Server.StorageSecret(tc.storage, tc.key); !ok || got != sum256(tc.value) {
			t.Errorf("%s %s: got %q %v, want the digest of what was sent", tc.storage, tc.key, got, ok)
		}
	}
	// An update without the secret keeps it; delete= drops it; a new one replaces it.
	e.ok(nil, "PUT", "/storage/smb", "domain", "LAB")
	if got, _ := e.Server.StorageSecret("smb", "password"); got != sum256("s3cr3t-one") {
		t.Error("an update without password lost it")
	}
	e.ok(nil, "PUT", "/storage/smb", "password", "s3cr3t-three")
	if got, _ := e.Server.StorageSecret("smb", "password"); got != sum256("s3cr3t-three") {
		t.Error("an update with a password did not store it")
	}
	e.ok(nil, "PUT", "/storage/pbs", "delete", "password,encryption-key")
	if _, ok := e.Server.StorageSecret("pbs", "password"); ok {
		t.Error("delete=password kept it")
	}
	pbs := e.object("/storage/pbs")
	if _, ok := pbs["encryption-key"]; ok {
		t.Errorf("got %v, want no encryption-key after deleting it", pbs)
	}
	e.ok(nil, "DELETE", "/storage/smb")
	if _, ok := e.Server.StorageSecret("smb", "password"); ok {
		t.Error("deleting the storage kept its password")
	}
}

// AccessControl.pm remove_storage_access: a deleted storage's ACLs and
// pool memberships go with it; Storage.pm storage_is_used keeps a base.
func TestStorageDeleteCleansUp(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.ok(nil, "POST", "/storage", "storage", "d1", "type", "dir", "path", "/srv/d1/")
	cfg := e.object("/storage/d1")
	if cfg["path"] != "/srv/d1" {
		t.Errorf("got path %v, want PVE's canonical /srv/d1", cfg["path"])
	}
	e.ok(nil, "POST", "/pools", "poolid", "p1")
	e.ok(nil, "PUT", "/pools", "poolid", "p1", "storage", "d1")
	e.ok(nil, "POST", "/access/users", "userid", "ci@pve") // root@pam's ACL entries are never kept
	e.ok(nil, "PUT", "/access/acl", "path", "/storage/d1", "roles", "PVEDatastoreUser", "users", "ci@pve")
	// LVMPlugin.pm on_add_hook: the base is an iSCSI storage's LUN.
	e.ok(nil, "POST", "/storage", "storage", "i1", "type", "iscsi", "portal", "10.0.0.7", "target", "iqn.2003-01.org.example:t1")
	e.ok(nil, "POST", "/storage", "storage", "vg1", "type", "lvm", "vgname", "vg1", "base", "i1:0.0.0.scsi-1")
	if r := e.call("DELETE", "/storage/i1"); r.Status != 500 || r.Message != "delete storage failed: can't remove storage - storage is used as base of another storage" {
		t.Errorf("got %d %q deleting a base, want 500", r.Status, r.Message)
	}
	e.ok(nil, "DELETE", "/storage/vg1")
	e.ok(nil, "DELETE", "/storage/i1")
	e.ok(nil, "DELETE", "/storage/d1")
	acl := e.rows("/access/acl")
	for _, a := range acl {
		if a["path"] == "/storage/d1" {
			t.Errorf("ACL %v outlived its storage", a)
		}
	}
	pools := e.rows("/pools", "poolid", "p1")
	if len(pools) != 1 || len(pools[0]["members"].([]any)) != 0 {
		t.Errorf("got pool %v, want no members", pools)
	}
}

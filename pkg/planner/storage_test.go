package planner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/google/go-cmp/cmp"

	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

const storageSpec = `kind: Storage
name: nfs-images
spec:
  type: nfs
  server: 10.8.10.20
  export: /srv/images
  content: iso,vztmpl,images
---
kind: Storage
name: smb
spec:
  type: cifs
  server: files.lab
  share: vms
  username: svc
  password: ${SMB_PASSWORD}
  content: [images, iso]
---
kind: QemuVM
name: on-nfs
spec:
  vmid: 310
  memory: 512
  scsi0: nfs-images:1
`

func storageConfig(t *testing.T, cl *pve.Client, id string) *pve.Config {
	t.Helper()
	rows, err := cl.Storages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rowWith(rows, "storage", id)
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSimStorageLifecycle: storages are created before the VM whose disk
// is on one, with the password from the environment (never shown); the
// next plan is clean although PVE reorders content and adds path and
// shared; an option change is one PUT per storage with the digest PVE has
// then (two in one apply); a fixed option is a replace that keeps the
// secret; destroy removes the VM, then the storages.
func TestSimStorageLifecycle(t *testing.T) {
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	sim := &simClients{cl: s.Client, conn: &spec.Connection{URL: s.URL, Nodes: []string{"pve"}}}
	set := loadSpec(t, storageSpec)

	p := planFor(t, sim, set, engine.Options{})
	want := []string{"create Storage/nfs-images", "create QemuVM/on-nfs <- Storage/nfs-images", "create Storage/smb"}
	wantPlan(t, "plan", p, want)
	for _, c := range p.Changes {
		for _, d := range c.Diff {
			if d.Path == "password" && d.After != secret.Shown {
				t.Errorf("create diff shows the password as %v", d.After)
			}
		}
	}
	applyPlan(t, sim, p)
	if got, ok := s.Server.StorageSecret("smb", "password"); !ok || got != sha256hex("smb-s3cret") {
		t.Errorf("smb password in PVE: got %q %v, want the one from the environment", got, ok)
	}
	if cfg := storageConfig(t, s.Client, "nfs-images"); cfg.Get("content") != "images,iso,vztmpl" || cfg.Get("path") != "/mnt/pve/nfs-images" {
		t.Errorf("nfs-images as PVE has it: %v", cfg)
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after create")

	// Two storages change in one apply: each PUT carries the digest of then.
	set = loadSpec(t, strings.NewReplacer("content: iso,vztmpl,images", "content: iso,vztmpl,images\n  options: vers=4.2",
		"content: [images, iso]", "content: [images, iso, backup]\n  nodes: pve").Replace(storageSpec))
	p = planFor(t, sim, set, engine.Options{})
	wantPlan(t, "plan", p, []string{"update Storage/nfs-images", "noop QemuVM/on-nfs <- Storage/nfs-images", "update Storage/smb"})
	if diff := cmp.Diff(map[string]string{"content": "images,iso,backup", "nodes": "pve"}, p.Changes[2].Params); diff != "" {
		t.Errorf("smb update params (-want +got):\n%s", diff)
	}
	applyPlan(t, sim, p)
	if cfg := storageConfig(t, s.Client, "nfs-images"); cfg.Get("options") != "vers=4.2" {
		t.Errorf("nfs-images after update: %v", cfg)
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after update")

	// A removed option is a delete=; a fixed one is a replace.
	set = loadSpec(t, strings.NewReplacer("content: iso,vztmpl,images", "content: iso,vztmpl,images\n  options: null",
		"server: files.lab", "server: files2.lab").Replace(storageSpec))
	p = planFor(t, sim, set, engine.Options{})
	byAddr := map[string]*engine.Change{}
	for _, c := range p.Changes {
		byAddr[c.Address] = c
	}
	if c := byAddr["Storage/nfs-images"]; c.Action != engine.Update || c.Params["delete"] != "options" {
		t.Errorf("nfs-images: got %s %v, want an update deleting options", c.Action, c.Params)
	}
	smb := byAddr["Storage/smb"]
	if smb.Action != engine.Replace || !strings.Contains(strings.Join(smb.Reasons, "; "), "PVE cannot change a storage's server once it exists") {
		t.Fatalf("smb: got %s %q, want a replace naming server", smb.Action, smb.Reasons)
	}
	applyPlan(t, sim, p)
	if cfg := storageConfig(t, s.Client, "smb"); cfg.Get("server") != "files2.lab" {
		t.Errorf("smb after replace: %v", cfg)
	}
	if got, _ := s.Server.StorageSecret("smb", "password"); got != sha256hex("smb-s3cret") {
		t.Error("the replace lost the smb password")
	}
	wantConverged(t, t.Fatalf, sim, set, "plan after replace")

	p = planFor(t, sim, set, engine.Options{Destroy: true})
	wantPlan(t, "destroy plan", p, []string{"delete QemuVM/on-nfs", "delete Storage/nfs-images <- QemuVM/on-nfs", "delete Storage/smb"})
	applyPlan(t, sim, p)
	for _, id := range []string{"nfs-images", "smb"} {
		if cfg := storageConfig(t, s.Client, id); cfg != nil {
			t.Errorf("storage %s after destroy: %v", id, cfg)
		}
	}
	if _, ok := s.Server.StorageSecret("smb", "password"); ok {
		t.Error("destroy left the smb password behind")
	}
}

// A protected storage is never replaced; a storage changed behind the plan
// is not overwritten.
func TestSimStorageGuards(t *testing.T) {
	sim := newSim(t)
	ctx := context.Background()
	base := "kind: Storage\nname: vz2\nprotected: true\nspec:\n  type: dir\n  path: /srv/vz2/\n"
	set := loadSpec(t, base)
	applyPlan(t, sim, planFor(t, sim, set, engine.Options{}))
	wantConverged(t, t.Fatalf, sim, set, "plan after create (PVE stores the path without its trailing slash)")
	if _, err := tryPlan(t, sim, loadSpec(t, strings.Replace(base, "/srv/vz2/", "/srv/other", 1)), engine.Options{}); err == nil ||
		!strings.Contains(err.Error(), "is protected: refusing to replace it") {
		t.Errorf("replacing a protected storage: got %v", err)
	}

	set = loadSpec(t, base+"  content: iso\n")
	p := planFor(t, sim, set, engine.Options{})
	if err := sim.cl.UpdateStorage(ctx, "vz2", map[string][]string{"content": {"backup"}}); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Apply(ctx, sim, p, engine.ApplyOptions{Hooks: &recHooks{}})
	if err == nil && res.Failed["Storage/vz2"] == nil {
		t.Fatal("an update over a storage changed since the plan went through")
	}
	if e := res.Failed["Storage/vz2"]; e == nil || !strings.Contains(e.Error(), "changed since the plan was made") {
		t.Errorf("got %v, want changed since the plan was made", e)
	}
}

// The fixed options come from the schema (create-only parameters) and,
// where another type lets one change, from the type's plugin.
func TestStorageFixed(t *testing.T) {
	b := &engine.Builder{Table: schema.Default()}
	tests := []struct {
		typ         string
		fixed, free []string
	}{
		{"nfs", []string{"type", "server", "export", "path", "snapshot-as-volume-chain"}, []string{"content", "nodes", "options"}},
		{"zfspool", []string{"type", "pool"}, []string{"sparse", "blocksize"}},
		{"zfs", []string{"pool", "blocksize", "portal", "target", "iscsiprovider"}, []string{"sparse"}},
		{"rbd", []string{"type"}, []string{"pool", "monhost", "krbd"}},
		{"pbs", []string{"server", "datastore"}, []string{"port", "fingerprint", "namespace"}},
		{"esxi", []string{"type"}, []string{"server", "username"}},
		{"lvmthin", []string{"vgname", "thinpool"}, []string{"content"}},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			st, _ := schema.LookupStorageType(tc.typ)
			got := storageFixed(b, st)
			for _, k := range tc.fixed {
				if !got[k] {
					t.Errorf("%s is not fixed", k)
				}
			}
			for _, k := range tc.free {
				if got[k] {
					t.Errorf("%s is fixed", k)
				}
			}
		})
	}
}

func TestDiffParamsStorage(t *testing.T) {
	m, _ := schema.Default().Lookup("POST", storageCreatePath)
	cmpr := compare.Comparer{M: m}
	pbs, _ := schema.LookupStorageType("pbs")
	tests := []diffCase{
		{
			name:    "content and nodes are sets",
			desired: map[string]string{"content": "iso,vztmpl,images", "nodes": "b,a"},
			live:    pve.ConfigOf(map[string]string{"content": "images,iso,vztmpl", "nodes": "a,b"}),
		},
		{
			name:    "a content type more is a change",
			desired: map[string]string{"content": "iso,images"},
			live:    pve.ConfigOf(map[string]string{"content": "images"}),
			want:    []engine.FieldDiff{{Path: "content", Before: "images", After: "iso,images"}},
		},
		{
			name:    "paths compare canonical",
			desired: map[string]string{"path": "/srv/vz/", "export": "/srv//images"},
			live:    pve.ConfigOf(map[string]string{"path": "/srv/vz", "export": "/srv/images"}),
		},
		{
			name:    "booleans as PVE answers them",
			desired: map[string]string{"disable": "0", "krbd": "1"},
			live:    pve.ConfigOf(map[string]string{"krbd": "1"}),
		},
		{
			name:    "secrets are never compared by value, and a missing mark is added",
			desired: map[string]string{"password": "x", "encryption-key": "{}", "master-pubkey": "cGVt"},
			live:    pve.ConfigOf(map[string]string{"encryption-key": "aa:bb"}),
			want:    []engine.FieldDiff{{Path: "master-pubkey", Before: nil, After: "cGVt"}},
		},
		{
			name:   "a removed mark is a delete",
			remove: []string{"encryption-key"},
			live:   pve.ConfigOf(map[string]string{"encryption-key": "aa:bb"}),
			want:   []engine.FieldDiff{{Path: "encryption-key", Before: secret.Shown, After: nil}},
		},
	}
	checkDiffs(t, cmpr, tests, func(tc diffCase) map[string]bool { return storageSkip(pbs, tc.desired, tc.live) })
}

// A token that may not see a storage gets a refused plan, not a create of
// what PVE hid from it; one that may see it but not configure storages is
// told it lacks Datastore.Allocate on /storage.
func TestSimStoragePermissions(t *testing.T) {
	admin := newSim(t)
	tok, id := asToken(t, admin, "ci@pve", "st")
	set := loadSpec(t, "kind: Storage\nname: vz2\nspec:\n  type: dir\n  path: /srv/vz2\n")
	plan := func() error {
		_, err := tryPlan(t, tok, set, engine.Options{})
		return err
	}
	if err := plan(); err == nil || !strings.Contains(err.Error(),
		"Storage/vz2: the API token ci@pve!st lacks Datastore.Audit or Datastore.AllocateSpace on /storage/vz2, needed to see the storage") {
		t.Errorf("got %v, want the missing audit privilege", err)
	}
	grantBoth(t, admin, "ci@pve", id, "/storage", "PVEDatastoreUser")
	if err := plan(); err == nil || !strings.Contains(err.Error(), "lacks Datastore.Allocate on /storage, needed to create the storage") {
		t.Errorf("got %v, want the missing Datastore.Allocate", err)
	}
	grantBoth(t, admin, "ci@pve", id, "/storage", "PVEDatastoreAdmin")
	applyPlan(t, tok, planFor(t, tok, set, engine.Options{}))
	wantConverged(t, t.Errorf, tok, set, "plan after create")
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// The Storage of ../shared/examples/04-every-kind.yaml (with its
// Connection), and a CIFS storage whose password comes from the
// environment.
const everyKindStorage = `kind: Connection
name: lab
spec:
  url: ${PROXMOX_URL}
  tokenId: ${PROXMOX_TOKEN_ID}
  tokenSecret: ${PROXMOX_TOKEN_SECRET}
  nodes: [pve]
---
kind: Storage
name: nfs-images
connection: lab
spec:
  storage: nfs-images
  type: nfs
  server: 10.8.10.20
  export: /srv/images
  content: iso,vztmpl,images
---
kind: Storage
name: smb-backup
connection: lab
spec:
  type: cifs
  server: files.lab.example
  share: backup
  username: svc-backup
  password: ${SMB_PASSWORD}
  content: backup
`

const smbPassword = "Sm6-pa55word-never-shown"

// Issue 8 acceptance for Storage: the example's storage applies, a second
// plan is clean, a fixed option plans a replace, destroy removes it; the
// CIFS password reaches PVE and appears in no output (--debug included),
// nor in a saved plan; a literal password fails validate at its line.
func TestE2EStorage(t *testing.T) {
	s := simtest.Start(t, simtest.Options{
		Sim:           pvesim.Options{TokenID: e2eTokenID, TokenSecret: e2eTokenSecret, TaskDuration: 30 * time.Millisecond, Seed: 1},
		Conformance:   true,
		ClientOptions: []pve.Option{pve.WithTaskPolling(10*time.Millisecond, 50*time.Millisecond)},
	})
	env := &simEnv{t: t, url: s.URL, requests: s.Requests, client: s.Client, extraEnv: []string{"SMB_PASSWORD=" + smbPassword}}
	f := writeSpec(t, "storage.yaml", everyKindStorage)
	noSecret := func(what string, r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, smbPassword) {
			t.Errorf("%s printed the CIFS password:\nstdout:\n%s\nstderr:\n%s", what, r.stdout, r.stderr)
		}
	}

	env.mustRun(0, "validate", "-f", f)
	planFile := filepath.Join(t.TempDir(), "plan.json")
	r := env.mustRun(0, "plan", "-f", f, "--debug", "--out", planFile)
	noSecret("plan --debug", r)
	if !strings.Contains(r.stdout, "Storage/nfs-images") || !strings.Contains(r.stdout, "password") {
		t.Errorf("plan does not show the storages and the (masked) password:\n%s", r.stdout)
	}
	if b, err := os.ReadFile(planFile); err != nil || strings.Contains(string(b), smbPassword) {
		t.Errorf("the saved plan holds the password (or cannot be read: %v)", err)
	}

	r = env.mustRun(0, "apply", "-f", f, "--auto-approve", "--debug")
	noSecret("apply --debug", r)
	sum := sha256.Sum256([]byte(smbPassword))
	if got, ok := s.Server.StorageSecret("smb-backup", "password"); !ok || got != hex.EncodeToString(sum[:]) {
		t.Errorf("PVE did not get the password from the environment (%q, %v)", got, ok)
	}
	rows, err := s.Client.Storages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, row := range rows {
		ids = append(ids, row.Get("storage"))
		for k, v := range row.All() {
			if strings.Contains(v, smbPassword) {
				t.Errorf("GET /storage shows the password in %s", k)
			}
		}
	}
	if strings.Join(ids, ",") != "local,local-lvm,nfs-images,smb-backup" {
		t.Errorf("storages after apply: %v", ids)
	}

	r = env.mustRun(0, "plan", "-f", f, "--detailed-exitcode", "--debug")
	noSecret("second plan", r)

	edited := writeSpec(t, "edited.yaml", strings.Replace(everyKindStorage, "server: 10.8.10.20", "server: 10.8.10.21", 1))
	r = env.mustRun(0, "plan", "-f", edited, "--json")
	p := parsePlan(t, r.stdout)
	found := false
	for _, c := range p.Changes {
		if c.Address != "Storage/nfs-images" {
			continue
		}
		found = true
		if c.Action != "replace" || !strings.Contains(strings.Join(c.Reasons, "; "), "PVE cannot change a storage's server") {
			t.Errorf("a new NFS server: got %s %q, want a replace naming server", c.Action, c.Reasons)
		}
	}
	if !found {
		t.Errorf("plan --json lacks Storage/nfs-images:\n%s", r.stdout)
	}

	literal := writeSpec(t, "literal.yaml", strings.Replace(everyKindStorage, "${SMB_PASSWORD}", "hunter2-literal", 1))
	r = env.mustRun(3, "validate", "-f", literal)
	if !strings.Contains(r.stderr, "literal.yaml:27: spec.password is a secret: write it as ${VAR}") || strings.Contains(r.stderr, "hunter2-literal") {
		t.Errorf("validate of a literal password:\n%s", r.stderr)
	}

	r = env.mustRun(0, "destroy", "-f", f, "--auto-approve", "--debug")
	noSecret("destroy --debug", r)
	rows, err = s.Client.Storages(context.Background())
	if err != nil || len(rows) != 2 {
		t.Errorf("storages after destroy: %v %v, want local and local-lvm", rows, err)
	}
	if _, ok := s.Server.StorageSecret("smb-backup", "password"); ok {
		t.Error("destroy left the password in PVE's priv store")
	}
}

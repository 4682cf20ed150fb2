package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestE2EPrivilegeSeparatedToken drives the binary with a token made
// through the API: without ACLs, plan refuses, naming each missing
// privilege and its path (never a plan from the empty view PVE gives such
// a token); with PVEVMAdmin on /vms and the rights its other calls need,
// it plans, applies and then plans clean.
func TestE2EPrivilegeSeparatedToken(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	admin := e.adminDo
	tok := e.privsepToken(t, "ci@pve", "plan")
	e.extraEnv = tok.env()
	noSecret := func(r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, tok.Value) {
			t.Error("pvectl printed the token's secret")
		}
	}
	f := writeSpec(t, "perm.yaml", `kind: Pool
name: team
---
kind: QemuVM
name: web
spec:
  memory: 1024
  scsi0: local-lvm:4
  net0: virtio,bridge=vmbr0
  pool: team
  running: true
`)

	r := e.run("plan", "-f", f)
	noSecret(r)
	if r.code == 0 {
		t.Fatalf("plan with a token without ACLs: exit 0, want a refusal\n%s", r.stdout)
	}
	containsAll(t, "plan stderr", r.stderr,
		"QemuVM/web: the API token ci@pve!plan lacks VM.Audit on /vms",
		"Pool/team: the API token ci@pve!plan lacks Pool.Audit on /pool/team",
		"pveum acl modify /vms --roles PVEAuditor --tokens 'ci@pve!plan'",
	)
	if strings.Contains(r.stdout, "create") {
		t.Errorf("plan printed a plan:\n%s", r.stdout)
	}

	for _, g := range []struct{ path, role string }{
		{"/vms", "PVEVMAdmin"},
		{"/pool/team", "PVEPoolAdmin"},
		{"/storage", "PVEDatastoreUser"},
		{"/sdn/zones/localnetwork", "PVESDNUser"},
	} {
		for _, who := range []url.Values{{"users": {"ci@pve"}}, {"tokens": {tok.Full}}} {
			who.Set("path", g.path)
			who.Set("roles", g.role)
			admin(http.MethodPut, "/access/acl", who, nil)
		}
	}
	noSecret(e.mustRun(2, "plan", "-f", f, "--detailed-exitcode"))
	// apply holds the run lock, a pool: the preflight names the privilege
	// and where to grant it (above the pool, whose own ACLs PVE deletes
	// with it), and nothing is changed.
	r = e.mustRun(1, "apply", "-f", f, "--auto-approve")
	noSecret(r)
	containsAll(t, "apply stderr", r.stderr,
		"lacks Pool.Allocate on /pool/pvectl-lock, needed to take pvectl's run lock",
		"pveum acl modify /pool --roles PVEPoolAdmin --tokens 'ci@pve!plan'",
	)
	if pools, err := e.client.Pools(ctx); err != nil || hasPool(pools, "team") {
		t.Errorf("an apply refused for its lock changed something: pools %v (%v)", pools, err)
	}
	for _, who := range []url.Values{{"users": {"ci@pve"}}, {"tokens": {tok.Full}}} {
		who.Set("path", "/pool")
		who.Set("roles", "PVEPoolAdmin")
		admin(http.MethodPut, "/access/acl", who, nil)
	}
	noSecret(e.mustRun(0, "apply", "-f", f, "--auto-approve"))
	noSecret(e.mustRun(0, "plan", "-f", f, "--detailed-exitcode"))
}

// `pvectl sim --extra-token` adds a privilege-separated token without
// ACLs: plans with it are refused until the admin token grants it rights.
func TestE2ESimExtraToken(t *testing.T) {
	const id, secret = "ci@pve!try", "9d1f0e52-extra-token-secret"
	u, lines := simProcess(t, "--extra-token", id+"="+secret)
	for _, l := range lines {
		if strings.Contains(l, secret) {
			t.Errorf("sim printed the extra token's secret: %s", l)
		}
	}
	env := &simEnv{t: t, url: u, extraEnv: []string{"PROXMOX_TOKEN_ID=" + id, "PROXMOX_TOKEN_SECRET=" + secret}}
	r := env.mustRun(1, "plan", "-f", example(t, "01-bridge-and-vm.yaml", nil))
	containsAll(t, "plan stderr", r.stderr, "lacks VM.Audit on /vms/100", "lacks SDN.Audit or SDN.Use on /sdn/zones/localnetwork/vmbr1")
}

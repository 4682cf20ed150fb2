package pvesim_test

import (
	"strings"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
)

// Realms as pve-access-control API2/Domains.pm serves them: pam and pve
// from the start, LDAP/AD/OpenID realms created, read, updated and
// deleted with their plugins' options; the bind password never answered.
func TestDomains(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	rows := e.rows("/access/domains")
	if len(rows) != 2 || rows[0]["realm"] != "pam" || rows[1]["realm"] != "pve" || rows[1]["type"] != "pve" {
		t.Fatalf("GET /access/domains: got %v, want pam and pve", rows)
	}
	e.ok(nil, "POST", "/access/domains", "realm", "corp", "type", "ldap", "server1", "ldap.example.invalid",
		"base_dn", "dc=corp", "user_attr", "uid", "bind_dn", "cn=bind,dc=corp", "password", "s3cret-bind", "secure", "1", "default", "1")
	e.ok(nil, "POST", "/access/domains", "realm", "sso", "type", "openid", "issuer-url", "https://idp.invalid",
		"client-id", "pve", "username-claim", "email")
	r := e.call("GET", "/access/domains/corp")
	if strings.Contains(string(r.Data), "s3cret") {
		t.Errorf("the bind password is answered: %s", r.Data)
	}
	corp := e.object("/access/domains/corp")
	if corp["type"] != "ldap" || corp["secure"] != 1.0 || corp["default"] != 1.0 || corp["digest"] == nil || corp["password"] != nil {
		t.Errorf("GET corp: got %v", corp)
	}
	if pw, ok := e.Server.RealmSecret("corp"); !ok || pw == "s3cret-bind" || pw == "" {
		t.Errorf("stored password: %q %v, want its digest", pw, ok)
	}
	refusals := []refusal{
		{"exists", "POST", "/access/domains", []string{"realm", "corp", "type", "ad", "server1", "x", "domain", "x"}, 500, "add auth server failed: domain 'corp' already exists"},
		{"builtin type", "POST", "/access/domains", []string{"realm", "other", "type", "pve"}, 500, "add auth server failed: unable to create builtin type 'pve'"},
		{"missing option", "POST", "/access/domains", []string{"realm", "ad1", "type", "ad", "server1", "x"}, 500, "add auth server failed: missing value for required option 'domain'"},
		{"foreign option", "POST", "/access/domains", []string{"realm", "ad1", "type", "ad", "server1", "x", "domain", "x", "issuer-url", "https://x.invalid"}, 500, "add auth server failed: unexpected property 'issuer-url'"},
		{"check-connection", "POST", "/access/domains", []string{"realm", "o2", "type", "openid", "issuer-url", "https://x.invalid", "client-id", "x", "check-connection", "1"}, 500, "add auth server failed: 'check-connection' parameter can only be set for realms of type 'ldap' or 'ad'"},
		{"nothing", "PUT", "/access/domains/sso", nil, 500, "update auth server failed: no options specified"},
		{"digest", "PUT", "/access/domains/sso", []string{"comment", "x", "digest", strings.Repeat("0", 40)}, 500, "update auth server failed: detected modified configuration - file changed by other user? Try again."},
		{"missing", "DELETE", "/access/domains/nope", nil, 500, "delete auth server failed: authentication domain 'nope' does not exist"},
	}
	e.refuses(t, refusals)
	e.ok(nil, "PUT", "/access/domains/sso", "comment", "single sign-on", "default", "1")
	e.ok(&rows, "GET", "/access/domains")
	for _, row := range rows {
		if (row["default"] != nil) != (row["realm"] == "sso") {
			t.Errorf("default realm after the update: %v", rows)
		}
	}
	e.ok(nil, "PUT", "/access/domains/corp", "delete", "password,bind_dn")
	if _, ok := e.Server.RealmSecret("corp"); ok {
		t.Errorf("delete=password kept the stored password")
	}
	// The list is for anyone (the login box needs it); the rest needs
	// Realm.Allocate (Sys.Audit reads) on /access/realm.
	tok := e.newToken("nobody@pve", "tk", false)
	if r := e.as(tok, "GET", "/access/domains"); r.Status != 200 {
		t.Errorf("GET /access/domains without privileges: got %d %q", r.Status, r.Message)
	}
	wantDenied(t, e.as(tok, "GET", "/access/domains/corp"), "/access/realm, Realm.Allocate|Sys.Audit")
	wantDenied(t, e.as(tok, "DELETE", "/access/domains/corp"), "/access/realm, Realm.Allocate")
	e.ok(nil, "DELETE", "/access/domains/sso")
	e.ok(&rows, "GET", "/access/domains")
	if len(rows) != 3 {
		t.Errorf("after the delete: got %v", rows)
	}
}

// POST /nodes/{node}/aplinfo downloads an appliance of the index (a
// simulated task, no network) into the storage's templates; GET lists
// the index (pve-manager PVE/API2/Nodes.pm aplinfo, apl_download).
func TestAplinfo(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	apls := e.rows("/nodes/pve/aplinfo")
	var tmpl string
	for _, a := range apls {
		if a["os"] == "ubuntu-24.04" {
			tmpl, _ = a["template"].(string)
		}
	}
	if tmpl == "" {
		t.Fatalf("no ubuntu-24.04 appliance in %v", apls)
	}
	if r := e.call("POST", "/nodes/pve/aplinfo", "storage", "local", "template", "nope.tar.zst"); r.Status != 400 || r.Errors["template"] != "no such template" {
		t.Errorf("unknown template: got %d %v", r.Status, r.Errors)
	}
	if r := e.call("POST", "/nodes/pve/aplinfo", "storage", "local-lvm", "template", tmpl); r.Status != 500 || r.Message != "storage 'local-lvm' does not support templates" {
		t.Errorf("storage without vztmpl: got %d %q", r.Status, r.Message)
	}
	st := e.wait(e.task("POST", "/nodes/pve/aplinfo", "storage", "local", "template", tmpl))
	if st.ExitStatus != "OK" || st.Type != "download" {
		t.Fatalf("download task: %+v", st)
	}
	e.object("/nodes/pve/storage/local/content/local:vztmpl%2F" + tmpl) // the volume reads back as an object
	e.run("POST", "/nodes/pve/lxc", "vmid", "200", "ostemplate", "local:vztmpl/"+tmpl, "rootfs", "local-lvm:4")
}

// PUT …/unlink is a synchronous config update deleting the listed disks
// (qemu-server API2/Qemu.pm unlink): kept as unusedN, freed with force.
func TestUnlink(t *testing.T) {
	e := startEnv(t, simtest.Options{Conformance: true})
	e.run("POST", "/nodes/pve/qemu", "vmid", "100", "scsi0", "local-lvm:8", "scsi1", "local-lvm:1", "scsi2", "local-lvm:1")
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/unlink", "idlist", "scsi1")
	c := e.config("100")
	if c["scsi1"] != nil || c["unused0"] != "local-lvm:vm-100-disk-1" {
		t.Errorf("after unlink: scsi1 %v unused0 %v", c["scsi1"], c["unused0"])
	}
	e.ok(nil, "PUT", "/nodes/pve/qemu/100/unlink", "idlist", "scsi2,unused0", "force", "1")
	c = e.config("100")
	if c["scsi2"] != nil || c["unused0"] != nil || c["unused1"] != nil {
		t.Errorf("after a forced unlink: %v", c)
	}
	vols := e.rows("/nodes/pve/storage/local-lvm/content", "vmid", "100")
	if len(vols) != 1 {
		t.Errorf("volumes of VM 100 after a forced unlink: %v", vols)
	}
}

package planner

import (
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// realmKind manages Realm: an LDAP, AD or OpenID realm of domains.cfg
// (pve-access-control src/PVE/API2/Domains.pm, src/PVE/Auth/*.pm). The
// list carries type and comment only, so each realm is read (GET
// /access/domains/{realm}, with the file's digest, sent back with the
// update). type cannot change (the plugin is the section's type), nor an
// OpenID realm's username-claim (fixed): both replace. The LDAP/AD bind
// password is write-only: PVE keeps it apart (/etc/pve/priv/realm,
// LDAP.pm ldap_set_credentials) and never answers it, so it is sent at
// create and otherwise only under secretUpdate: always (docs/decisions.md).
// An OpenID client-key is a secret too, but domains.cfg keeps it and read
// answers it (OpenId.pm, Domains.pm read): it is compared like any
// setting, masked in diffs and traces.
var realmKind = &cfgKind{
	kind: spec.KindRealm, noun: "realm", idParam: "realm",
	listPath: "/access/domains", listID: "realm",
	itemPath: "/access/domains/{id}", createPath: "/access/domains",
	readItem: true,
	fixed:    []string{"type", "username-claim"},
	secrets:  []string{"password"},
	// pam and pve are on every installation.
	isBuiltin: func(row *pve.Config) bool { return row.Get("type") == "pam" || row.Get("type") == "pve" },
	importSecret: func(cfg *pve.Config) string {
		if cfg.Get("bind_dn") != "" {
			return "password"
		}
		return ""
	},
}

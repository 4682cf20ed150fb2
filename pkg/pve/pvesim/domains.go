package pvesim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// Authentication realms: /etc/pve/domains.cfg, as pve-access-control
// src/PVE/API2/Domains.pm serves it (index, create, read, update,
// delete) with the options of src/PVE/Auth/{PAM,PVE,LDAP,AD,OpenId}.pm.
// An LDAP or AD bind password is kept apart from the config
// (/etc/pve/priv/realm/<realm>.pw, LDAP.pm ldap_set_credentials): the
// simulator keeps its SHA-256 only and never answers it. Nothing
// connects to a directory server: `check-connection` is refused where PVE
// refuses it and otherwise not simulated (the realm is written).

// realmTypes are the plugins' options: required ones have no `optional`.
func realmTypes() map[string]map[string]sectionOpt {
	opt := func(required []string, optional ...string) map[string]sectionOpt {
		m := map[string]sectionOpt{}
		for _, k := range required {
			m[k] = sectionOpt{required: true}
		}
		for _, k := range optional {
			m[k] = sectionOpt{}
		}
		return m
	}
	common := []string{"port", "secure", "sslversion", "default", "comment", "tfa", "verify", "capath", "cert", "certkey",
		"filter", "sync_attributes", "user_classes", "group_dn", "group_name_attr", "group_filter", "group_classes",
		"sync-defaults-options", "mode", "case-sensitive", "server2", "bind_dn", "password"}
	openid := opt([]string{"issuer-url", "client-id"}, "client-key", "autocreate", "groups-claim", "groups-autocreate",
		"groups-overwrite", "prompt", "scopes", "acr-values", "audiences", "default", "comment", "query-userinfo")
	openid["username-claim"] = sectionOpt{fixed: true}
	return map[string]map[string]sectionOpt{
		"pam":    opt(nil, "default", "comment", "tfa"),
		"pve":    opt(nil, "default", "comment", "tfa"),
		"ldap":   opt([]string{"server1", "base_dn", "user_attr"}, common...),
		"ad":     opt([]string{"server1", "domain"}, append(common, "base_dn", "user_attr")...),
		"openid": openid,
	}
}

// domains is domains.cfg: realms by name, each its options with "type".
type domains struct {
	Realms map[string]map[string]string `json:"realms"`
	// Passwords are the bind passwords' SHA-256 digests by realm.
	Passwords map[string]string `json:"passwords,omitempty"`
}

func (s *Server) domainRoutes() []route {
	return crudRoutes("/access/domains", "/{realm}",
		s.listDomains, s.createDomain, s.getDomain, s.updateDomain, s.deleteDomain)
}

// realms is domains.cfg, the two built-in realms of a new installation
// when nothing was written yet (pve-manager's installer writes them).
func (s *Server) realms() *domains {
	if s.st.Domains == nil {
		s.st.Domains = &domains{Realms: map[string]map[string]string{
			"pam": {"type": "pam", "comment": "Linux PAM standard authentication"},
			"pve": {"type": "pve", "comment": "Proxmox VE authentication server"},
		}}
	}
	return s.st.Domains
}

// digest is the SHA-1 of domains.cfg as written: a section config, as
// sections are.
func (d *domains) digest() string {
	return sections(d.Realms).digest()
}

// listDomains is index: realm, type, comment, default and the tfa type.
func (s *Server) listDomains(q *request) (any, error) {
	d := s.realms()
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(d.Realms)) {
		r := d.Realms[name]
		row := map[string]any{"realm": name, "type": r["type"]}
		if c := r["comment"]; perlTrue(c) { // index: `if $d->{comment}`
			row["comment"] = c
		}
		if r["default"] == "1" {
			row["default"] = 1
		}
		if t := r["tfa"]; t != "" {
			if typ, ok := schema.PropValue(props(t), "type"); ok {
				row["tfa"] = typ
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// domainValue types a stored option as SectionConfig's check_value
// reads it back: booleans and integers as numbers.
func domainValue(key, val string) any {
	m, ok := schema.Default().Lookup("PUT", "/access/domains/{realm}")
	if !ok {
		return val
	}
	if p, ok := m.Param(key); ok && (p.Type == "boolean" || p.Type == "integer") {
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			return n
		}
	}
	return val
}

// getDomain is read: the realm's options with the file's digest, never
// the password.
func (s *Server) getDomain(q *request) (any, error) {
	d := s.realms()
	name := q.vars["realm"]
	r, ok := d.Realms[name]
	if !ok {
		return nil, fail(http.StatusInternalServerError, "domain '%s' does not exist", name)
	}
	out := map[string]any{"digest": d.digest()}
	for k, v := range r {
		out[k] = domainValue(k, v)
	}
	return out, nil
}

// realmParams are the request's realm options (what check_config sees).
func realmParams(q *request) map[string]string {
	out := map[string]string{}
	for k := range q.params {
		switch k {
		case "realm", "type", "digest", "delete", "password", "check-connection":
			continue
		}
		out[k] = q.get(k)
	}
	return out
}

// checkRealmConfig is SectionConfig check_config for the realm's type.
func checkRealmConfig(typ string, params map[string]string, create bool) error {
	return checkSection(realmTypes()[typ], params, create)
}

// realmFailed is lock_domain_config's die with its prefix.
func realmFailed(prefix string, err error) error {
	return fail(http.StatusInternalServerError, "%s: %v", prefix, err)
}

// createDomain is create: a new name, neither reserved nor of a built-in
// type; check-connection only for LDAP and AD; `default` moves to it; a
// password only where the type has one (else ignored with a warning).
func (s *Server) createDomain(q *request) (any, error) {
	d := s.realms()
	name, typ := q.get("realm"), q.get("type")
	failed := func(format string, args ...any) error {
		return realmFailed("add auth server failed", fmt.Errorf(format, args...))
	}
	switch {
	case d.Realms[name] != nil:
		return nil, failed("domain '%s' already exists", name)
	case name == "pam" || name == "pve":
		return nil, failed("unable to use reserved name '%s'", name)
	case typ == "pam" || typ == "pve":
		return nil, failed("unable to create builtin type '%s'", typ)
	case q.has("check-connection") && typ != "ldap" && typ != "ad":
		return nil, failed("'check-connection' parameter can only be set for realms of type 'ldap' or 'ad'")
	}
	params := realmParams(q)
	if typ == "ldap" || typ == "ad" {
		mapSyncDefaults(params)
	}
	if err := checkRealmConfig(typ, params, true); err != nil {
		return nil, realmFailed("add auth server failed", err)
	}
	if params["default"] == "1" {
		clearDefault(d)
	}
	params["type"] = typ
	d.Realms[name] = params
	if q.has("password") && (typ == "ldap" || typ == "ad") {
		s.setRealmPassword(name, q.get("password"))
	}
	return nil, s.saveLocked()
}

func clearDefault(d *domains) {
	for _, r := range d.Realms {
		delete(r, "default")
	}
}

// setRealmPassword is ldap_set_credentials: the digest only.
func (s *Server) setRealmPassword(realm, pw string) {
	d := s.realms()
	ensureMap(&d.Passwords)
	d.Passwords[realm] = secretHash(pw)
}

// updateDomain is update, all under the domains.cfg lock: the digest,
// the realm, check-connection, something to do; deleted options go
// first (a deleted password is removed from the credentials), then the
// type's check_config, `default` moved, the options set.
func (s *Server) updateDomain(q *request) (any, error) {
	d := s.realms()
	failed := func(err error) error { return realmFailed("update auth server failed", err) }
	if dg := q.get("digest"); dg != "" && dg != d.digest() {
		return nil, failed(fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again."))
	}
	name := q.vars["realm"]
	r, ok := d.Realms[name]
	if !ok {
		return nil, failed(fmt.Errorf("domain '%s' does not exist", name))
	}
	typ := r["type"]
	if q.has("check-connection") && typ != "ldap" && typ != "ad" {
		return nil, failed(fmt.Errorf("'check-connection' parameter can only be set for realms of type 'ldap' or 'ad'"))
	}
	params, del := realmParams(q), schema.SplitList(q.get("delete"))
	if len(del) == 0 && len(params) == 0 && !q.has("password") {
		return nil, failed(fmt.Errorf("no options specified"))
	}
	if typ == "ldap" || typ == "ad" {
		mapSyncDefaults(params)
	}
	if err := checkRealmConfig(typ, params, false); err != nil {
		return nil, failed(err)
	}
	for _, k := range del {
		delete(r, k)
		if k == "password" {
			delete(d.Passwords, name)
		}
	}
	if params["default"] == "1" {
		clearDefault(d)
	}
	maps.Copy(r, params)
	if q.has("password") && (typ == "ldap" || typ == "ad") {
		s.setRealmPassword(name, q.get("password"))
	}
	return nil, s.saveLocked()
}

// deleteDomain is delete: any realm that exists, the built-in ones too
// (Domains.pm does not refuse them), with its stored password.
func (s *Server) deleteDomain(q *request) (any, error) {
	d := s.realms()
	name := q.vars["realm"]
	if _, ok := d.Realms[name]; !ok {
		return nil, realmFailed("delete auth server failed", fmt.Errorf("authentication domain '%s' does not exist", name))
	}
	delete(d.Realms, name)
	delete(d.Passwords, name)
	return nil, s.saveLocked()
}

// mapSyncDefaults is Domains.pm $map_sync_default_options with
// $delete_deprecated, run by create and update of an LDAP or AD realm:
// the deprecated full and purge of sync-defaults-options become
// remove-vanished ("entry;properties" for full, "acl" for purge) unless
// it is set, and go; the value is printed back (print_property_string:
// keys sorted, booleans as 0/1).
func mapSyncDefaults(params map[string]string) {
	v, ok := params["sync-defaults-options"]
	if !ok {
		return
	}
	items := props(v)
	if items == nil {
		return // malformed: check_config refuses it
	}
	flags := map[string]string{}
	var rest []schema.KV
	for _, it := range items {
		switch it.Key {
		case "full", "purge", "enable-new":
			flags[it.Key] = "0"
			if b, _ := schema.ParseBool(it.Value); b {
				flags[it.Key] = "1"
			}
		default:
			rest = append(rest, it)
		}
	}
	if _, set := schema.PropValue(rest, "remove-vanished"); !set && (flags["full"] == "1" || flags["purge"] == "1") {
		var rv []string
		if flags["full"] == "1" {
			rv = append(rv, "entry", "properties")
		}
		if flags["purge"] == "1" {
			rv = append(rv, "acl")
		}
		rest = append(rest, schema.KV{Key: "remove-vanished", Value: strings.Join(rv, ";")})
	}
	if e, ok := flags["enable-new"]; ok {
		rest = append(rest, schema.KV{Key: "enable-new", Value: e})
	}
	params["sync-defaults-options"] = printProps(nil, nil, rest)
}

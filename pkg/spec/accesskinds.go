package spec

import (
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The facts of the access and cluster-settings kinds of issue 21 (Role,
// Group, Realm, RealmSyncJob, ClusterOptions, MetricServer): what their
// rows in kinds.go point at.

// Secret update policies (SecretKeys.secretUpdate).
const (
	SecretOnCreate = "onCreate"
	SecretAlways   = "always"
)

// SecretKeys are the own keys of a kind with a write-only secret (a
// realm's bind password, a metric server's token).
type SecretKeys struct {
	SecretUpdate string `json:"secretUpdate,omitempty" doc:"When the write-only secret (an LDAP or AD realm's bind password, a metric server's token) is sent: onCreate (default) sends it when the object is made and never again, as PVE never shows it back to compare; always sends it on every apply (the plan then always shows an update), for one apply after the secret's source changed. See docs/decisions.md."`
}

// Secrets returns r's secret keys (the zero value when it sets none).
func Secrets(r *Resource) *SecretKeys {
	return keysOr[SecretKeys](r)
}

// checkSecretUpdate accepts the two policies only.
func checkSecretUpdate(r *Resource, report func(key, format string, args ...any)) {
	switch v := Secrets(r).SecretUpdate; v {
	case "", SecretOnCreate, SecretAlways:
	default:
		report("secretUpdate", "spec.secretUpdate %q: want %s or %s%s", v, SecretOnCreate, SecretAlways, didYouMean(v, []string{SecretOnCreate, SecretAlways}))
	}
}

// pveRoleNamespace is PVE's reserved role prefix (pve-access-control
// API2/Role.pm create_role: "cannot use role ID starting with the
// (case-insensitive) 'PVE' namespace").
var pveRoleNamespace = lazyre.New(`(?i)^pve`)

// checkRole refuses what PVE's create_role refuses: a role id in PVE's
// namespace, and a privilege PVE does not know (add_role_privs: "invalid
// privilege").
func checkRole(r *Resource, report func(key, format string, args ...any)) {
	if id := r.Params.Get("roleid"); pveRoleNamespace.MatchString(id) {
		report("roleid", "role %q: PVE reserves role ids starting with PVE (any case) for its built-in roles; give the role another name", id)
	}
	for _, p := range schema.SplitList(r.Params.Get("privs")) {
		if !acl.ValidPrivilege(p) {
			report("privs", "privs: %q is not a PVE privilege (PVE refuses it: \"invalid privilege '%s'\")%s", p, p, didYouMean(p, acl.Privileges()))
		}
	}
}

// secretRealmTypes are the realm types with a bind password (LDAP.pm,
// AD.pm); openid has a client-key instead.
var realmSecret = map[string]string{"ldap": "password", "ad": "password", "openid": "client-key"}

// checkRealm refuses the built-in realms, which PVE neither creates nor
// lets a second realm take the name of (Domains.pm create: "unable to use
// reserved name", "unable to create builtin type"), and a secret on a
// type that has none (PVE ignores a password there with a warning).
func checkRealm(r *Resource, report func(key, format string, args ...any)) {
	id, typ := r.Params.Get("realm"), r.Params.Get("type")
	switch {
	case id == "pam" || id == "pve":
		report("realm", "realm %q is built in: PVE has it on every installation and refuses to create or change its type (manage its comment or default by hand)", id)
	case typ == "pam" || typ == "pve":
		report("type", "type %q is a built-in realm type: PVE creates no realm of it; use ldap, ad or openid", typ)
	}
	for _, k := range []string{"password", "client-key"} {
		if _, set := r.Params.Lookup(k); set && typ != "" && realmSecret[typ] != k {
			report(k, "%s: a realm of type %s has no %s (ldap and ad take password, openid takes client-key)", k, typ, k)
		}
	}
	checkSecretUpdate(r, report)
}

// clusterOptionsIdentity: one ClusterOptions per connection.
func clusterOptionsIdentity(r *Resource) []identity {
	return []identity{{ns: r.Kind, key: "the cluster's options", what: "kind"}}
}

// realmOfUser is the realm part of a user id ("alice@corp" → corp).
func realmOfUser(param string) func(r *Resource) []refValue {
	return func(r *Resource) []refValue {
		if _, realm, ok := strings.Cut(r.Params.Get(param), "@"); ok && realm != "" {
			return []refValue{{param, realm}}
		}
		return nil
	}
}

// realmParams are the parameters of a realm's create call that a spec may
// write: all but check-connection, which connects to the directory (an
// action, not a setting).
func realmParams() []string {
	m, ok := schema.Default().Lookup("POST", "/access/domains")
	if !ok {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.Params)) {
		if name != "check-connection" {
			out = append(out, name)
		}
	}
	return out
}

// checkRealmSync requires what the job plugin's options() require beyond
// the schema (pve-access-control src/PVE/Jobs/RealmSync.pm: realm and
// scope; check_config refuses a create without them).
func checkRealmSync(r *Resource, report func(key, format string, args ...any)) {
	if r.State == Absent {
		return
	}
	if written := r.KeyPos.Has("realm"); !written && r.Params.Get("realm") == "" {
		report("realm", "spec.realm is required: the LDAP or AD realm the job syncs (PVE refuses a job without it)")
	}
	if written := r.KeyPos.Has("scope"); !written && r.Params.Get("scope") == "" {
		report("scope", "spec.scope is required: users, groups or both (PVE refuses a job without it)")
	}
}

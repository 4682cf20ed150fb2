package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// The access kinds' facts (users, API tokens, ACL grants): what their rows
// in kinds.go point at.

// passwordRefusal says why a user's password is not a spec key.
const passwordRefusal = "pvectl sets no passwords: PVE never shows a password back, so pvectl could " +
	"not tell whether it changed (it would be sent on every apply, or never again), and it would sit " +
	"in plain text in the spec; set it once by hand (pveum passwd USER), or give automation an APIToken"

// tokenIdentities identifies a token by its user and token id, in a
// namespace of its own.
func tokenIdentities(r *Resource) []identity {
	if ref := tokenRef(r); ref != "" {
		return []identity{{ns: "token", key: fmt.Sprintf("token %q", ref), what: "tokenid"}}
	}
	return nil
}

// tokenRef is how ACLs name a token: "user@realm!tokenid".
func tokenRef(r *Resource) string {
	u, t := r.Params.Get("userid"), r.Params.Get("tokenid")
	if u == "" || t == "" {
		return ""
	}
	return u + "!" + t
}

// checkToken requires the user and makes secretFile absolute, relative to
// the file that writes it (stdin: the working directory); a path that
// cannot hold a file is refused here rather than after PVE made a secret
// that would then have nowhere to go.
func checkToken(r *Resource, report func(key, format string, args ...any)) {
	k := Token(r)
	if k.SecretFile == "" {
		return
	}
	path := k.SecretFile
	if !filepath.IsAbs(path) {
		base := "."
		if f := r.KeyPos.File("secretFile"); f != "" && f != stdinName {
			base = filepath.Dir(f)
		}
		path = filepath.Join(base, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		report("secretFile", "spec.secretFile %q: %v", k.SecretFile, err)
		return
	}
	if fi, err := os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
		report("secretFile", "spec.secretFile %q is not a regular file (%s): the token's secret cannot be written there", k.SecretFile, fi.Mode().Type())
		return
	}
	// The nearest existing ancestor must be a directory.
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				report("secretFile", "spec.secretFile %q: %s is not a directory", k.SecretFile, dir)
				return
			}
			break
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	k.SecretFile = abs
}

// aclPrincipals are the parameters of PUT /access/acl naming whom a role
// is granted to, and the type GET /access/acl shows for each.
var aclPrincipals = []struct{ param, typ string }{{"users", "user"}, {"groups", "group"}, {"tokens", "token"}}

// ACLGrant is the one grant an ACL resource makes: the role, the path and
// the principal (its type as GET /access/acl shows it: user, group or
// token). ok is false when the spec does not say it unambiguously (Load
// refuses such a resource).
func ACLGrant(r *Resource) (path, typ, ugid, role string, ok bool) {
	path, ok = acl.NormalizePath(r.Params.Get("path"))
	if !ok {
		return "", "", "", "", false
	}
	n := 0
	for _, p := range aclPrincipals {
		if v, set := r.Params.Lookup(p.param); set {
			n++
			typ, ugid = p.typ, v
		}
	}
	role = r.Params.Get("roles")
	if n != 1 || len(schema.SplitList(ugid)) != 1 || len(schema.SplitList(role)) != 1 {
		return "", "", "", "", false
	}
	return path, typ, ugid, role, true
}

// aclIdentities identifies a grant by what it grants: PVE keeps an ACL
// entry per path, principal and role, and nothing else names it.
func aclIdentities(r *Resource) []identity {
	path, typ, ugid, role, ok := ACLGrant(r)
	if !ok {
		return nil
	}
	return []identity{{ns: "acl", key: fmt.Sprintf("grant of role %s to %s %s on %s", role, typ, ugid, path), what: "roles"}}
}

// tokenUser references the user of a token an ACL names.
func tokenUser(r *Resource) []refValue {
	if u, _, ok := strings.Cut(r.Params.Get("tokens"), "!"); ok && u != "" {
		return []refValue{{"tokens", u}}
	}
	return nil
}

// aclPathObject references the object an ACL path names below prefix
// ("/pool/lab" names the pool lab, "/pool/lab/dev" the nested pool
// lab/dev; "/vms/100" the guest 100).
func aclPathObject(prefix string) func(r *Resource) []refValue {
	return func(r *Resource) []refValue {
		path, ok := acl.NormalizePath(r.Params.Get("path"))
		if !ok {
			return nil
		}
		if id, ok := strings.CutPrefix(path, prefix); ok && id != "" {
			return []refValue{{"path", id}}
		}
		return nil
	}
}

// checkACL makes sure the resource is one grant: a path PVE accepts, one
// principal, one role. The path is normalised as PVE stores it, so that it
// compares with what PVE lists.
func checkACL(r *Resource, report func(key, format string, args ...any)) {
	// A key written but missing from Params was reported already (a bad
	// value, an unset ${VAR}).
	written := func(key string) bool { return r.KeyPos.Has(key) && !contains(r.Remove, key) }
	raw, set := r.Params.Lookup("path")
	switch path, ok := acl.NormalizePath(raw); {
	case !written("path"), !set: // missing: requiredProblems says so
	case !ok || !acl.CheckPath(path):
		report("path", "spec.path %q is not a path PVE accepts for an ACL (/, /access/groups/G, /nodes/N, /pool/P, /storage/S, /vms/ID, /sdn/…, /mapping/…)", raw)
	default:
		r.Params.Set("path", path)
	}
	var named []string
	for _, p := range aclPrincipals {
		if !written(p.param) {
			continue
		}
		named = append(named, p.param)
		if v, ok := r.Params.Lookup(p.param); !ok {
			continue
		} else if n := len(schema.SplitList(v)); n != 1 {
			report(p.param, "spec.%s names %d %s: an ACL resource is one grant; write one ACL document for each", p.param, n, p.param)
		}
	}
	switch len(named) {
	case 0:
		report("", "set one of spec.users, spec.groups or spec.tokens: whom the role is granted to")
	case 1:
	default:
		report(named[1], "spec.%s and spec.%s are both set: an ACL resource grants to one principal; write one ACL document for each", named[0], named[1])
	}
	switch roles, ok := r.Params.Lookup("roles"); {
	case !written("roles"), !ok: // missing: requiredProblems says so
	case len(schema.SplitList(roles)) != 1:
		report("roles", "spec.roles names %d roles: an ACL resource grants one role; write one ACL document for each", len(schema.SplitList(roles)))
	}
}

// Package secret decides, in one place, which parameter and field names
// carry secrets. Spec diagnostics, plan diffs, plan files and the client's
// --debug traces all ask Key, so a name is either shown everywhere or
// nowhere.
package secret

import "strings"

// Shown is what a diff shows instead of a secret value.
const Shown = "(sensitive)"

// secret names: PVE parameters and response members that hold a password,
// a key or a token value, and pvectl's own keys that do.
var secret = map[string]bool{
	"cipassword":          true, // qemu: cloud-init password (PVE answers it masked)
	"password":            true, // lxc root password, cifs/pbs storage, users (refused by pvectl)
	"encryption-key":      true, // pbs storage client-side encryption key
	"keyring":             true, // rbd/cephfs storage keyring
	"keys":                true, // users: two-factor keys
	"value":               true, // the secret of a token, answered once by its create call
	"ticket":              true, // /access/ticket
	"csrfpreventiontoken": true,
	"tokensecret":         true, // pvectl Connection
	"sshprivatekey":       true, // pvectl Connection and guests
	"sshpassphrase":       true,
	"key":                 true, // a private key PEM (custom certificates)
	"client-key":          true, // openid realm: the client's secret
	"token":               true, // influxdb metric server: the API token
	"lock-token":          true, // SDN's cluster lock (PVE 9): whoever has it may write SDN
}

// public names look secret (pass, secret, key, token, value) but hold
// nothing that must be hidden.
var public = map[string]bool{
	"sshkeys":           true, // public keys, URL-encoded
	"ssh-public-keys":   true,
	"keyboard":          true,
	"keyctl":            true, // lxc feature flag
	"pre-enrolled-keys": true, // efidisk flag
	"master-pubkey":     true, // pbs: a public key
	"tokenid":           true,
	"tokens":            true, // ACL: token ids
	"full-tokenid":      true,
	"secretfile":        true, // pvectl APIToken: a path, not the secret
	"fingerprint":       true, // TLS certificate fingerprint
}

// Key reports whether values of the parameter, spec key or JSON member
// name must never be shown. A dotted path ("efidisk0.pre-enrolled-keys",
// "tokenSecret") is judged by its top-level name first, then its last
// part; names neither list knows are secret when they contain password,
// secret or private, so an unexpected field of a PVE answer stays hidden.
func Key(name string) bool {
	if top, rest, ok := strings.Cut(name, "."); ok {
		return Key(top) || Key(rest[strings.LastIndexByte(rest, '.')+1:])
	}
	n := strings.ToLower(name)
	if secret[n] {
		return true
	}
	if public[n] {
		return false
	}
	return strings.Contains(n, "password") || strings.Contains(n, "secret") || strings.Contains(n, "private") ||
		strings.Contains(n, "passphrase")
}

// Classified reports whether name is in one of the explicit lists, for
// the test that every secret-looking PVE parameter has been decided on.
func Classified(name string) bool {
	n := strings.ToLower(name)
	return secret[n] || public[n]
}

// Masked reports whether s is PVE's answer for a stored secret it will not
// show ("**********").
func Masked(s string) bool { return s != "" && strings.Trim(s, "*") == "" }

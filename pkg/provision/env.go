package provision

import (
	"maps"
	"slices"
	"strings"
)

// EnvPass names more variables (comma-separated) that ansible-playbook
// gets from pvectl's environment, beyond the allow-list of childEnv.
const EnvPass = "PVECTL_PROVISION_ENV"

// baseEnv are the variables a tool needs to run at all, passed when set.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR"}

// childEnv is ansible-playbook's environment: built from nothing, never
// inherited. From base (pvectl's environment) it takes the allow-list
// (baseEnv, LC_*, the ANSIBLE_* settings the user made, and the names
// listed in PVECTL_PROVISION_ENV); set (pvectl's own settings, such as
// SSH_AUTH_SOCK of its agent) wins over them. pvectl's configuration
// (PROXMOX_*: the token secret, the private key) is never passed, nor is
// any variable whose value is one of secrets (what the Connection and the
// spec hold), under whatever name.
func childEnv(base []string, secrets []string, set map[string]string) []string {
	pass := map[string]bool{}
	for _, n := range baseEnv {
		pass[n] = true
	}
	for _, kv := range base {
		if k, v, _ := strings.Cut(kv, "="); k == EnvPass {
			for _, n := range strings.Split(v, ",") {
				pass[strings.TrimSpace(n)] = true
			}
		}
	}
	var env []string
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !passed(k, pass) || set[k] != "" || holdsSecret(v, secrets) {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] != "" {
			env = append(env, k+"="+set[k])
		}
	}
	return env
}

func passed(name string, pass map[string]bool) bool {
	switch {
	case strings.HasPrefix(name, "PROXMOX_"), name == EnvAgent:
		return false
	case pass[name], strings.HasPrefix(name, "LC_"), strings.HasPrefix(name, "ANSIBLE_"):
		return true
	}
	return false
}

// holdsSecret: v is, or contains, one of secrets (their short values,
// which would match by chance, excepted).
func holdsSecret(v string, secrets []string) bool {
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= 4 && strings.Contains(v, s) {
			return true
		}
	}
	return false
}

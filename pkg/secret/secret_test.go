package secret

import (
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// TestCreateParamsClassified walks every parameter (and property-string
// sub-key) of the calls that create or change a design kind, and requires
// each name that looks secret to be decided on explicitly: a new PVE
// parameter such as "encryption-key" must not slip into plan files because
// nobody thought about it.
func TestCreateParamsClassified(t *testing.T) {
	calls := []string{
		"POST /nodes/{node}/qemu", "POST /nodes/{node}/qemu/{vmid}/config", "POST /nodes/{node}/qemu/{vmid}/clone",
		"POST /nodes/{node}/lxc", "PUT /nodes/{node}/lxc/{vmid}/config",
		"POST /storage", "PUT /storage/{storage}",
		"POST /pools", "PUT /pools",
		"POST /nodes/{node}/storage/{storage}/download-url", "POST /nodes/{node}/storage/{storage}/upload",
		"POST /nodes/{node}/network", "PUT /nodes/{node}/network/{iface}", "PUT /nodes/{node}/dns",
		"POST /access/users", "PUT /access/users/{userid}",
		"POST /access/users/{userid}/token/{tokenid}", "PUT /access/users/{userid}/token/{tokenid}",
		"PUT /access/acl",
	}
	looks := regexp.MustCompile(`(?i)pass|secret|key|token|value`)
	tab := schema.Default()
	for _, call := range calls {
		verb, path, _ := cut(call)
		m, ok := tab.Lookup(verb, path)
		if !ok {
			t.Errorf("%s: not in the schema", call)
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(m.Params)) {
			p := m.Params[name]
			if looks.MatchString(name) && !Classified(trimFamily(name)) {
				t.Errorf("%s: parameter %q looks secret but is not classified in secret.go", call, name)
			}
			for _, sub := range slices.Sorted(maps.Keys(p.SubKeys())) {
				if looks.MatchString(sub) && !Classified(sub) {
					t.Errorf("%s: sub-key %s.%s looks secret but is not classified in secret.go", call, name, sub)
				}
			}
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func trimFamily(name string) string {
	if n := len(name); n > 3 && name[n-3:] == "[n]" {
		return name[:n-3]
	}
	return name
}

func TestKey(t *testing.T) {
	tests := map[string]bool{
		"cipassword": true, "password": true, "tokenSecret": true, "sshPrivateKey": true, "value": true,
		"encryption-key": true, "keyring": true, "CSRFPreventionToken": true, "some-new-password-field": true,
		"sshkeys": false, "ssh-public-keys": false, "tokenid": false, "tokens": false, "secretFile": false,
		"memory": false, "efidisk0.pre-enrolled-keys": false, "net0.tag": false, "storage.password": true,
	}
	for name, want := range tests {
		if got := Key(name); got != want {
			t.Errorf("Key(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMasked(t *testing.T) {
	for s, want := range map[string]bool{"**********": true, "": false, "a*": false, "*": true} {
		if got := Masked(s); got != want {
			t.Errorf("Masked(%q) = %v, want %v", s, got, want)
		}
	}
}

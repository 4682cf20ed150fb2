// Package acl is PVE's privilege model as pve-access-control defines it:
// the privileges, the built-in roles made of them, and the syntax of ACL
// paths. The simulator checks requests with it; pvectl names roles with it
// when it tells a user what to grant.
package acl

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// privGroup is one category of pve-access-control AccessControl.pm
// ($privgroups): privileges only root should have, admin, user and audit ones.
type privGroup struct{ root, admin, user, audit []string }

// privGroups is AccessControl.pm's $privgroups, by category.
func privGroups() map[string]privGroup {
	return map[string]privGroup{
		"VM": {
			admin: []string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
				"VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.GuestAgent.Unrestricted",
				"VM.Migrate", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback"},
			user: []string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup",
				"VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.PowerMgmt"},
			audit: []string{"VM.Audit", "VM.GuestAgent.Audit"},
		},
		"Sys": {
			root:  []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"},
			admin: []string{"Sys.Console", "Sys.Syslog"},
			audit: []string{"Sys.Audit"},
		},
		"Datastore": {
			admin: []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
			user:  []string{"Datastore.AllocateSpace"},
			audit: []string{"Datastore.Audit"},
		},
		"SDN": {
			admin: []string{"SDN.Allocate", "SDN.Audit"},
			user:  []string{"SDN.Use"},
			audit: []string{"SDN.Audit"},
		},
		"User": {
			root:  []string{"Realm.Allocate"},
			admin: []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"},
		},
		"Pool": {
			admin: []string{"Pool.Allocate"},
			user:  []string{"Pool.Audit"},
			audit: []string{"Pool.Audit"},
		},
		"Mapping": {
			admin: []string{"Mapping.Modify"},
			user:  []string{"Mapping.Use"},
			audit: []string{"Mapping.Audit"},
		},
	}
}

// Administrator and NoAccess are the roles every privilege set starts from.
const (
	Administrator = "Administrator"
	NoAccess      = "NoAccess"
)

// BuiltinRoles returns PVE's special (built-in) roles and their privileges,
// made the way AccessControl.pm's create_roles makes them: PVE<cat>Admin
// holds a category's admin, user and audit privileges, PVE<cat>User its
// user and audit ones (for categories that have user privileges),
// PVEAuditor every audit privilege, PVEAdmin every admin, user and audit
// privilege but Mapping.Modify, Administrator everything (root-only
// privileges and Permissions.Modify included), NoAccess nothing, and
// PVETemplateUser VM.Clone and VM.Audit. The caller owns the result.
func BuiltinRoles() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for r, privs := range builtin() {
		out[r] = maps.Clone(privs)
	}
	return out
}

// builtin is the role table, made once and shared read-only.
var builtin = sync.OnceValue(makeRoles)

func makeRoles() map[string]map[string]bool {
	roles := map[string]map[string]bool{NoAccess: {}, Administrator: {"Permissions.Modify": true}}
	add := func(role string, privs ...string) {
		if roles[role] == nil {
			roles[role] = map[string]bool{}
		}
		for _, p := range privs {
			roles[role][p] = true
		}
	}
	for cat, g := range privGroups() {
		add(Administrator, g.root...)
		add(Administrator, g.admin...)
		add(Administrator, g.user...)
		add(Administrator, g.audit...)
		for _, role := range []string{"PVE" + cat + "Admin", "PVEAdmin"} {
			add(role, g.admin...)
			add(role, g.user...)
			add(role, g.audit...)
		}
		if len(g.user) > 0 {
			add("PVE"+cat+"User", g.user...)
			add("PVE"+cat+"User", g.audit...)
		}
		add("PVEAuditor", g.audit...)
	}
	delete(roles["PVEAdmin"], "Mapping.Modify")
	roles["PVETemplateUser"] = map[string]bool{"VM.Clone": true, "VM.Audit": true}
	return roles
}

// Privileges lists every privilege PVE knows, sorted.
func Privileges() []string {
	return slices.Sorted(maps.Keys(builtin()[Administrator]))
}

// ValidPrivilege reports whether p is a privilege PVE knows (verify_privname).
func ValidPrivilege(p string) bool { return builtin()[Administrator][p] }

// IsBuiltin reports whether role is one of PVE's special roles, which
// cannot be created, changed or deleted (role_is_special).
func IsBuiltin(role string) bool {
	_, ok := builtin()[role]
	return ok
}

// RoleFor names the built-in role to suggest for privs: PVEAuditor when
// they are all audit privileges, else the built-in role with the fewest
// privileges that holds them all (Administrator for root-only ones).
func RoleFor(privs ...string) string {
	roles := builtin()
	holds := func(role string) bool {
		for _, p := range privs {
			if !roles[role][p] {
				return false
			}
		}
		return true
	}
	if holds("PVEAuditor") {
		return "PVEAuditor"
	}
	best := Administrator
	for _, r := range slices.Sorted(maps.Keys(roles)) {
		if r == Administrator || r == "PVETemplateUser" || !holds(r) {
			continue
		}
		if len(roles[r]) < len(roles[best]) {
			best = r
		}
	}
	return best
}

var (
	// checkPathRe is AccessControl.pm's check_path: the paths an ACL may name.
	checkPathRe = lazyre.New(`^(?:/|/access|/access/groups|/access/groups/[[:alnum:]._-]+|/access/realm|/access/realm/[[:alnum:]._-]+` +
		`|/nodes|/nodes/[[:alnum:]._-]+|/pool|/pool/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,2}` +
		`|/sdn|/sdn/controllers|/sdn/controllers/[[:alnum:]_-]+|/sdn/dns|/sdn/dns/[[:alnum:]]+` +
		`|/sdn/fabrics|/sdn/fabrics/[[:alnum:]]+|/sdn/ipams|/sdn/ipams/[[:alnum:]]+` +
		`|/sdn/prefix-lists|/sdn/prefix-lists/[[:alnum:]]+|/sdn/route-maps|/sdn/route-maps/[[:alnum:]]+` +
		`|/sdn/zones|/sdn/zones/[[:alnum:]._-]+|/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+` +
		`|/sdn/zones/[[:alnum:]._-]+/[[:alnum:]._-]+/[1-9][0-9]{0,3}` +
		`|/storage|/storage/[[:alnum:]._-]+|/vms|/vms/[1-9][0-9]{2,}` +
		`|/mapping|/mapping/[[:alnum:]._-]+|/mapping/[[:alnum:]._-]+/[[:alnum:]._-]+)$`)
	normalizedRe = lazyre.New(`^[[:alnum:]._/-]+$`)
	slashesRe    = lazyre.New(`/+`)
)

// CheckPath reports whether path is one an ACL may be set on
// (AccessControl.pm check_path).
func CheckPath(path string) bool { return checkPathRe.MatchString(path) }

// NormalizePath is AccessControl.pm's normalize_path: repeated slashes
// folded, no trailing slash, a leading one added; false for an empty path
// or one with other characters than letters, digits, ".", "-", "_" and "/".
func NormalizePath(path string) (string, bool) {
	if path == "" {
		return "", false
	}
	path = slashesRe.ReplaceAllString(path, "/")
	path = strings.TrimSuffix(path, "/")
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if !normalizedRe.MatchString(path) {
		return "", false
	}
	return path, true
}

package planner

import (
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// roleKind manages Role: a custom role of user.cfg (pve-access-control
// src/PVE/API2/Role.pm). GET /access/roles lists every role with its
// privileges, anyone may read it; an update's privs replace the role's
// (no append), so the spec's privs are the role's full set, compared as
// a set. PVE's built-in roles (special) are neither imported nor
// writable (spec refuses the PVE namespace).
var roleKind = &cfgKind{
	kind: spec.KindRole, noun: "role", idParam: "roleid",
	listPath: "/access/roles", listID: "roleid",
	itemPath: "/access/roles/{id}", createPath: "/access/roles",
	dropped:   []string{"special"},
	sets:      []string{"privs"},
	always:    []string{"privs"}, // a PUT without privs empties the role
	noDelete:  true,              // no delete parameter: privs: null sends it empty
	isBuiltin: func(row pve.Config) bool { return row["special"] == "1" },
	// GET /access/roles: user => 'all'.
	readNeed: func(string) []permNeed { return nil },
	// create_role, update_role, delete_role: Sys.Modify on /access.
	changeNeed: func(c *Change, id string) []permNeed {
		return []permNeed{need("/access", "to "+c.Action.String()+" role "+id, "Sys.Modify")}
	},
}

// groupKind manages Group: a group of user.cfg with its comment
// (pve-access-control src/PVE/API2/Group.pm). Membership is the users'
// own groups key (User.groups), not the group's. PVE has no delete
// parameter for groups: update_group writes a comment that is defined,
// so an empty one clears it.
var groupKind = &cfgKind{
	kind: spec.KindGroup, noun: "group", idParam: "groupid",
	listPath: "/access/groups", listID: "groupid",
	itemPath: "/access/groups/{id}", createPath: "/access/groups",
	dropped:  []string{"users"},
	noDelete: true,
	// index lists only the groups the caller may see.
	readNeed: func(id string) []permNeed {
		return []permNeed{needAny("/access/groups", "to see the groups (PVE lists only those a token may audit)", "Sys.Audit", "Group.Allocate", "User.Modify")}
	},
	// create_group, update_group, delete_group: Group.Allocate on /access/groups.
	changeNeed: func(c *Change, id string) []permNeed {
		return []permNeed{need("/access/groups", "to "+c.Action.String()+" group "+id, "Group.Allocate")}
	},
}

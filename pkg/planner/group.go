package planner

import "github.com/pvectl/pvectl/pkg/spec"

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

package planner

import (
	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
	"github.com/pvectl/pvectl/pkg/spec"
)

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
	// index (open to all) lists only the groups on whose path
	// (/access/groups/ID) the caller holds one of these (Group.pm index).
	listNeeds: func(id string) []engine.PermNeed {
		path := "/access/groups"
		if id != "" {
			path += "/" + id
		}
		return []engine.PermNeed{engine.NeedAny(path, "to see the group (PVE lists only those a token may audit)", "Sys.Audit", "Group.Allocate", "User.Modify")}
	},
}

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
	isBuiltin: func(row *pve.Config) bool { return row.Get("special") == "1" },
}

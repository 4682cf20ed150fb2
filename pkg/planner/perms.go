package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
)

// The permission preflight. PVE answers an API token that lacks a
// privilege with a 403 on direct reads and writes, but its lists
// (/cluster/resources, /pools, a node's network, task lists) silently
// leave out what the token may not audit: an under-privileged token would
// see an empty cluster and plan to create everything again. So before it
// plans, the engine checks the token's effective permissions (read once
// per connection, GET /access/permissions) against what each kind says
// its reads and its changes' calls need (the `permissions` of those calls
// in PVE's API schema and the checks their handlers make), and refuses
// with the missing privilege, the path and what to grant.

// permNeed is one privilege check a kind's call makes.
type permNeed struct {
	path  string   // the ACL path checked
	privs []string // all of them are needed, or one with anyOf
	anyOf bool
	// or is another path where the same privileges do as well (a new
	// guest's pool).
	or string
	// why says what for: "to create the VM" (completes "needed …").
	why string
	// rootOnly: only root@pam may do it, which no API token is.
	rootOnly bool
	// alt are other needs any one of which does as well (Sys.Audit on
	// /access instead of the right to change a path's permissions).
	alt []permNeed
	// hint says what to do instead of a root-only setting ("" for the
	// general advice).
	hint string
}

func need(path, why string, privs ...string) permNeed {
	return permNeed{path: path, privs: privs, why: why}
}

func needAny(path, why string, privs ...string) permNeed {
	return permNeed{path: path, privs: privs, anyOf: true, why: why}
}

// held reports whether the connection's token holds n.
func (lc *liveConn) held(n permNeed) bool {
	if n.rootOnly {
		return false
	}
	has := func(path string) bool {
		if path == "" {
			return false
		}
		for _, p := range n.privs {
			ok := lc.perms.Has(path, p)
			if n.anyOf && ok {
				return true
			}
			if !n.anyOf && !ok {
				return false
			}
		}
		return !n.anyOf
	}
	if has(n.path) || has(n.or) {
		return true
	}
	for _, a := range n.alt {
		if lc.held(a) {
			return true
		}
	}
	return false
}

// checkPerms reports every need of addr the token does not hold, one
// error each, saying what to grant.
func (lc *liveConn) checkPerms(addr string, needs []permNeed) error {
	if lc == nil || lc.perms == nil {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, n := range needs {
		if lc.held(n) {
			continue
		}
		msg := lc.permMessage(n)
		if !seen[msg] {
			seen[msg] = true
			errs = append(errs, fmt.Errorf("%s: %s", addr, msg))
		}
	}
	return errors.Join(errs...)
}

func (lc *liveConn) permMessage(n permNeed) string {
	token := lc.client.TokenID()
	if n.rootOnly {
		what := "drop it from the spec or set it by hand as root@pam"
		if n.hint != "" {
			what = n.hint
		}
		return fmt.Sprintf("only root@pam may %s, and no API token (%s neither) is root@pam, so PVE will refuse it: %s", n.why, token, what)
	}
	where := n.path
	if n.or != "" {
		where += " (or " + n.or + ")"
	}
	for _, a := range n.alt {
		where += fmt.Sprintf(" (or %s on %s)", privList(a), a.path)
	}
	role := acl.RoleFor(n.privs...)
	if n.anyOf {
		role = acl.RoleFor(n.privs[0])
	}
	user, _, _ := strings.Cut(token, "!")
	return fmt.Sprintf("the API token %s lacks %s on %s, needed %s. Grant it there, e.g. the role %s: "+
		"pveum acl modify %s --roles %s --tokens '%s' (a privilege-separated token holds only what its user holds too: add --users %s)",
		token, privList(n), where, n.why, role, n.path, role, token, user)
}

// privList names a need's privileges: "A and B", or "A or B" for any of them.
func privList(n permNeed) string {
	if n.anyOf {
		return strings.Join(n.privs, " or ")
	}
	return strings.Join(n.privs, " and ")
}

package engine

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
type PermNeed struct {
	Path  string   // the ACL path checked
	Privs []string // all of them are needed, or one with anyOf
	AnyOf bool
	// or is another path where the same privileges do as well (a new
	// guest's pool).
	Or string
	// why says what for: "to create the VM" (completes "needed …").
	Why string
	// rootOnly: only root@pam may do it, which no API token is.
	RootOnly bool
	// alt are other needs any one of which does as well (Sys.Audit on
	// /access instead of the right to change a path's permissions).
	Alt []PermNeed
	// hint says what to do instead of a root-only setting ("" for the
	// general advice).
	Hint string
}

func NeedPriv(path, why string, privs ...string) PermNeed {
	return PermNeed{Path: path, Privs: privs, Why: why}
}

func NeedAny(path, why string, privs ...string) PermNeed {
	return PermNeed{Path: path, Privs: privs, AnyOf: true, Why: why}
}

// Held reports whether the connection's token holds n.
func (lc *LiveConn) Held(n PermNeed) bool {
	if n.RootOnly {
		return false
	}
	has := func(path string) bool {
		if path == "" {
			return false
		}
		for _, p := range n.Privs {
			ok := lc.Perms.Has(path, p)
			if n.AnyOf && ok {
				return true
			}
			if !n.AnyOf && !ok {
				return false
			}
		}
		return !n.AnyOf
	}
	if has(n.Path) || has(n.Or) {
		return true
	}
	for _, a := range n.Alt {
		if lc.Held(a) {
			return true
		}
	}
	return false
}

// checkPerms reports every need of addr the token does not hold, one
// error each, saying what to grant.
func (lc *LiveConn) checkPerms(addr string, needs []PermNeed) error {
	if lc == nil || lc.Perms == nil {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, n := range needs {
		if lc.Held(n) {
			continue
		}
		msg := lc.PermMessage(n)
		if !seen[msg] {
			seen[msg] = true
			errs = append(errs, fmt.Errorf("%s: %s", addr, msg))
		}
	}
	return errors.Join(errs...)
}

func (lc *LiveConn) PermMessage(n PermNeed) string {
	token := lc.Client.TokenID()
	if n.RootOnly {
		what := "drop it from the spec or set it by hand as root@pam"
		if n.Hint != "" {
			what = n.Hint
		}
		return fmt.Sprintf("only root@pam may %s, and no API token (%s neither) is root@pam, so PVE will refuse it: %s", n.Why, token, what)
	}
	where := n.Path
	if n.Or != "" {
		where += " (or " + n.Or + ")"
	}
	for _, a := range n.Alt {
		where += fmt.Sprintf(" (or %s on %s)", PrivList(a), a.Path)
	}
	role := acl.RoleFor(n.Privs...)
	if n.AnyOf {
		role = acl.RoleFor(n.Privs[0])
	}
	user, _, _ := strings.Cut(token, "!")
	return fmt.Sprintf("the API token %s lacks %s on %s, needed %s. Grant it there, e.g. the role %s: "+
		"pveum acl modify %s --roles %s --tokens '%s' (a privilege-separated token holds only what its user holds too: add --users %s)",
		token, PrivList(n), where, n.Why, role, n.Path, role, token, user)
}

// PrivList names a need's privileges: "A and B", or "A or B" for any of them.
func PrivList(n PermNeed) string {
	if n.AnyOf {
		return strings.Join(n.Privs, " or ")
	}
	return strings.Join(n.Privs, " and ")
}

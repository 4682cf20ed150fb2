package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pvectl/pvectl/pkg/pve/acl"
)

// Review plans. A pull request's plan is often made with a read-only token
// (PVEAuditor): it can read everything a plan reads but holds none of the
// privileges the changes' calls check. With Options.ReviewPrivileges the
// plan then carries what the token lacks as warnings, grouped into the
// fewest grants that fix them, instead of failing; apply always checks the
// changes' privileges before any write (CheckPrivileges for a saved plan,
// the strict plan for `apply -f`). Reads are never relaxed: a plan whose
// reads are refused cannot see what it plans.

// Need is one privilege check a planned change's calls make, as the plan
// (and a saved plan file) carries it so that `apply FILE` checks the
// token that applies.
type Need struct {
	Path     string   `json:"path"`
	Or       string   `json:"or,omitempty"`
	Privs    []string `json:"privs,omitempty"`
	AnyOf    bool     `json:"anyOf,omitempty"`
	RootOnly bool     `json:"rootOnly,omitempty"`
	Why      string   `json:"why,omitempty"`
	Alt      []Need   `json:"alt,omitempty"`
}

func exportNeed(n PermNeed) Need {
	out := Need{Path: n.Path, Or: n.Or, Privs: n.Privs, AnyOf: n.AnyOf, RootOnly: n.RootOnly, Why: n.Why}
	for _, a := range n.Alt {
		out.Alt = append(out.Alt, exportNeed(a))
	}
	return out
}

func (n Need) Internal() PermNeed {
	out := PermNeed{Path: n.Path, Or: n.Or, Privs: n.Privs, AnyOf: n.AnyOf, RootOnly: n.RootOnly, Why: n.Why}
	for _, a := range n.Alt {
		out.Alt = append(out.Alt, a.Internal())
	}
	return out
}

// PrivilegeWarning is a privilege a planned change needs that the plan's
// token lacks (review mode).
type PrivilegeWarning struct {
	Address string `json:"address"`
	Token   string `json:"token"`
	Need    Need   `json:"need"`
	// Message is what strict mode says: the privilege, the path, what to
	// grant.
	Message string `json:"message"`
}

// Grant is one ACL entry that fixes a group of warnings.
type Grant struct {
	Token string
	Path  string // where to grant it (a family of paths folded: /vms, not /vms/101)
	Role  string // the smallest built-in role holding every privilege
	Privs []string
	// Changes are the addresses that need it.
	Changes []string
	// RootOnly: no grant fixes it (only root@pam may); Message says why.
	RootOnly bool
	Message  string
}

// unheld are the needs of needs that lc's token does not hold.
func (lc *LiveConn) unheld(needs []PermNeed) []PermNeed {
	if lc == nil || lc.Perms == nil {
		return nil
	}
	var out []PermNeed
	for _, n := range needs {
		if !lc.Held(n) {
			out = append(out, n)
		}
	}
	return out
}

// grantPath is where one grant covers a family of paths: a guest's, a
// storage's or a node's own path folds into its family (propagated), a
// pool's stays (a pool grant is the narrow one users choose on purpose).
func grantPath(path string) string {
	for _, fam := range []string{"/vms/", "/storage/", "/nodes/", "/access/", "/sdn/zones/", "/mapping/pci/", "/mapping/usb/", "/mapping/dir/"} {
		if strings.HasPrefix(path, fam) {
			return strings.TrimSuffix(fam, "/")
		}
	}
	return path
}

// Grants folds warnings into the fewest grants: per token and path
// family, the union of the privileges, as the smallest built-in role that
// holds them all. Root-only needs come last, one each.
func Grants(ws []PrivilegeWarning) []Grant {
	byKey := map[string]*Grant{}
	var keys []string
	var rootOnly []Grant
	for _, w := range ws {
		if w.Need.RootOnly {
			rootOnly = append(rootOnly, Grant{Token: w.Token, Path: w.Need.Path, RootOnly: true, Message: w.Message, Changes: []string{w.Address}})
			continue
		}
		privs := w.Need.Privs
		if w.Need.AnyOf && len(privs) > 0 {
			privs = privs[:1] // one of them does: the first, as the strict message names it
		}
		key := w.Token + "\x00" + grantPath(w.Need.Path)
		g := byKey[key]
		if g == nil {
			g = &Grant{Token: w.Token, Path: grantPath(w.Need.Path)}
			byKey[key] = g
			keys = append(keys, key)
		}
		for _, p := range privs {
			if !slices.Contains(g.Privs, p) {
				g.Privs = append(g.Privs, p)
			}
		}
		if !slices.Contains(g.Changes, w.Address) {
			g.Changes = append(g.Changes, w.Address)
		}
	}
	sort.Strings(keys)
	out := make([]Grant, 0, len(keys)+len(rootOnly))
	for _, k := range keys {
		g := byKey[k]
		sort.Strings(g.Privs)
		g.Role = acl.RoleFor(g.Privs...)
		out = append(out, *g)
	}
	return append(out, rootOnly...)
}

// CheckPrivileges checks, before apply writes anything, that each
// connection's token holds every privilege the plan's changes need (the
// needs the plan recorded): a saved plan made with a read-only token, or
// by another token, is refused here rather than half-applied.
func CheckPrivileges(ctx context.Context, clients Clients, plan *Plan) error {
	byConn := map[string][]*Change{}
	for _, c := range plan.Changes {
		if c.Action == NoOp || c.Resource == nil || len(c.Needs) == 0 {
			continue
		}
		byConn[c.Resource.Connection] = append(byConn[c.Resource.Connection], c)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(byConn)) {
		cl, err := clients.Client(name)
		if err != nil {
			return err
		}
		perms, err := cl.Permissions(ctx)
		if err != nil {
			return err
		}
		lc := &LiveConn{Client: cl, Perms: perms}
		for _, c := range byConn[name] {
			needs := make([]PermNeed, len(c.Needs))
			for i, n := range c.Needs {
				needs[i] = n.Internal()
			}
			if err := lc.checkPerms(c.Address, needs); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the token lacks privileges the plan's changes need; nothing was changed:\n%w", errors.Join(errs...))
	}
	return nil
}

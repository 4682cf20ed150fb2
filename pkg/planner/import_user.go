package planner

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Users are imported with their settings (no password: PVE keeps it in
// its realm, and pvectl refuses it in specs). root@pam is PVE's
// built-in superuser, which nobody creates or deletes.

const builtinUser = "root@pam"

// importLists: the users with their tokens.
func (userKind) importLists(lc *liveConn, _ string) []listRead { return []listRead{usersRead(lc)} }

func (userKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	users, err := ic.lc.userList(ctx)
	if err != nil {
		return nil, err
	}
	var out []importItem
	for _, id := range slices.Sorted(maps.Keys(users)) {
		if id == builtinUser {
			continue
		}
		r := &spec.Resource{Kind: spec.KindUser, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{"userid": id})}
		out = append(out, importItem{r: r, ids: []string{id}})
	}
	return out, nil
}

// importPerms: GET /access/users lists only the users a token may audit
// (pve-access-control API2/User.pm index).
func (userKind) importPerms(string) []permNeed {
	return []permNeed{needAny("/access/groups", "to list the users (PVE lists only those a token may audit)", "User.Modify", "Sys.Audit")}
}

func (userKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	id := userID(r)
	d := &ImportedDoc{Kind: spec.KindUser, Name: id}
	d.Spec = ic.Fields(d, ic.method("POST", userCreatePath), lo.Config, "user_"+strings.ReplaceAll(id, "@", "_"), func(k string) bool {
		// What PUT sends to clear a setting is PVE's default.
		cleared, setting := userFields[k]
		return !setting || (cleared != "" && lo.Config.Get(k) == cleared)
	}, importdoc.KeepSub)
	return d, nil
}

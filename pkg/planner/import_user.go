package planner

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Users are imported with their settings (no password: PVE keeps it in
// its realm, and pvectl refuses it in specs). root@pam is PVE's
// built-in superuser, which nobody creates or deletes.

const builtinUser = "root@pam"

// ImportLists: the users with their tokens.
func (userKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{engine.UsersRead(lc)}
}

func (userKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	users, err := ic.Lc.UserList(ctx)
	if err != nil {
		return nil, err
	}
	var out []engine.ImportItem
	for _, id := range slices.Sorted(maps.Keys(users)) {
		if id == builtinUser {
			continue
		}
		r := &spec.Resource{Kind: spec.KindUser, Name: id, State: spec.Present, Params: spec.ParamsOf(map[string]string{"userid": id})}
		out = append(out, engine.ImportItem{R: r, Ids: []string{id}})
	}
	return out, nil
}

// ImportPerms: GET /access/users lists only the users a token may audit
// (pve-access-control API2/User.pm index).
func (userKind) ImportPerms(string) []engine.PermNeed {
	return []engine.PermNeed{engine.NeedAny("/access/groups", "to list the users (PVE lists only those a token may audit)", "User.Modify", "Sys.Audit")}
}

func (userKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	id := userID(r)
	d := &engine.ImportedDoc{Kind: spec.KindUser, Name: id}
	d.Spec = ic.Fields(d, ic.Method("POST", userCreatePath), lo.Config, "user_"+strings.ReplaceAll(id, "@", "_"), func(k string) bool {
		// What PUT sends to clear a setting is PVE's default.
		cleared, setting := userFields[k]
		return !setting || (cleared != "" && lo.Config.Get(k) == cleared)
	}, importdoc.KeepSub)
	return d, nil
}

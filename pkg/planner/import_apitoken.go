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

// API tokens are imported with their settings. Their secret exists once,
// in the answer of the call that made it: it is not in the document, and
// a create from the document makes a new one. The token this import runs
// as is left out (destroying the specs would cut pvectl off).

// ImportLists: the users with their tokens.
func (tokenKind) ImportLists(lc *engine.LiveConn, _ string) []engine.ListRead {
	return []engine.ListRead{engine.UsersRead(lc)}
}

func (tokenKind) Importable(ctx context.Context, ic *engine.ImportCtx, _ string) ([]engine.ImportItem, error) {
	users, err := ic.Lc.UserList(ctx)
	if err != nil {
		return nil, err
	}
	self := ic.Lc.Client.TokenID()
	var out []engine.ImportItem
	for _, uid := range slices.Sorted(maps.Keys(users)) {
		for _, tid := range slices.Sorted(maps.Keys(users[uid].Tokens)) {
			full := uid + "!" + tid
			if full == self {
				continue
			}
			r := &spec.Resource{Kind: spec.KindAPIToken, Name: tid, State: spec.Present, Params: spec.ParamsOf(map[string]string{"userid": uid, "tokenid": tid})}
			out = append(out, engine.ImportItem{R: r, Ids: []string{full}})
		}
	}
	return out, nil
}

// ImportPerms: tokens come with the users (GET /access/users?full=1).
func (tokenKind) ImportPerms(string) []engine.PermNeed {
	return userKind{}.ImportPerms("")
}

func (tokenKind) ImportDoc(ic *engine.ImportCtx, r *spec.Resource, lo *engine.LiveObj) (*engine.ImportedDoc, error) {
	uid, tid := tokenIDs(r)
	name := ic.DocName(spec.KindAPIToken, tid, strings.NewReplacer("@", "-", "!", "-").Replace(uid+"!"+tid))
	d := &engine.ImportedDoc{Kind: spec.KindAPIToken, Name: name}
	fields := ic.Fields(d, ic.Method("POST", tokenCreatePath), lo.Config, "token_"+uid+"_"+tid, func(k string) bool {
		cleared, setting := tokenFields[k]
		return !setting || (cleared != "" && lo.Config.Get(k) == cleared)
	}, importdoc.KeepSub)
	d.Spec = importdoc.WithFirst(fields, engine.Field{Key: "userid", Value: uid}, engine.Field{Key: "tokenid", Value: tid})
	d.Notes = append(d.Notes, "# PVE shows a token's secret only when it makes the token: a create from this",
		"# document makes a new secret (add secretFile: PATH to keep it).")
	return d, nil
}

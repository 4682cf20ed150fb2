package planner

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
	"github.com/pvectl/pvectl/pkg/spec"
)

// API tokens are imported with their settings. Their secret exists once,
// in the answer of the call that made it: it is not in the document, and
// a create from the document makes a new one. The token this import runs
// as is left out (destroying the specs would cut pvectl off).

// importLists: the users with their tokens.
func (tokenKind) importLists(lc *liveConn, _ string) []listRead { return []listRead{usersRead(lc)} }

func (tokenKind) importable(ctx context.Context, ic *importCtx, _ string) ([]importItem, error) {
	users, err := ic.lc.userList(ctx)
	if err != nil {
		return nil, err
	}
	self := ic.lc.client.TokenID()
	var out []importItem
	for _, uid := range slices.Sorted(maps.Keys(users)) {
		for _, tid := range slices.Sorted(maps.Keys(users[uid].Tokens)) {
			full := uid + "!" + tid
			if full == self {
				continue
			}
			r := &spec.Resource{Kind: spec.KindAPIToken, Name: tid, State: spec.Present, Params: spec.ParamsOf(map[string]string{"userid": uid, "tokenid": tid})}
			out = append(out, importItem{r: r, ids: []string{full}})
		}
	}
	return out, nil
}

// importPerms: tokens come with the users (GET /access/users?full=1).
func (tokenKind) importPerms(string) []permNeed {
	return userKind{}.importPerms("")
}

func (tokenKind) importDoc(ic *importCtx, r *spec.Resource, lo *liveObj) (*ImportedDoc, error) {
	uid, tid := tokenIDs(r)
	name := ic.docName(spec.KindAPIToken, tid, strings.NewReplacer("@", "-", "!", "-").Replace(uid+"!"+tid))
	d := &ImportedDoc{Kind: spec.KindAPIToken, Name: name}
	fields := ic.Fields(d, ic.method("POST", tokenCreatePath), lo.Config, "token_"+uid+"_"+tid, func(k string) bool {
		cleared, setting := tokenFields[k]
		return !setting || (cleared != "" && lo.Config.Get(k) == cleared)
	}, importdoc.KeepSub)
	d.Spec = importdoc.WithFirst(fields, Field{Key: "userid", Value: uid}, Field{Key: "tokenid", Value: tid})
	d.Notes = append(d.Notes, "# PVE shows a token's secret only when it makes the token: a create from this",
		"# document makes a new secret (add secretFile: PATH to keep it).")
	return d, nil
}
